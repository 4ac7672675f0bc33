"""From the files of a run dir to events: scan each file once, parse what the scan marked.

Every problem with a file becomes a note on its `sources` entry and the analysis goes on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from analyzer.events.filescan import FileResult, events_from_hits, scan_file, with_source_kind
from analyzer.events.parallel import read_ahead, scanned, workers_for
from analyzer.events.placement import (  # noqa: F401  (CONTEXT_PATTERN and the owners are part of this module's interface)
    CONTEXT_CAP,
    CONTEXT_OWNER,
    CONTEXT_PATTERN,
    CUE_OWNER,
    IDENTITY_CAP,
    IDENTITY_OWNER,
    IDENTITY_PATTERN,
    IDENTITY_RE,
    OUTCOME_OWNER,
    OUTCOME_PATTERN,
    SIGNATURE_OWNER,
    VERSIONS_OWNER,
    VERSIONS_PATTERN,
    placed,
    version_fields,
)
from analyzer.model import Event, EventKind, Location, SourceInfo, SourceKind, SourceStatus
from analyzer.parse.base import Parser
from analyzer.parse.core_event import core_events
from analyzer.parse.registry import for_source, triggers
from analyzer.scan import Pattern, Scanner
from analyzer.sources.discover import SourceFile
from analyzer.sources.flight_recorder import read_dump
from analyzer.sources.reader import read_text_limited

WHOLE_FILE_LIMIT = 16 << 20
GDB_TEXT_LIMIT = 4 << 20  # a saved backtrace; more is a flood of frames, parsed in quadratic-ish time


@dataclass
class Limits:
    """Bounds on one analysis; each one hit becomes a note on the files it left out."""

    file_bytes: int = 2 << 30  # content (decompressed) bytes read per file
    total_bytes: int = 32 << 30  # content bytes read from the whole run dir
    time_budget: float = 900.0  # seconds for the whole reading of the run dir
    core_budget: float = 300.0  # seconds for all cores together (each also has its own timeout)


@dataclass
class _Budget:
    limits: Limits
    start: float = field(default_factory=time.monotonic)
    bytes_left: int = 0
    core_seconds_left: float = 0.0

    def __post_init__(self) -> None:
        self.bytes_left = self.limits.total_bytes
        self.core_seconds_left = self.limits.core_budget

    @property
    def deadline(self) -> float:
        return self.start + self.limits.time_budget

    def file_limit(self) -> int:
        return max(0, min(self.limits.file_bytes, self.bytes_left))


@dataclass
class Ingested:
    events: list[Event] = field(default_factory=list)
    sources: list[SourceInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_SCANNERS: dict[tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]], Scanner] = {}


def build_scanner(line_patterns: Iterable[tuple[str, bool]], cue_patterns: Iterable[tuple[str, bool]] = ()) -> Scanner:
    """The scanner for the parsers' triggers plus these (regex, ignore_case) line patterns (the
    signatures') and cue patterns (words that report a failure by themselves, kept like the
    failure-sounding context: at most CONTEXT_CAP lines a file), built once per process for the
    same patterns."""
    key = (tuple(line_patterns), tuple(cue_patterns))
    if key not in _SCANNERS:
        _SCANNERS.clear()
        _SCANNERS[key] = _build_scanner(*key)
    return _SCANNERS[key]


def _build_scanner(line_patterns: Iterable[tuple[str, bool]], cue_patterns: Iterable[tuple[str, bool]] = ()) -> Scanner:
    patterns = [Pattern(t.pattern, stem, t.block, t.ignore_case, t.continues) for stem, t in triggers()]
    seen: set[tuple[str, bool]] = set()
    for regex, icase in line_patterns:
        if (regex, icase) not in seen:
            seen.add((regex, icase))
            patterns.append(Pattern(regex, SIGNATURE_OWNER, 0, icase))
    patterns.extend(Pattern(regex, CUE_OWNER, 0, icase) for regex, icase in dict.fromkeys(cue_patterns))
    patterns.append(Pattern(CONTEXT_PATTERN, CONTEXT_OWNER))
    patterns.append(Pattern(OUTCOME_PATTERN, OUTCOME_OWNER))
    patterns.append(Pattern(IDENTITY_PATTERN, IDENTITY_OWNER))
    patterns.append(Pattern(VERSIONS_PATTERN, VERSIONS_OWNER))
    return Scanner(patterns, caps={CONTEXT_OWNER: CONTEXT_CAP, CUE_OWNER: CONTEXT_CAP, IDENTITY_OWNER: IDENTITY_CAP})


def ingest_text_file(src: SourceFile, scanner: Scanner, out: Ingested, budget: _Budget | None = None) -> None:
    budget = budget or _Budget(Limits())
    limit = budget.file_limit()
    r = scan_file(src, scanner, limit, limit >= budget.limits.file_bytes, budget.deadline)
    _take(r, out, budget)


def _take(r: FileResult, out: Ingested, budget: _Budget) -> None:
    budget.bytes_left -= r.bytes_read
    out.events.extend(r.events)
    out.sources.append(r.info)


def ingest_whole_file(src: SourceFile, parser: Parser, out: Ingested) -> None:
    """A file its parser reads as a whole (a torchelastic error.json, a saved gdb backtrace),
    within a size limit (a saved backtrace: less, its parsing is not linear)."""
    assert parser.whole_file is not None
    limit = GDB_TEXT_LIMIT if src.kind is SourceKind.GDB_BACKTRACE else WHOLE_FILE_LIMIT
    text, cut = read_text_limited(src.path, src.compression, limit, expect=src.file_id, follow=src.via_symlink, member=src.member)
    events, problem = parser.whole_file(text, src.rel, src.rank, src.host)
    out.events.extend(with_source_kind(ev, src.kind) for ev in events)
    status = SourceStatus.ERROR if problem else SourceStatus.PARSED
    note = problem or (f"cut at {limit >> 20} MiB" if cut else "")
    out.sources.append(SourceInfo(src.rel, src.kind, src.size, text.count("\n") + 1, status, note, src.rank, src.host))


def ingest_flight_recorder(src: SourceFile, out: Ingested) -> None:
    """One event per process group of a flight-recorder dump: the last collective this rank
    enqueued there (read as plain data, never unpickled into objects)."""
    try:
        dump = read_dump(src.path, src.rel)
    except (OSError, ValueError) as exc:
        out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.ERROR, str(exc), src.rank, src.host))
        return
    rank = dump.rank if dump.rank is not None else src.rank
    for group in sorted(dump.last_seq):
        entry = dump.last_entry[group]
        op, state = str(entry.get("profiling_name", "")), str(entry.get("state", ""))
        message = f"flight recorder: rank {rank}, process group {group}: last collective #{dump.last_seq[group]} {op} ({state})"
        fields = {
            "fr_group": group,
            "fr_last_seq": dump.last_seq[group],
            "fr_op": op,
            "fr_state": state,
            "bookkeeping": True,
            "source_kind": str(src.kind),
        }
        out.events.append(
            Event(EventKind.LINE, Location(src.rel, None), message, message, rank=rank, host=src.host, fields=fields)
        )
    out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.PARSED, "", src.rank, src.host))


def ingest_core(src: SourceFile, out: Ingested, core_timeout: float) -> None:
    try:
        from analyzer.sources import coredump
    except ImportError:
        out.sources.append(
            SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.SKIPPED, "core analysis not available", src.rank, src.host)
        )
        return
    try:
        info = coredump.analyze_core(src.path, timeout=core_timeout)
    except Exception as exc:  # CoreError and anything gdb did
        out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.ERROR, str(exc), src.rank, src.host))
        out.warnings.append(f"{src.rel}: core not analyzed: {exc}")
        return
    events = core_events(info, src.rel)
    events = [
        replace(
            e,
            rank=e.rank if e.rank is not None else src.rank,
            host=e.host or src.host,
            fields={**e.fields, "source_kind": str(src.kind)},
        )
        for e in events
    ]
    out.events.extend(events)
    note = info.warnings[0] if info.notes_only and info.warnings else ""
    out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.PARSED, note, src.rank, src.host))


_CORE_NAME = re.compile(r"(?:^|/)core(?:[._-][\w.-]*)?$")


def ingest(
    sources: list[SourceFile],
    scanner: Scanner,
    core_timeout: float = 60.0,
    limits: Limits | None = None,
    workers: int | None = None,
) -> Ingested:
    """Every file's events and notes, in the order of `sources`. Text files are scanned in
    `workers` processes when the run dir is big enough (see `workers_for`); the results are
    merged in order and are the same as one process gives."""
    out = Ingested()
    budget = _Budget(limits or Limits())
    n = workers_for(sources, workers)
    with read_ahead(sources, scanner, n, budget.limits.file_bytes, budget.deadline) as ahead:
        _ingest_all(sources, scanner, core_timeout, budget, out, ahead)
    return out


def _ingest_all(
    sources: list[SourceFile],
    scanner: Scanner,
    core_timeout: float,
    budget: _Budget,
    out: Ingested,
    ahead: Iterator[FileResult] | None,
) -> None:
    for src in sources:
        # a text file read ahead by a worker: its result is taken in this order, as one process
        # would have read it (read again here only when the run dir's size limit cuts it)
        early = next(ahead) if ahead is not None and scanned(src) else None
        if src.status in (SourceStatus.SKIPPED, SourceStatus.ERROR):
            note = src.note
            if src.status == SourceStatus.SKIPPED and _CORE_NAME.search(src.rel) and src.kind is SourceKind.OTHER:
                note = "named like a core dump but not an ELF core file"
                out.warnings.append(f"{src.rel}: {note}")
            out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, src.status, note, src.rank, src.host))
            continue
        left = budget.deadline - time.monotonic()
        if (left <= 0 and early is None) or budget.bytes_left <= 0:
            why = "the time budget" if budget.bytes_left > 0 else "the size limit for the whole run dir"
            out.sources.append(
                SourceInfo(
                    src.rel, src.kind, src.size, None, SourceStatus.SKIPPED, f"not read: {why} was spent", src.rank, src.host
                )
            )
            continue
        if early is not None:
            fits = budget.bytes_left >= budget.limits.file_bytes or (
                early.bytes_read <= budget.bytes_left and not early.limit_hit
            )
            if fits:
                _take(early, out, budget)
            else:
                ingest_text_file(src, scanner, out, budget)
        elif src.kind is SourceKind.CORE_DUMP:
            allowed = min(core_timeout, budget.core_seconds_left, left)
            if allowed < 1.0:
                note = f"not analyzed: the time budget for cores ({budget.limits.core_budget:g} s) was spent"
                out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.SKIPPED, note, src.rank, src.host))
                out.warnings.append(f"{src.rel}: core {note}")
                continue
            began = time.monotonic()
            ingest_core(src, out, allowed)
            budget.core_seconds_left -= time.monotonic() - began
        elif src.kind is SourceKind.FLIGHT_RECORDER:
            ingest_flight_recorder(src, out)
        elif (parser := for_source(src.kind)) is not None and parser.whole_file is not None:
            ingest_whole_file(src, parser, out)
        else:
            ingest_text_file(src, scanner, out, budget)


def events_from_text(text: str, scanner: Scanner, file: str = "<text>") -> list[Event]:
    """The events of a snippet, exactly as a file with this text would give them."""
    data = text.encode("utf-8")
    result = scanner.scan([data if data.endswith(b"\n") else data + b"\n"])
    return events_from_hits(result.hits, file, None, None, SourceKind.TRAINING_LOG)
