"""`postmortem parse KIND FILE`: the parsed content of one file as plain JSON data."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from analyzer.model import Event, SourceKind
from analyzer.parse import python_traceback
from analyzer.parse.base import Region
from analyzer.sources.discover import sniff
from analyzer.sources.reader import ReadProblem, compression_of, open_regular, read_head, read_text_limited

_BY_KIND = {
    SourceKind.KERNEL_LOG: "dmesg",
    SourceKind.NCCL_LOG: "nccl",
    SourceKind.GDB_BACKTRACE: "gdb",
    SourceKind.FAULTHANDLER: "faulthandler",
    SourceKind.ELASTIC_ERROR: "torchelastic",
    SourceKind.TRAINING_LOG: "python_traceback",
}


def event_dict(e: Event) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": str(e.kind),
        "line": e.loc.line,
        "time": e.time_text,
        "host": e.host,
        "rank": e.rank,
        "pid": e.pid,
        "message": e.message,
    }
    for k, v in e.fields.items():
        if k not in d and isinstance(v, str | int | float | bool | list | dict | type(None)):
            d[k] = v
    return d


def _region_events(module_name: str, text: str, file: str) -> list[Event]:
    module = importlib.import_module(f"analyzer.parse.{module_name}")
    from analyzer.scan import Pattern, Scanner

    scanner = Scanner([Pattern(t.pattern, module_name, t.block, t.ignore_case) for t in module.TRIGGERS])
    result = scanner.scan([text.encode("utf-8") + b"\n"])
    events: list[Event] = []
    for hit in result.hits:
        events.extend(module.parse_region(Region(file, hit.line_no, tuple(hit.lines), module_name)))
    return events


def dump_file(kind: str, path: Path) -> dict[str, Any]:
    try:
        with open_regular(path, follow=True) as raw:  # a FIFO or device is refused, not waited on
            compression = compression_of(raw.read(8))
    except ReadProblem as exc:
        raise ValueError(f"{path}: {exc}") from exc
    text, _ = read_text_limited(path, compression)
    if kind == "auto":
        head = read_head(path)
        kind = _BY_KIND.get(sniff(head, path.name), "python_traceback")
        if kind == "python_traceback" and "Traceback (most recent call last)" not in text and 'File "' not in text:
            kind = "torchelastic"
    if kind == "python_traceback":
        return {"tracebacks": [python_traceback.to_dict(tb) for tb in python_traceback.parse_text(text)]}
    if kind == "gdb":
        try:
            gdb = importlib.import_module("analyzer.parse.gdb_backtrace")
        except ImportError as exc:
            raise ValueError("the gdb backtrace parser is not available") from exc
        result: dict[str, Any] = gdb.to_dict(gdb.parse_text(text))
        return result
    if kind in ("nccl", "dmesg"):
        try:
            module = importlib.import_module(f"analyzer.parse.{kind}")
        except ImportError as exc:
            raise ValueError(f"the {kind} parser is not available") from exc
        parsed: dict[str, Any] = module.parse_text(text)
        return parsed
    if kind == "torchelastic" and text.lstrip().startswith("{"):
        from analyzer.parse.torchelastic import parse_error_json

        return {"events": [event_dict(e) for e in parse_error_json(text, path.name, None, None)]}
    if kind in ("torchelastic", "faulthandler"):
        return {"events": [event_dict(e) for e in _region_events(kind, text, path.name)]}
    raise ValueError(f"unknown kind {kind!r}")
