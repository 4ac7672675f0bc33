"""Version skew across ranks and hosts: the NCCL, CUDA runtime and driver versions that each
process printed (NCCL's banner, cudaDriverVersion, ...) compared over the whole job.

A difference becomes one synthetic `version` event with `skew: true`, placed at the first line
that shows the minority value, so a signature can name it like any other evidence.
"""

from __future__ import annotations

from collections import defaultdict

from analyzer.correlate.order import ranges, sort_key
from analyzer.model import Event, EventKind

COMPONENTS = {
    "nccl_version": "NCCL",
    "cuda_version": "CUDA runtime (NCCL build)",
    "driver_version": "CUDA driver",
    "torch_version": "torch",
}


def _who(e: Event) -> tuple[str | None, int | None, int | None]:
    return (e.host, e.rank, e.pid)


def version_skew_events(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for field, name in COMPONENTS.items():
        seen: dict[str, list[Event]] = defaultdict(list)
        for e in events:
            value = e.fields.get(field)
            if isinstance(value, str | int) and str(value):
                seen[str(value)].append(e)
        if len(seen) < 2:
            continue
        # one process printing two values (a restart) is not skew: require distinct processes
        owners = {v: {_who(e) for e in es} for v, es in seen.items()}
        if len({w for ws in owners.values() for w in ws}) < 2:
            continue
        ordered = sorted(seen.items(), key=lambda kv: (len(owners[kv[0]]), kv[0]))
        minority_value, minority = ordered[0]
        first = sorted(minority, key=sort_key)[0]
        parts = []
        for value, es in sorted(seen.items()):
            ranks = sorted({e.rank for e in es if e.rank is not None})
            hosts = sorted({e.host for e in es if e.host})
            where = (
                f"ranks {ranges(ranks)}"
                if ranks
                else (f"hosts {', '.join(hosts[:6])}" if hosts else f"{len(es)} line{'s' if len(es) != 1 else ''}")
            )
            parts.append(f"{value} on {where}")
        message = f"{name} versions differ across the job: " + "; ".join(parts)
        out.append(
            Event(
                EventKind.VERSION,
                first.loc,
                first.text,
                message,
                rank=first.rank,
                host=first.host,
                pid=first.pid,
                time=first.time,
                time_text=first.time_text,
                fields={
                    "skew": True,
                    "component": name,
                    "versions": sorted(seen),
                    "minority": minority_value,
                    "source_kind": first.fields.get("source_kind"),
                },
            )
        )
    return out
