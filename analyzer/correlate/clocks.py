"""Per-host clock offsets, estimated where two hosts' sources describe the same moment.

The moment used is a process's death: the kernel log of the host it ran on says when the OOM
killer took pid P; the launcher (torchrun's summary, written on the host of its agent) says
when it saw pid P die. When both carry wall-clock times and their hosts differ, the difference
is the offset between the two clocks (plus the launcher's reaction time, about a second). An
offset beyond SKEW_S is corrected on every event of the kernel log's host and reported.
"""

from __future__ import annotations

from dataclasses import replace
from statistics import median

from analyzer.model import Event, EventKind

SKEW_S = 3.0


def align_clocks(events: list[Event]) -> tuple[list[Event], list[str]]:
    seen_by_launcher: dict[int, Event] = {}
    for e in events:
        if e.kind is EventKind.ELASTIC_FAILURE and e.pid is not None and e.time is not None and not e.time_approx:
            seen_by_launcher.setdefault(e.pid, e)
    if not seen_by_launcher:
        return events, []
    offsets: dict[str, list[float]] = {}
    reference: dict[str, str] = {}
    for e in events:
        pid = e.fields.get("killed_pid")
        if e.kind is not EventKind.OOM_KILL or not isinstance(pid, int) or e.time is None or e.time_approx or not e.host:
            continue
        seen = seen_by_launcher.get(pid)
        if seen is None or seen.time is None:
            continue
        launcher_host = seen.fields.get("launcher_host") or seen.host
        if launcher_host == e.host:
            continue
        offsets.setdefault(e.host, []).append(e.time - seen.time)
        reference[e.host] = str(launcher_host or "the launcher")
    warnings: list[str] = []
    shift: dict[str, float] = {}
    for host, values in offsets.items():
        off = median(values)
        if abs(off) > SKEW_S:
            shift[host] = off
            warnings.append(
                f"the clock of {host} is {off:+.1f} s off {reference[host]}'s (the same death seen in both); "
                f"its times are corrected"
            )
    if not shift:
        return events, warnings
    out = []
    for e in events:
        if e.host in shift and e.time is not None and e.kind is not EventKind.ELASTIC_FAILURE:
            fields = dict(e.fields)
            fields["clock_corrected_s"] = -shift[e.host]
            e = replace(e, time=e.time - shift[e.host], fields=fields)
        out.append(e)
    return out, warnings
