"""The one module that knows where the data files (grammars/, signatures/) live.

In a source checkout they sit at the top of the repository; in an installed wheel they are
carried inside the package (hatchling force-include maps them to analyzer/_data/).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def data_root() -> Path:
    for candidate in (_PKG / "_data", _PKG.parent):
        if (candidate / "grammars").is_dir() and (candidate / "signatures").is_dir():
            return candidate
    raise FileNotFoundError("grammars/ and signatures/ not found next to the analyzer package")


def grammar_path(stem: str) -> Path:
    return data_root() / "grammars" / f"{stem}.lark"


def signatures_dir() -> Path:
    return data_root() / "signatures"


def report_schema_path() -> Path:
    return _PKG / "report" / "report.schema.json"
