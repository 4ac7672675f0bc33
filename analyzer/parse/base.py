"""What the scan stage hands to the parsers, and the contract every parser module meets.

A parser module `analyzer/parse/<stem>.py` (grammar `grammars/<stem>.lark`) ends with one
`PARSER`, a `Parser`: its stem, the kinds of file it reads (`source_kinds`, for `postmortem
parse auto`), its `triggers` (the line patterns that make a region worth its attention; the
scan stage compiles them, together with the signatures' patterns, into one multi-pattern
pass), `parse(region) -> list[Event]`, and `dump(text, file)`: the whole text as JSON-ready data
for `postmortem parse`. A parser whose files are read as a whole (a torchelastic error.json, a
saved gdb backtrace) also has `whole_file(text, file, rank, host) -> (events, problem)`. A region is the line that matched plus, for block triggers, the lines
that follow it (a whole traceback, a whole OOM-killer report). `parse/registry.py` lists the
stems in order of precedence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from analyzer.model import Event, EventKind, Location, SourceKind
from analyzer.model.serialize import event_data
from analyzer.parse.prefix import Prefix


@dataclass(frozen=True, slots=True)
class Trigger:
    """A line pattern (Python `re` syntax, searched in each line)."""

    pattern: str
    block: int = 0  # how many following lines to hand over with the matching line
    ignore_case: bool = False
    # a line this trigger matches within `continues` lines of its parser's previous trigger line
    # is part of what that line handed over (a traceback's next frame) and starts no region
    continues: int = 0


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


class Origin(TypedDict):
    rank: int | None
    host: str | None
    pid: int | None
    time_text: str | None


def origin(p: Prefix, region: Region) -> Origin:
    """Who printed a region and when, as its first line's prefixes say (else its file's path)."""
    return Origin(rank=p.rank_or(region.source_rank), host=p.host or region.source_host, pid=p.pid, time_text=p.time_text)


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


class Parser(Protocol):
    """The contract of one log family's parser (see the module docstring)."""

    @property
    def stem(self) -> str: ...

    @property
    def source_kinds(self) -> tuple[SourceKind, ...]: ...

    @property
    def triggers(self) -> tuple[Trigger, ...]: ...

    def parse(self, region: Region) -> list[Event]: ...

    def dump(self, text: str, file: str) -> dict[str, Any]: ...

    @property
    def whole_file(self) -> WholeFile | None: ...


# a whole file's text, its path, rank and host -> its events, and what was wrong with it (or None)
WholeFile = Callable[[str, str, int | None, str | None], tuple[list[Event], str | None]]


@dataclass(frozen=True, slots=True)
class GrammarParser:
    """A `Parser` made of a module's functions."""

    stem: str
    source_kinds: tuple[SourceKind, ...]
    triggers: tuple[Trigger, ...]
    parse_fn: Callable[[Region], list[Event]]
    dump_fn: Callable[[str, str], dict[str, Any]] | None = None
    whole_file: WholeFile | None = None

    def parse(self, region: Region) -> list[Event]:
        return self.parse_fn(region)

    def dump(self, text: str, file: str) -> dict[str, Any]:
        if self.dump_fn is not None:
            return self.dump_fn(text, file)
        return {"events": [event_data(e) for e in region_events(self, text, file)]}


def region_events(parser: Parser, text: str, file: str) -> list[Event]:
    """The events of a whole text through this parser alone (its triggers, then its regions). As
    in a run dir's analysis, a hit inside a block that the parser already read is left to it."""
    from analyzer.scan import Pattern, Scanner

    scanner = Scanner([Pattern(t.pattern, parser.stem, t.block, t.ignore_case) for t in parser.triggers])
    result = scanner.scan([text.encode("utf-8") + b"\n"])
    events: list[Event] = []
    covered = 0  # last line of the last block parsed
    for hit in result.hits:
        if hit.line_no <= covered:
            continue
        produced = parser.parse(Region(file, hit.line_no, tuple(hit.lines), parser.stem))
        covered = max([covered, *(e.end_line for e in produced if e.end_line)])
        events.extend(produced)
    return events
