"""NCCL_DEBUG output and PyTorch's NCCL messages: grammar grammars/nccl.lark.

Events: EventKind.VERSION (the `NCCL version` banner, `cudaDriverVersion`), WATCHDOG
(ProcessGroupNCCL's watchdog: collective timeouts, failed operations, heartbeat monitor) and
NCCL (every other NCCL line: init, channels and transports, WARN lines, error codes).

Fields: nccl_level, nccl_host, nccl_pid, nccl_tid, cuda_dev, rank, nranks, bus_id (normalized
`0000:3b:00`, the form dmesg.py gives NVRM's PCI ids, so a rank joins its GPU's Xid), transport,
nccl_version, cuda_version, driver_version, error_code, seq_num, op_type, timeout_ms, ran_for_ms,
src_file, src_line, shm_path, shm_size. Malformed lines never raise: they become plain NCCL events.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache, lru_cache
from typing import Any

from lark import Lark
from lark.exceptions import LarkError

from analyzer.model import Event, EventKind, Location, SourceKind
from analyzer.model.serialize import event_head
from analyzer.parse._lark import load_parser
from analyzer.parse._nccl_transform import ERROR_CODES, NcclTransformer, head_fields, normalize_bus_id
from analyzer.parse.base import GrammarParser, Region, Trigger
from analyzer.parse.prefix import split_prefix

__all__ = ["ERROR_CODES", "TRIGGERS", "normalize_bus_id", "parse_line", "parse_region", "parse_text"]

MAX_LINE = 65536

_WATCHDOG = re.compile(
    r"Watchdog caught|Heartbeat monitor timed out|watchdog got stuck|Some NCCL operations have"
    r"|taking the entire process down|detected by watchdog at work|Timeout at NCCL work"
    r"|watchdog thread terminated|raised the following async exception"
)

TRIGGERS: tuple[Trigger, ...] = (
    Trigger(r"NCCL (?:INFO|WARN|TRACE|ABORT) "),
    Trigger(r"NCCL version \d"),
    Trigger(r"NCCL error"),
    Trigger(r"\bnccl(?:UnhandledCuda|System|Internal|Remote)Error\b|\bncclInvalid(?:Usage|Argument)\b"),
    Trigger(r"^\s*Last error:", block=1),
    Trigger(_WATCHDOG.pattern),
)


@cache
def _parser(start: str) -> Lark:
    return load_parser("nccl", start=start)


_TRANSFORMER = NcclTransformer()
_TORCH_IN_TEXT = re.compile(r"\[rank\d+\]:|\[[EWIF](?:\d{3,4})? ")
_HEAD_IN_TEXT = re.compile(r"[\w.-]+:\d+:\d+ \[\d+\] (?:[\w.\/-]+:\d+ )?NCCL ")


def _rule(message: str) -> str:
    if _WATCHDOG.search(message):
        return "watchdog_line"
    if "NCCL error" in message:
        return "nccl_error_line"
    if message.lstrip().startswith("Last error:"):
        return "last_error_line"
    if re.search(r"nccl[A-Z]\w*:", message) and "NCCL INFO" not in message and "NCCL WARN" not in message:
        return "nccl_code_line"
    return "nccl_line"


# The two shapes that make up most of an NCCL_DEBUG=INFO log, read without the grammar (it costs
# about a third of a millisecond a line, and a 64-rank job prints thousands of them); both give
# exactly what the grammar gives (tests/parse/test_nccl.py holds them to it on every corpus line):
# a line `[host:pid:tid [dev] ]NCCL LEVEL body` whose body repeats across ranks (the grammar's
# result for `NCCL LEVEL body` is kept), and a channel line, whose body names ranks.
_PLAIN = re.compile(r"(?:([\w.-]+:\d+:\d+ \[\d+\]) )?(NCCL (?:INFO|WARN|TRACE|ABORT) \S.*)")
_CHANNEL = re.compile(
    r"NCCL (INFO|WARN|TRACE|ABORT) Channel (\d+(?:/\d+)?) : +(\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\]"
    r"(?: \[(send|receive)\])? via (\S+)"
)


def _channel(m: re.Match[str]) -> tuple[EventKind, dict[str, Any]]:
    level, chan, src, dst, direction, transport = m.groups()
    fields = {"nccl_level": level, "channel": chan, "peer_from": int(src), "peer_to": int(dst), "transport": transport}
    return EventKind.NCCL, {**fields, "direction": direction} if direction else fields


@lru_cache(maxsize=4096)
def _body(text: str) -> tuple[EventKind, dict[str, Any]] | None:
    """The grammar's reading of `NCCL LEVEL body` (None where it does not parse)."""
    try:
        return _TRANSFORMER.transform(_parser("nccl_line").parse(text))  # type: ignore[no-any-return]
    except LarkError:
        return None


def _quick(message: str) -> tuple[EventKind, dict[str, Any]] | None:
    """The grammar's reading of a plain NCCL_DEBUG line, from its head and its body (a channel
    line read by its pattern, any other body parsed once and kept)."""
    m = _PLAIN.fullmatch(message)
    if m is None:
        return None
    channel = _CHANNEL.fullmatch(m.group(2))
    parsed = _channel(channel) if channel else _body(m.group(2))
    if parsed is None:
        return None
    kind, fields = parsed  # a copy: callers add to the fields, and a kept body is shared
    head = head_fields(m.group(1)) if m.group(1) else {}
    return kind, {**head, **{k: list(v) if isinstance(v, list) else v for k, v in fields.items()}}


def parse_line(line: str) -> tuple[EventKind, dict[str, Any], str, Any]:
    """(kind, fields, message, prefix) of one line; never raises."""
    prefix = split_prefix(line[:MAX_LINE].strip())
    message = prefix.message.strip()
    # a prefix split_prefix does not know (Ray's "(pid=123) ", a line number): start at what we know
    head = message[:512]  # bounded: these searches must stay linear on a 64 KiB line
    known = _HEAD_IN_TEXT.search(head) or _TORCH_IN_TEXT.search(head)
    if known and known.start() > 0:
        prefix = split_prefix(message[known.start() :])
        message = prefix.message.strip()
    rule = _rule(message)
    quick = _quick(message) if rule == "nccl_line" else None
    if quick is not None:
        kind, fields = quick
    else:
        try:
            kind, fields = _TRANSFORMER.transform(_parser(rule).parse(message))
        except LarkError:
            kind = EventKind.WATCHDOG if _WATCHDOG.search(message) else EventKind.NCCL
            fields = {"unparsed": True}
    if prefix.device is not None:
        fields.setdefault("cuda_dev", prefix.device)
    if prefix.host and "nccl_host" not in fields and prefix.pid is not None:
        fields["nccl_host"], fields["nccl_pid"] = prefix.host, prefix.pid
    level = re.search(r"NCCL (INFO|WARN|TRACE|ABORT)", line)
    if level:
        fields.setdefault("nccl_level", level.group(1))
    return kind, fields, message, prefix


def _event(line: str, file: str, line_no: int, region: Region | None) -> Event:
    kind, fields, message, prefix = parse_line(line)
    rank = fields.get("rank")
    if not isinstance(rank, int):
        rank = prefix.rank if prefix.rank is not None else region.source_rank if region else None
    return Event(
        kind=kind,
        loc=Location(file, line_no),
        text=line,
        message=message,
        rank=rank,
        host=fields.get("nccl_host") or prefix.host or (region.source_host if region else None),
        pid=fields.get("nccl_pid") or prefix.pid,
        time_text=prefix.time_text,
        fields=fields,
    )


def parse_region(region: Region) -> list[Event]:
    """The event of the region's first line; a `Last error:` line takes the next line as its text."""
    if not region.lines:
        return []
    event = _event(region.lines[0], region.file, region.start, region)
    if "last_error" in event.fields and not event.fields["last_error"] and len(region.lines) > 1:
        event = replace(event, fields={**event.fields, "last_error": region.lines[1].strip()})
    return [event]


def parse_text(text: str) -> dict[str, Any]:
    """`postmortem parse nccl FILE`: {"events": [...]} for every NCCL line, JSON-ready."""
    lines = text.splitlines()
    events = []
    for i, line in enumerate(lines):
        if not any(re.search(t.pattern, line) for t in TRIGGERS):
            continue
        ev = parse_region(Region("<text>", i + 1, tuple(lines[i : i + 2]), "nccl"))[0]
        events.append({**event_head(ev), **ev.fields})
    return {"events": events}


PARSER = GrammarParser("nccl", (SourceKind.NCCL_LOG,), tuple(TRIGGERS), parse_region, lambda text, file: parse_text(text))
