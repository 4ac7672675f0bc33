"""Fast prefilter: one multi-pattern pass over each file finds the lines worth parsing."""

from analyzer.scan.scanner import Pattern, Scanner, ScanResult

__all__ = ["Pattern", "Scanner", "ScanResult"]
