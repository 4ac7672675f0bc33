"""From the files of a run dir to events: scan each file once, parse what the scan marked.

Every problem with a file becomes a note on its `sources` entry and the analysis goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache

from analyzer.model import Event, EventKind, Location, SourceInfo, SourceKind, SourceStatus
from analyzer.parse.base import Parser, Region
from analyzer.parse.core_event import core_events
from analyzer.parse.prefix import Prefix, split_prefix
from analyzer.parse.registry import for_source, parsers, region_parser, triggers
from analyzer.scan import Pattern, Scanner
from analyzer.scan.scanner import Hit
from analyzer.sources.discover import SourceFile
from analyzer.sources.flight_recorder import read_dump
from analyzer.sources.reader import ReadProblem, iter_chunks, read_text_limited

SIGNATURE_OWNER = "signatures"
CONTEXT_OWNER = "context"
# lines that sound like a failure although no signature names them: they feed the classifier's
# text features and the timeline, at most CONTEXT_CAP per file
CONTEXT_PATTERN = (
    r"\b(?:[Ee]rror|ERROR|[Ff]ail(?:ed|ure)?|FAIL(?:ED)?|[Ff]atal|FATAL|[Ee]xception|[Kk]illed|[Aa]bort(?:ed|ing)?|"
    r"[Tt]erminat(?:ed|ing)|[Tt]imed out|[Tt]imeout|[Ss]egmentation fault|[Bb]us error|[Cc]ore dumped|Xid|NVRM|WARN)\b"
)
CONTEXT_CAP = 400
IDENTITY_OWNER = "identity"
# a worker's environment dump (`RANK=21`, `'LOCAL_RANK': '5'`): ties its local rank to the global one
IDENTITY_PATTERN = r"\b(?:RANK|LOCAL_RANK|GROUP_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)['\"]?\s*[=:]\s*['\"]?\d+"
_IDENTITY = re.compile(r"\b(RANK|LOCAL_RANK|GROUP_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)['\"]?\s*[=:]\s*['\"]?(\d+)")
IDENTITY_CAP = 2000
VERSIONS_OWNER = "versions"
# the versions an environment report prints (nvidia-smi's header, collect_env, ds_report, pip):
# what CUDA the driver supports and what CUDA torch was built for
VERSIONS_PATTERN = (
    r"CUDA Version: \d+\.\d+|Nvidia driver version: \d|"
    r"torch version \.+ \d|torch cuda version \.+ \d|PyTorch version: \d|CUDA used to build PyTorch: \d|"
    r"^torch(?:==|\s+)\d+\.\d+\S*\+cu\d+"
)
_VERSION_FIELDS = (
    (re.compile(r"CUDA Version: (\d+\.\d+)"), "driver_cuda"),
    (re.compile(r"Driver Version: (\d+(?:\.\d+)+)"), "driver_release"),
    (re.compile(r"Nvidia driver version: (\d+(?:\.\d+)+)"), "driver_release"),
    (re.compile(r"(?:torch version \.+|PyTorch version:|^torch==|^torch\s+)\s*(\d+\.\d+\S*)"), "torch_build"),
    (re.compile(r"(?:torch cuda version \.+|CUDA used to build PyTorch:)\s*(\d+\.\d+)"), "torch_cuda"),
)
OUTCOME_OWNER = "outcome"
# a launcher's own words for a job (or a node's worker group) that ended well: the event gets
# `outcome: succeeded`, which tells a finished job from one whose log merely stops
OUTCOME_PATTERN = (
    r"worker group successfully finished"  # torch.distributed.elastic agent (api.py, _invoke_run)
    r"|Process \d+ exits successfully"  # deepspeed/launcher/launch.py
)
WHOLE_FILE_LIMIT = 16 << 20


@dataclass
class Ingested:
    events: list[Event] = field(default_factory=list)
    sources: list[SourceInfo] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


_SCANNERS: dict[tuple[tuple[str, bool], ...], Scanner] = {}


def build_scanner(line_patterns: Iterable[tuple[str, bool]]) -> Scanner:
    """The scanner for the parsers' triggers plus these (regex, ignore_case) line patterns (the
    signatures'), built once per process for the same patterns."""
    key = tuple(line_patterns)
    if key not in _SCANNERS:
        _SCANNERS.clear()
        _SCANNERS[key] = _build_scanner(key)
    return _SCANNERS[key]


def _build_scanner(line_patterns: Iterable[tuple[str, bool]]) -> Scanner:
    patterns = [Pattern(t.pattern, stem, t.block, t.ignore_case) for stem, t in triggers()]
    seen: set[tuple[str, bool]] = set()
    for regex, icase in line_patterns:
        if (regex, icase) not in seen:
            seen.add((regex, icase))
            patterns.append(Pattern(regex, SIGNATURE_OWNER, 0, icase))
    patterns.append(Pattern(CONTEXT_PATTERN, CONTEXT_OWNER))
    patterns.append(Pattern(OUTCOME_PATTERN, OUTCOME_OWNER))
    patterns.append(Pattern(IDENTITY_PATTERN, IDENTITY_OWNER))
    patterns.append(Pattern(VERSIONS_PATTERN, VERSIONS_OWNER))
    return Scanner(patterns, caps={CONTEXT_OWNER: CONTEXT_CAP, IDENTITY_OWNER: IDENTITY_CAP})


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
        line_owner = bool({SIGNATURE_OWNER, CONTEXT_OWNER, OUTCOME_OWNER, IDENTITY_OWNER, VERSIONS_OWNER} & set(hit.owners))
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
            line_rank = p.rank if p.rank is not None else p.local_rank if p.local_rank is not None else rank
            fields: dict[str, object] = {} if SIGNATURE_OWNER in hit.owners else {"generic": True}
            if OUTCOME_OWNER in hit.owners:
                fields["outcome"] = "succeeded"
            if VERSIONS_OWNER in hit.owners:
                fields.update(version_fields(p.message))
            if set(hit.owners) <= {OUTCOME_OWNER, IDENTITY_OWNER, VERSIONS_OWNER}:
                fields["bookkeeping"] = True  # how the job ended, who is who: no failure's wording
            if IDENTITY_OWNER in hit.owners:
                for name, value in _IDENTITY.findall(p.message):
                    fields[f"env_{name.lower()}"] = int(value)
            parsed_here = [
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
        events.extend(_with_source_kind(_placed(ev, hit, rank), kind, keep=True) for ev in parsed_here)
    return events


def _with_source_kind(ev: Event, kind: SourceKind, keep: bool = False) -> Event:
    """The event with the kind of file it came from (`source_kind`); `keep`: unless it has one."""
    if keep and "source_kind" in ev.fields:
        return ev
    return replace(ev, fields={**ev.fields, "source_kind": str(kind)})


def _placed(ev: Event, hit: Hit, file_rank: int | None) -> Event:
    """The event with what its place in the file tells: torchrun's local rank (`tee_rank`, and
    PyTorch's `[rankN]:` stacked after it), the line it cites when that is a later line of its
    block (`quote`), and whether its process went on after a traceback (`caught`)."""
    extra: dict[str, object] = {}
    p = split_prefix(ev.text)
    if p.local_rank is not None:  # the global rank is found later (events/identity.py)
        extra["tee_rank"] = p.local_rank
        if p.rank is not None:
            extra["prefix_rank"] = p.rank
    if ev.kind is EventKind.TRACEBACK and ev.end_line and _went_on(hit, ev.end_line, file_rank):
        extra["caught"] = True  # its process printed on as before: the exception was handled
    at = (ev.loc.line or 0) - hit.line_no
    if 0 < at < len(hit.lines) and "quote" not in ev.fields:
        extra["quote"] = hit.lines[at]
    return replace(ev, fields={**ev.fields, **extra}) if extra else ev


# what a dying process or its launcher prints after a traceback (teardown: NCCL closing its
# connections, warnings, the launcher's records); any other line of the same process means the
# process went on
_NOT_GOING_ON = re.compile(
    CONTEXT_PATTERN + r"|Traceback|During handling|The above exception|^\s|^\^|torch[./]distributed|ChildFailedError|"
    r"(?:Error|Exception|Interrupt|Exit)\b|[Kk]ill|[Ss]ignal|[Ss]hutting|[Ee]xit|[Aa]bort|[Tt]erminat|"
    r"NCCL |[Ww]arning|^[IWEF]\d{4} |^\[[IWEF][\d ]|^=+$|^-+$"
)


def version_fields(message: str) -> dict[str, str]:
    """The versions a line of an environment report gives (torch's CUDA also from `+cu128`)."""
    out: dict[str, str] = {}
    for rx, name in _VERSION_FIELDS:
        m = rx.search(message.strip())
        if m:
            out.setdefault(name, m.group(1))
    build = out.get("torch_build", "")
    cu = re.search(r"\+cu(\d+)(\d)$", build)
    if cu and "torch_cuda" not in out:
        out["torch_cuda"] = f"{cu.group(1)}.{cu.group(2)}"
    return out


def _stream(p: Prefix, file_rank: int | None) -> tuple[str, int] | None:
    """Which process a line comes from, as far as its prefix (or its file) says."""
    if p.local_rank is not None:
        return ("local", p.local_rank)
    rank = p.rank if p.rank is not None else file_rank
    return None if rank is None else ("rank", rank)


def _went_on(hit: Hit, end_line: int, file_rank: int | None) -> bool:
    """The first line after a traceback (within its scanned block) from the same process is an
    ordinary line of output: the process survived the exception."""
    lines = hit.lines
    start = end_line - hit.line_no + 1
    if start <= 0 or start >= len(lines):
        return False
    key = _stream(split_prefix(lines[0]), file_rank)
    for line in lines[start:]:
        p = split_prefix(line)
        if key is not None and _stream(p, file_rank) != key:
            continue  # another process's line
        message = p.message.rstrip()
        if not message:
            continue
        return not _NOT_GOING_ON.search(message)
    return False


def ingest_text_file(src: SourceFile, scanner: Scanner, out: Ingested) -> None:
    try:
        result = scanner.scan(iter_chunks(src.path, src.compression, member=src.member))
        status, note = SourceStatus.PARSED, ""
    except ReadProblem as exc:
        result = None
        status, note = SourceStatus.ERROR, str(exc)
    if result is None:
        out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, status, note, src.rank, src.host))
        return
    notes = []
    if result.dropped:
        notes.append(f"{result.dropped} more interesting lines not parsed (limit reached)")
    if result.long_lines:
        notes.append(f"{result.long_lines} very long line{'s' if result.long_lines != 1 else ''} cut at 64 KiB")
    events = events_from_hits(result.hits, src.rel, src.rank, src.host, src.kind)
    out.events.extend(events)
    out.sources.append(SourceInfo(src.rel, src.kind, src.size, result.lines, status, "; ".join(notes), src.rank, src.host))


def ingest_whole_file(src: SourceFile, parser: Parser, out: Ingested) -> None:
    """A file its parser reads as a whole (a torchelastic error.json, a saved gdb backtrace)."""
    assert parser.whole_file is not None
    text, cut = read_text_limited(src.path, src.compression, WHOLE_FILE_LIMIT, member=src.member)
    events, problem = parser.whole_file(text, src.rel, src.rank, src.host)
    out.events.extend(_with_source_kind(ev, src.kind) for ev in events)
    status = SourceStatus.ERROR if problem else SourceStatus.PARSED
    note = problem or ("cut at 16 MiB" if cut else "")
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


def ingest(sources: list[SourceFile], scanner: Scanner, core_timeout: float = 60.0) -> Ingested:
    out = Ingested()
    for src in sources:
        if src.status in (SourceStatus.SKIPPED, SourceStatus.ERROR):
            note = src.note
            if src.status == SourceStatus.SKIPPED and _CORE_NAME.search(src.rel) and src.kind is SourceKind.OTHER:
                note = "named like a core dump but not an ELF core file"
                out.warnings.append(f"{src.rel}: {note}")
            out.sources.append(SourceInfo(src.rel, src.kind, src.size, None, src.status, note, src.rank, src.host))
            continue
        if src.kind is SourceKind.CORE_DUMP:
            ingest_core(src, out, core_timeout)
        elif src.kind is SourceKind.FLIGHT_RECORDER:
            ingest_flight_recorder(src, out)
        elif (parser := for_source(src.kind)) is not None and parser.whole_file is not None:
            ingest_whole_file(src, parser, out)
        else:
            ingest_text_file(src, scanner, out)
    return out


def events_from_text(text: str, scanner: Scanner, file: str = "<text>") -> list[Event]:
    """The events of a snippet, exactly as a file with this text would give them."""
    data = text.encode("utf-8")
    result = scanner.scan([data if data.endswith(b"\n") else data + b"\n"])
    return events_from_hits(result.hits, file, None, None, SourceKind.TRAINING_LOG)
