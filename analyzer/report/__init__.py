"""One renderer per format, behind one interface, looked up in a registry."""

from analyzer.report.registry import RENDERERS, render

__all__ = ["RENDERERS", "render"]
