"""Failure-lab scenarios: one module per failure family (see corpora/lab/README.md)."""
