"""`postmortem parse KIND FILE`: the parsed content of one file as plain JSON data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.parse.base import event_data
from analyzer.parse.registry import by_name, for_source
from analyzer.sources.discover import sniff
from analyzer.sources.reader import ReadProblem, compression_of, open_regular, read_head, read_text_limited

__all__ = ["dump_file", "event_dict"]

event_dict = event_data  # the one event serializer, under its former name


def dump_file(kind: str, path: Path) -> dict[str, Any]:
    """KIND: a parser's stem or alias, or `auto` (the parser of the sniffed kind of file)."""
    try:
        with open_regular(path, follow=True) as raw:  # a FIFO or device is refused, not waited on
            compression = compression_of(raw.read(8))
    except ReadProblem as exc:
        raise ValueError(f"{path}: {exc}") from exc
    text, _ = read_text_limited(path, compression)
    if kind == "auto":
        found = for_source(sniff(read_head(path), path.name))
        kind = found.stem if found is not None else "python_traceback"
        if kind == "python_traceback" and "Traceback (most recent call last)" not in text and 'File "' not in text:
            kind = "torchelastic"
    try:
        parser = by_name(kind)
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}, or its parser is not available") from None
    return parser.dump(text, path.name)
