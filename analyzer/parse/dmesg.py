"""Kernel logs (dmesg, dmesg -T, syslog / kern.log, journalctl): grammar grammars/dmesg.lark.

Events: EventKind.XID (NVRM Xid lines), OOM_KILL (one per OOM-killer report, the whole report
as one block), OOPS (a WARNING / BUG / Oops / panic / lockdep report with its frames and module
list), KERNEL (NVRM GPU lines, segfaults, traps, PCIe AER lines and every other line).

Fields that signatures and the correlate stage read: xid, pci (normalized `0000:3b:00`, the
form nccl.py gives NCCL's busId, so the two join), pid, process, killed_pid, constraint
("memcg" / "global"), anon_rss_kb, aer_severity, segfault_library, signal, record (what the line
is), uptime (dmesg seconds since boot, float). `time_text` is kept raw; the events stage turns
it into wall time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from analyzer.model import Event, EventKind, Frame, Location, SourceKind
from analyzer.model.serialize import event_head
from analyzer.parse._dmesg_blocks import KERNEL_WARNING, Oops, collect_oom, collect_oops, starts_oops
from analyzer.parse._dmesg_lines import LineRecord, parse_line
from analyzer.parse.base import GrammarParser, Region, Trigger

OOM_BLOCK = 300  # lines handed over after `invoked oom-killer` (the report with its task list)
OOPS_BLOCK = 150  # lines handed over after an oops header

_OOPS_TRIGGER = (
    r"(?:^|[\]:]\s?\s*)(?:" + KERNEL_WARNING + r"|BUG: |kernel BUG at |Oops: |Internal error: Oops|general protection fault: "
    r"|Unable to handle kernel |Kernel panic - not syncing|INFO: task \S+ blocked for more than"
    r"|rcu_\w+ (?:self-)?detected stall)"
)

TRIGGERS: tuple[Trigger, ...] = (
    Trigger(r"NVRM: Xid"),
    Trigger(r"NVRM: GPU (?:at )?(?:PCI:)?[0-9a-fA-F]{4}:"),
    Trigger(r" invoked oom-killer:", block=OOM_BLOCK),
    Trigger(r"oom-kill:constraint=", block=2),
    Trigger(r"\bKill(?:ed)? process \d+ \(", block=1),
    Trigger(r"\]: segfault at "),
    Trigger(r"traps: \S+\[\d+\]"),
    Trigger(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: (?:AER: |PCIe Bus Error)"),
    Trigger(_OOPS_TRIGGER, block=OOPS_BLOCK),
)


def _groups(records: Sequence[LineRecord], lines: Sequence[str]) -> Iterator[tuple[str, int, int, Any]]:
    """(group kind, first index, last index, payload) for every record, in order."""
    i = 0
    while i < len(records):
        rec = records[i]
        if rec.kind in ("oom_invoked", "oom_kill", "killed"):
            end, fields = collect_oom(records, i)
            yield "oom", i, end, fields
        elif starts_oops(rec):
            oops = collect_oops(records, lines, i)
            end = oops.end
            yield "oops", i, end, oops
        else:
            end = i
            yield "line", i, i, None
        i = end + 1


def _base_fields(rec: LineRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"record": rec.kind}
    if rec.stamps.uptime is not None:
        out["uptime"] = rec.stamps.uptime
    if rec.stamps.time_format:
        out["time_format"] = rec.stamps.time_format
    return out


def _event(
    kind: EventKind,
    rec: LineRecord,
    raw: str,
    loc: Location,
    region: Region | None,
    fields: dict[str, Any],
    pid: int | None = None,
    end_line: int | None = None,
) -> Event:
    return Event(
        kind=kind,
        loc=loc,
        text=raw,
        message=rec.message,
        rank=region.source_rank if region else None,
        host=rec.stamps.host or (region.source_host if region else None),
        pid=pid,
        time_text=rec.stamps.time_text,
        fields=fields,
        end_line=end_line,
    )


def _events(
    records: Sequence[LineRecord],
    lines: Sequence[str],
    file: str,
    first_line: int,
    region: Region | None,
    only_first: bool = False,
) -> tuple[list[Event], list[Oops]]:
    events: list[Event] = []
    oopses: list[Oops] = []
    for group, start, end, payload in _groups(records, lines):
        rec = records[start]
        loc = Location(file, first_line + start)
        last = first_line + end if end > start else None
        if group == "oom":
            fields: dict[str, Any] = dict(payload)
            kill_index = fields.pop("killed_line_index", None)
            kill_rec = records[kill_index] if isinstance(kill_index, int) else rec
            fields = _base_fields(kill_rec) | fields | {"record": "oom_kill"}
            if isinstance(kill_index, int):
                fields["killed_line"] = first_line + kill_index
            killed = fields.get("killed_pid")
            ev = _event(
                EventKind.OOM_KILL,
                kill_rec,
                lines[start],
                loc,
                region,
                fields,
                pid=killed if isinstance(killed, int) else None,
                end_line=last,
            )
            ev = Event(**{**_as_kwargs(ev), "message": kill_rec.message, "time_text": kill_rec.stamps.time_text})
        elif group == "oops":
            oops: Oops = payload
            oopses.append(oops)
            fields = _base_fields(rec) | _oops_fields(oops)
            ev = _event(EventKind.OOPS, rec, lines[start], loc, region, fields, pid=oops.pid, end_line=last)
            ev = Event(**{**_as_kwargs(ev), "message": oops.title})
        else:
            fields = _base_fields(rec) | rec.fields
            kind = EventKind.XID if rec.kind == "xid" else EventKind.KERNEL
            pid = rec.fields.get("pid")
            ev = _event(kind, rec, lines[start], loc, region, fields, pid=pid if isinstance(pid, int) else None)
        events.append(ev)
        if only_first:
            break
    return events, oopses


def _as_kwargs(ev: Event) -> dict[str, Any]:
    return {name: getattr(ev, name) for name in Event.__slots__}


def _oops_fields(oops: Oops) -> dict[str, Any]:
    return {
        "record": "oops",
        "oops_kind": oops.kind,
        "title": oops.title,
        "frames": tuple(f.to_frame() for f in oops.frames),
        "frame_offsets": tuple(f.offset for f in oops.frames),
        "modules": tuple(oops.modules),
        "process": oops.process,
        "tainted": oops.tainted,
        "kernel_version": oops.kernel,
    }


def parse_region(region: Region) -> list[Event]:
    """The record that starts at the region's first line (with the block that follows it)."""
    if not region.lines:
        return []
    records = [parse_line(line) for line in region.lines]
    events, _ = _events(records, region.lines, region.file, region.start, region, only_first=True)
    return events


def parse_lines(lines: Sequence[str], file: str = "<text>") -> tuple[list[Event], list[Oops]]:
    """Every record of a whole kernel log (for `postmortem parse dmesg` and the tests)."""
    records = [parse_line(line) for line in lines]
    return _events(records, lines, file, 1, None)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Frame):
        return {k: v for k, v in asdict(value).items() if v is not None}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def parse_text(text: str) -> dict[str, Any]:
    """`postmortem parse dmesg FILE`: {"events": [...], "oopses": [...]}, JSON-ready."""
    lines = text.splitlines()
    events, oopses = parse_lines(lines)
    out_events = []
    for ev in events:
        row: dict[str, Any] = event_head(ev)
        row.update({k: _jsonable(v) for k, v in ev.fields.items() if k not in ("frames", "frame_offsets")})
        if ev.end_line:
            row["end_line"] = ev.end_line
        out_events.append(row)
    out_oopses = [
        {
            "line": oops.start + 1,
            "end_line": oops.end + 1,
            "kind": oops.kind,
            "title": oops.title,
            "process": oops.process,
            "pid": oops.pid,
            "frames": [
                {"function": f.function, "reliable": f.reliable, "offset": f.offset, "module": f.module, "address": f.address}
                for f in oops.frames
            ],
            "modules": list(oops.modules),
        }
        for oops in oopses
    ]
    return {"events": out_events, "oopses": out_oopses}


PARSER = GrammarParser("dmesg", (SourceKind.KERNEL_LOG,), tuple(TRIGGERS), parse_region, lambda text, file: parse_text(text))
