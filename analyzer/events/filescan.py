"""One text file of a run dir: scanned (whole, or in parts that `join` puts together), then
what the scan marked parsed into events, with the file's notes."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import cache

from analyzer.events.placement import (
    CONTEXT_OWNER,
    CUE_OWNER,
    EXCEPTION_LINE,
    IDENTITY_OWNER,
    IDENTITY_RE,
    OUTCOME_OWNER,
    SIGNATURE_OWNER,
    VERSIONS_OWNER,
    placed,
    version_fields,
)
from analyzer.model import Event, EventKind, Location, SourceInfo, SourceKind, SourceStatus
from analyzer.parse.base import Region
from analyzer.parse.prefix import split_prefix
from analyzer.parse.registry import parsers, region_parser
from analyzer.scan import Scanner
from analyzer.scan.scanner import MAX_REGIONS, Hit, ScanResult
from analyzer.sources.discover import SourceFile
from analyzer.sources.reader import ReadProblem, ReadStats, iter_chunks


@cache
def _owner_order() -> dict[str, int]:
    return {stem: i for i, stem in enumerate(parsers())}


def events_from_hits(hits: list[Hit], file: str, rank: int | None, host: str | None, kind: SourceKind) -> list[Event]:
    """Parse what the scan marked in one file; every event carries the source kind."""
    events: list[Event] = []
    order = _owner_order()
    covered: dict[str, int] = {}  # parser -> last line of the last block it parsed
    for hit in hits:
        owners = sorted((o for o in hit.owners if o in order and hit.line_no > covered.get(o, 0)), key=order.__getitem__)
        line_owner = bool(
            {SIGNATURE_OWNER, CONTEXT_OWNER, CUE_OWNER, OUTCOME_OWNER, IDENTITY_OWNER, VERSIONS_OWNER} & set(hit.owners)
        )
        if not owners and not line_owner:
            continue  # inside a block its parser already read
        parsed_here: list[Event] = []
        for owner in owners:
            region = Region(file, hit.line_no, tuple(hit.lines), owner, rank, host)
            try:
                produced = region_parser(owner)(region)
            except Exception as exc:  # a parser bug must not stop the analysis
                produced = [
                    Event(
                        EventKind.UNPARSED,
                        Location(file, hit.line_no),
                        hit.lines[0],
                        hit.lines[0].strip(),
                        rank=rank,
                        host=host,
                        fields={"note": f"{owner} parser failed: {type(exc).__name__}: {exc}"},
                    )
                ]
            if produced:
                parsed_here = produced
                ends = [ev.end_line for ev in produced if ev.end_line]
                if ends:
                    covered[owner] = max(covered.get(owner, 0), *ends)
                break
        only_unparsed = all(e.kind == EventKind.UNPARSED for e in parsed_here)
        if line_owner and only_unparsed:
            p = split_prefix(hit.lines[0])
            line_rank = p.rank_or(rank)
            fields: dict[str, object] = {} if SIGNATURE_OWNER in hit.owners else {"generic": True}
            if OUTCOME_OWNER in hit.owners:
                fields["outcome"] = "succeeded"
            if VERSIONS_OWNER in hit.owners:
                fields.update(version_fields(p.message))
            if set(hit.owners) <= {OUTCOME_OWNER, IDENTITY_OWNER, VERSIONS_OWNER}:
                fields["bookkeeping"] = True  # how the job ended, who is who: no failure's wording
            bare = EXCEPTION_LINE.match(p.message.strip()) if fields.get("generic") else None
            if bare and not any(hit.line_no <= last for last in covered.values()):
                fields["exception_type"], fields["exception_message"] = bare.group(1), bare.group(2)
            if IDENTITY_OWNER in hit.owners:
                for name, value in IDENTITY_RE.findall(p.message):
                    fields[f"env_{name.lower()}"] = int(value)
            # a traceback the log ends in is kept beside the line: it shows the failure
            parsed_here = [e for e in parsed_here if e.fields.get("cut_traceback")] + [
                Event(
                    EventKind.LINE,
                    Location(file, hit.line_no),
                    hit.lines[0],
                    p.message.strip(),
                    rank=line_rank,
                    host=p.host or host,
                    pid=p.pid,
                    time_text=p.time_text,
                    fields=fields,
                )
            ]
        events.extend(with_source_kind(placed(ev, hit, rank), kind, keep=True) for ev in parsed_here)
    return events


def with_source_kind(ev: Event, kind: SourceKind, keep: bool = False) -> Event:
    """The event with the kind of file it came from (`source_kind`); `keep`: unless it has one."""
    if keep and "source_kind" in ev.fields:
        return ev
    return replace(ev, fields={**ev.fields, "source_kind": str(kind)})


@dataclass
class FileResult:
    events: list[Event]
    info: SourceInfo
    bytes_read: int
    limit_hit: bool


def read_stats(per_file: bool) -> ReadStats:
    return ReadStats(limit_name="the size limit per file" if per_file else "the size limit for the whole run dir")


def scan_file(src: SourceFile, scanner: Scanner, limit: int, per_file: bool, deadline: float) -> FileResult:
    """Scan and parse one text file within `limit` content bytes and `deadline`."""
    stats = read_stats(per_file)
    if time.monotonic() > deadline:
        note = "not read: the time budget was spent"
        return FileResult(
            [], SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.SKIPPED, note, src.rank, src.host), 0, False
        )
    chunks = iter_chunks(
        src.path,
        src.compression,
        stats=stats,
        limit=limit,
        deadline=deadline,
        expect=src.file_id,
        follow=src.via_symlink,
        member=src.member,
    )
    try:
        result = scanner.scan(chunks)
    except ReadProblem as exc:
        info = SourceInfo(src.rel, src.kind, src.size, None, SourceStatus.ERROR, str(exc), src.rank, src.host)
        return FileResult([], info, stats.bytes, False)
    return finish(src, result, stats)


def finish(src: SourceFile, result: ScanResult, stats: ReadStats) -> FileResult:
    """The events of a scanned file and its entry in `sources`, with its notes."""
    notes = stats.notes()
    if result.dropped:
        notes.append(f"{result.dropped} more interesting lines not parsed (limit reached)")
    if result.not_examined:
        notes.append(
            f"{result.not_examined} line(s) after line {result.capped_at} not examined (the limit of "
            f"{MAX_REGIONS} interesting lines per file was reached)"
        )
    if result.long_lines:
        notes.append(f"{result.long_lines} very long line{'s' if result.long_lines != 1 else ''} cut at 64 KiB")
    events = events_from_hits(result.hits, src.rel, src.rank, src.host, src.kind)
    info = SourceInfo(src.rel, src.kind, src.size, result.lines, SourceStatus.PARSED, "; ".join(notes), src.rank, src.host)
    return FileResult(events, info, stats.bytes, bool(stats.limit_hit))
