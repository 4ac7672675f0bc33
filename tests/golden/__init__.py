"""Golden reports of the bundled examples: terminal (100 and 80 columns), Markdown and HTML.

Regenerate after an intended change with `python -m tests.golden`, then review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FORMATS = {"text-100.txt": ("text", 100), "text-80.txt": ("text", 80), "md": ("markdown", None), "html": ("html", None)}


def examples() -> list[str]:
    return sorted(p.name for p in (REPO / "examples").iterdir() if p.is_dir())


@contextmanager
def _in_repo() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(REPO)  # the reports name the run dir as given: `examples/<name>`, no machine path
    try:
        yield
    finally:
        os.chdir(before)


def render_all(name: str) -> dict[str, str]:
    """Every golden file's expected content for one example, as rendered now."""
    from analyzer.pipeline import analyze
    from analyzer.report import render

    with _in_repo():
        report = analyze(Path("examples") / name)
    return {f"{name}.{suffix}": render(report, fmt, width=width) for suffix, (fmt, width) in FORMATS.items()}


def regenerate() -> list[Path]:
    written = []
    for name in examples():
        for file, text in render_all(name).items():
            path = HERE / file
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
