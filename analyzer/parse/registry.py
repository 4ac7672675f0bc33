"""The parsers that take part in the scan of log files, by grammar stem."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from types import ModuleType

from analyzer.model import Event
from analyzer.parse.base import Region, Trigger

# in order of precedence: when one line triggers several parsers, the first one parses it
LINE_PARSERS = ("python_traceback", "faulthandler", "torchelastic", "nccl", "dmesg", "gdb_backtrace")


@cache
def parsers() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for stem in LINE_PARSERS:
        try:
            module = importlib.import_module(f"analyzer.parse.{stem}")
        except ImportError:
            continue
        if hasattr(module, "TRIGGERS") and hasattr(module, "parse_region"):
            found[stem] = module
    return found


def triggers() -> list[tuple[str, Trigger]]:
    return [(stem, t) for stem, module in parsers().items() for t in module.TRIGGERS]


def region_parser(stem: str) -> Callable[[Region], list[Event]]:
    fn: Callable[[Region], list[Event]] = parsers()[stem].parse_region
    return fn
