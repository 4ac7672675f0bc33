"""Renderer registry: the `--format` choices come from here."""

from __future__ import annotations

from collections.abc import Callable

from analyzer.model import Report


def _json(report: Report, color: bool = False, **_: object) -> str:
    from analyzer.report.json_report import render_json

    return render_json(report)


def _text(report: Report, color: bool = False, width: int | None = None, verbose: bool = False, **_: object) -> str:
    from analyzer.report.terminal import render_text

    return render_text(report, color=color, width=width, verbose=verbose)


def _markdown(report: Report, color: bool = False, **_: object) -> str:
    from analyzer.report.markdown import render_markdown

    return render_markdown(report)


def _html(report: Report, color: bool = False, **_: object) -> str:
    from analyzer.report.html import render_html

    return render_html(report)


RENDERERS: dict[str, Callable[..., str]] = {"text": _text, "json": _json, "markdown": _markdown, "html": _html}


def render(report: Report, fmt: str, color: bool = False, width: int | None = None, verbose: bool = False) -> str:
    """`width` (columns; default the terminal's) and `verbose` (list everything) shape the text format."""
    return RENDERERS[fmt](report, color=color, width=width, verbose=verbose)
