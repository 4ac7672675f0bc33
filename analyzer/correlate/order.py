"""Ordering across ranks and hosts, the first failure, and the cascade that followed it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from analyzer.model import CascadeEntry, Event, Finding, Role, TimelineEntry


def sort_key(e: Event) -> tuple[float, int, str, str, int]:
    """Time first (unknown times last), then rank, host, file and line: stable and deterministic."""
    return (
        e.time if e.time is not None else float("inf"),
        e.rank if e.rank is not None else 1 << 30,
        e.host or "",
        e.loc.file,
        e.loc.line or 0,
    )


def finding_key(f: Finding) -> tuple[float, int, str, str, int]:
    return sort_key(f.event)


def ranges(ranks: Iterable[int]) -> str:
    """0,1,2,4,5,7 -> '0-2,4-5,7'."""
    values = sorted(set(ranks))
    if not values:
        return ""
    parts = []
    start = prev = values[0]
    for v in values[1:]:
        if v == prev + 1:
            prev = v
            continue
        parts.append(f"{start}-{prev}" if prev > start else f"{start}")
        start = prev = v
    parts.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ",".join(parts)


def cascade(root: Finding, findings: list[Finding], root_category: str) -> list[CascadeEntry]:
    """Symptoms that followed the root cause, one entry per kind of symptom, ranks collapsed.

    A finding belongs to the cascade when it is not the root cause's own category, or is a
    symptom, and did not happen before the root cause (when both times are known).
    """
    groups: dict[str, list[Finding]] = defaultdict(list)
    root_time = root.event.time
    for f in findings:
        if f is root or f.event is root.event:
            continue
        if f.role is Role.CONTEXT:
            continue
        same_rank = f.event.rank == root.event.rank or f.event.rank is None or root.event.rank is None
        same_place = same_rank and f.event.host == root.event.host
        if f.category == root_category and f.role is Role.ROOT_CAUSE and same_place:
            continue  # more evidence of the root cause itself, not a consequence
        if root_time is not None and f.event.time is not None and f.event.time < root_time - 1.0:
            continue
        groups[f.signature].append(f)
    entries = []
    cause = f"{root.signature} on rank {root.event.rank}" if root.event.rank is not None else root.signature
    for _sig, fs in groups.items():
        fs.sort(key=finding_key)
        ranks = tuple(sorted({f.event.rank for f in fs if f.event.rank is not None}))
        hosts = sorted({f.event.host for f in fs if f.event.host})
        first = fs[0]
        what = first.summary or first.title
        if len(ranks) > 1:
            what = f"{first.title} on ranks {ranges(ranks)}"
        elif len(fs) > 1:
            what = f"{first.title} ({len(fs)} times)"
        entries.append(
            CascadeEntry(
                ranks=ranks,
                host=hosts[0] if len(hosts) == 1 else (None if not hosts else ",".join(hosts[:4])),
                time=first.event.time,
                what=what,
                caused_by=cause,
                count=len(fs),
            )
        )
    entries.sort(key=lambda c: (c.time if c.time is not None else float("inf"), c.ranks[:1] or (1 << 30,), c.what))
    return entries


def timeline(events: list[Event], findings: list[Finding], limit: int = 200, also: Sequence[Event] = ()) -> list[TimelineEntry]:
    """The failing moments: every event a signature matched, plus launcher and kernel records
    and the events in `also` (the lines that show a failure no signature names)."""
    matched = {id(f.event): f for f in findings}
    extra = {id(e) for e in also}
    chosen = [
        e
        for e in events
        if id(e) in matched or id(e) in extra or str(e.kind) in ("elastic_failure", "signal", "oom_kill", "xid", "core")
    ]
    chosen.sort(key=sort_key)
    if len(chosen) > limit:
        chosen = chosen[: limit // 2] + chosen[-limit // 2 :]
    out: list[TimelineEntry] = []
    seen: set[tuple[object, ...]] = set()
    for e in chosen:
        f = matched.get(id(e))
        summary = f.summary if f else e.message
        entry = TimelineEntry(e.time, e.host, e.rank, f.signature if f else str(e.kind), summary[:300], e.loc.file, e.loc.line)
        # one line read twice (torchrun's summary, by its two section headers; an exception line
        # by its traceback and by the NCCL parser) is one moment
        key = (entry.time, entry.host, entry.rank, entry.summary, entry.file, entry.line)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out
