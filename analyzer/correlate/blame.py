"""The rank a hang is blamed on, where the messages name it.

A collective timeout is reported by the ranks that waited, not by the one that never came. Some
messages name that one: the monitored barrier (`Rank 2 failed to pass monitoredBarrier`), NCCL's
`Mismatched collective detected ... at and around rank 39`, and PyTorch's desync check, which
prints `Rank X is running collective: ..., but Rank Y is running collective: ...` from every rank
pair: the rank named in every pair is the odd one out.

Where no message names it, the ranks that timed out name it by their silence: when every rank
but one reports a collective timeout, the one that did not is the one they waited for
(`stalled_rank`); torchrun's own "Root Cause" names the first rank that timed out there instead.
"""

from __future__ import annotations

import re
from collections import Counter

from analyzer.model import Category, Event, EventKind, Finding, Role

_BARRIER = re.compile(r"\bRank (\d+) failed to pass monitoredBarrier")
_AROUND = re.compile(r"at and around rank (\d+)")
_RUNNING = re.compile(r"\bRank (\d+) is running collective")


def blamed_rank(findings: list[Finding]) -> int | None:
    running: Counter[int] = Counter()
    messages = 0
    for f in findings:
        text = f.event.message
        m = _BARRIER.search(text) or _AROUND.search(text)
        if m:
            return int(m.group(1))
        ranks = [int(r) for r in _RUNNING.findall(text)]
        if len(ranks) >= 2:
            messages += 1
            running.update(set(ranks))
    if messages >= 2 and running:
        (top, count), *rest = running.most_common(2) + [(None, 0)]
        if top is not None and count == messages and (not rest or rest[0][1] < count):
            return top
    return None


_TERMINATED = (-15, -2, -9)  # SIGTERM (the agent's teardown), SIGINT, SIGKILL after the grace period


def stalled_rank(events: list[Event], findings: list[Finding]) -> tuple[int, str] | None:
    """The rank that never came to the collective the others timed out in: every known rank but
    one reported a timeout, and that one reported none (it was stopped later by the launcher's
    SIGTERM, or left no word). Returns the rank and why it is blamed."""
    behind = _behind_in_flight_recorder(events)
    if behind is not None:
        return behind
    timed_out = {  # (a rank that reported a collective mismatch reached the collective: no wait)
        f.event.rank
        for f in findings
        if f.category is Category.HANG
        and f.role is not Role.CONTEXT
        and f.event.rank is not None
        and f.subcategory != "hang.collective_mismatch"
    }
    if not timed_out:
        return None
    world = max((n for e in events if isinstance(n := e.fields.get("nranks"), int)), default=0)
    known = {e.rank for e in events if e.rank is not None and (not world or e.rank < world)}
    if world:
        known |= set(range(world))
    others = known - timed_out
    if len(others) != 1 or len(known) < 2:
        return None
    (rank,) = others
    failed_otherwise = any(
        f.event.rank == rank and f.role is not Role.CONTEXT and f.category not in (Category.HANG, Category.SCHEDULER)
        for f in findings
    )
    if failed_otherwise:
        return None
    stopped = any(
        e.rank == rank
        and e.kind in (EventKind.ELASTIC_FAILURE, EventKind.SIGNAL, EventKind.LAUNCHER_EXIT)
        and (e.fields.get("exitcode") in _TERMINATED or e.fields.get("signal") in ("SIGTERM", "SIGINT", "SIGKILL"))
        for e in events
    )
    how = "stopped later by the launcher" if stopped else "left no error"
    return rank, f"every other rank timed out in a collective; rank {rank} never reported a timeout ({how})"


def _behind_in_flight_recorder(events: list[Event]) -> tuple[int, str] | None:
    """With flight-recorder dumps of two or more ranks: the one rank whose last collective on the
    default process group (the lowest group id) is behind every other rank's."""
    last: dict[int, int] = {}
    groups = {str(e.fields["fr_group"]) for e in events if "fr_group" in e.fields}
    if not groups:
        return None
    default = min(groups, key=lambda g: (len(g), g))
    for e in events:
        seq = e.fields.get("fr_last_seq")
        if e.rank is not None and isinstance(seq, int) and str(e.fields.get("fr_group")) == default:
            last[e.rank] = max(seq, last.get(e.rank, -1))
    if len(last) < 2:
        return None
    low = min(last.values())
    laggards = [r for r, s in last.items() if s == low]
    if len(laggards) != 1 or low == max(last.values()):
        return None
    rank = laggards[0]
    return (
        rank,
        f"the flight recorder shows rank {rank} stopped at collective #{low} while the others went on to #{max(last.values())}",
    )
