"""The parsers, by grammar stem: the one list that the scan stage, ingest and `postmortem parse`
read. Adding a log family is a grammar, a parser module ending with `PARSER`, its fixtures, and
its stem here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

from analyzer.model import Event, SourceKind
from analyzer.parse.base import Parser, Region, Trigger

# in order of precedence: when one line triggers several parsers, the first one parses it
LINE_PARSERS = ("python_traceback", "faulthandler", "torchelastic", "nccl", "dmesg", "gdb_backtrace", "cuda_p2p")
# other names `postmortem parse` accepts
ALIASES = {"traceback": "python_traceback", "python": "python_traceback", "gdb": "gdb_backtrace", "kernel": "dmesg"}


def names() -> tuple[str, ...]:
    """Every name of a parser (stems, then aliases), without importing any parser."""
    return (*LINE_PARSERS, *ALIASES)


@cache
def parsers() -> dict[str, Parser]:
    found: dict[str, Parser] = {}
    for stem in LINE_PARSERS:
        try:
            module = importlib.import_module(f"analyzer.parse.{stem}")
        except ImportError:
            continue
        parser: Parser | None = getattr(module, "PARSER", None)
        if parser is not None:
            found[stem] = parser
    return found


def by_name(name: str) -> Parser:
    """The parser of a stem or alias; KeyError when there is none (or it does not import)."""
    return parsers()[ALIASES.get(name, name)]


def for_source(kind: SourceKind) -> Parser | None:
    """The parser that reads files of this kind as a whole, if any."""
    return next((p for p in parsers().values() if kind in p.source_kinds), None)


def triggers() -> list[tuple[str, Trigger]]:
    return [(stem, t) for stem, p in parsers().items() for t in p.triggers]


def region_parser(stem: str) -> Callable[[Region], list[Event]]:
    return parsers()[stem].parse
