"""Loading of the Lark grammars, compiled once per process."""

from __future__ import annotations

from functools import cache
from typing import Any

from lark import Lark

from analyzer.paths import grammar_path


@cache
def load_parser(stem: str, start: str = "start", parser: str = "lalr", **options: Any) -> Lark:
    """The compiled parser of grammars/<stem>.lark."""
    text = grammar_path(stem).read_text(encoding="utf-8")
    return Lark(text, start=start, parser=parser, maybe_placeholders=False, **options)
