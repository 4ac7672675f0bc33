"""Normalisation of parsed events: wall-clock time, and rank/host filled from what other
events say about the same process (pid -> rank from launcher and NCCL lines)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from analyzer.events.clock import parse_time, year_of
from analyzer.model import Event


def run_year(events: list[Event]) -> int | None:
    years = Counter(y for e in events if (y := year_of(e.time_text)) is not None)
    return years.most_common(1)[0][0] if years else None


def normalize(events: list[Event]) -> list[Event]:
    year = run_year(events)
    out: list[Event] = []
    for e in events:
        if e.time is None and e.time_text:
            t, approx = parse_time(e.time_text, year)
            e = replace(e, time=t, time_approx=approx)
        out.append(e)
    return join_identities(out)


def join_identities(events: list[Event]) -> list[Event]:
    """Fill rank and host of events whose pid (or killed pid) another event ties to a rank."""
    by_pid: dict[int, tuple[int | None, str | None]] = {}
    for e in events:
        if e.pid is not None and e.rank is not None:
            by_pid.setdefault(e.pid, (e.rank, e.host))
    if not by_pid:
        return events
    out = []
    for e in events:
        pid = e.fields.get("killed_pid") or (e.pid if e.rank is None else None)
        if isinstance(pid, int) and pid in by_pid and e.rank is None:
            rank, host = by_pid[pid]
            fields = dict(e.fields)
            fields["rank_from"] = f"pid {pid}"
            e = replace(e, rank=rank, host=e.host or host, fields=fields)
        out.append(e)
    return out
