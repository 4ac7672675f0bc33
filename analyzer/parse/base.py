"""What the scan stage hands to the parsers, and what every parser module provides.

A parser module `analyzer/parse/<stem>.py` (grammar `grammars/<stem>.lark`) declares
`TRIGGERS`: the line patterns that make a region worth its attention (the scan stage compiles
them, together with the signatures' patterns, into one multi-pattern pass), and a function
`parse_region(region) -> list[Event]`. A region is the line that matched plus, for block
triggers, the lines that follow it (a whole traceback, a whole OOM-killer report).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.model import Event, EventKind, Location


@dataclass(frozen=True, slots=True)
class Trigger:
    """A line pattern (Python `re` syntax, searched in each line)."""

    pattern: str
    block: int = 0  # how many following lines to hand over with the matching line
    ignore_case: bool = False


@dataclass(frozen=True, slots=True)
class Region:
    """Lines of one file handed to one parser: `lines[0]` is line number `start` (1-based)."""

    file: str  # relative to the run dir
    start: int
    lines: tuple[str, ...]
    owner: str  # the parser stem that declared the trigger, or "signatures"
    source_rank: int | None = None  # rank inferred from the file's path, if any
    source_host: str | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def line_no(self, index: int) -> int:
        return self.start + index


def unparsed(region: Region, index: int = 0, note: str = "") -> Event:
    """A region (or one line of it) the grammar could not parse: kept, never dropped."""
    text = region.lines[index] if region.lines else ""
    return Event(
        kind=EventKind.UNPARSED,
        loc=Location(region.file, region.line_no(index)),
        text=text,
        message=text.strip(),
        rank=region.source_rank,
        host=region.source_host,
        fields={"note": note} if note else {},
    )
