"""correlate stage: one pass over the normalised events of the whole job, before signatures.

It aligns the hosts' clocks, adds the version-skew events, the torch-vs-driver CUDA gap and the
collectives that differ across ranks (`collectives`), and records what the later stages
ask of the job as a whole (one process or many, the ranks the launcher named as root causes).
The helpers in `order` and `blame` are pure functions over events and findings; the report
builder uses them to lay out the decision, they do not run the stage again.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.correlate.clocks import align_clocks
from analyzer.correlate.collectives import collective_mismatch_events
from analyzer.correlate.versions import cuda_gap_events, version_skew_events
from analyzer.model import Event, EventKind


@dataclass(frozen=True)
class Correlated:
    events: list[Event]
    notes: list[str]
    single_process: bool
    launcher_roots: frozenset[int]


def correlate(events: list[Event]) -> Correlated:
    aligned, notes = align_clocks(events)
    aligned = aligned + version_skew_events(aligned) + cuda_gap_events(aligned) + collective_mismatch_events(aligned)
    roots = frozenset(
        e.rank for e in aligned if e.kind is EventKind.ELASTIC_FAILURE and e.fields.get("root_cause") and e.rank is not None
    )
    return Correlated(aligned, notes, single_process(aligned), roots)


def single_process(events: list[Event]) -> bool:
    """No event names a rank, a world size above one, or a launcher's per-rank failure."""
    for e in events:
        if e.rank is not None or e.kind in (EventKind.ELASTIC_FAILURE, EventKind.WATCHDOG):
            return False
        nranks = e.fields.get("nranks")
        if isinstance(nranks, int) and nranks > 1:
            return False
        if e.fields.get("local_rank") is not None:
            return False
    return True
