"""Version skew across ranks and hosts: the NCCL, CUDA runtime and driver versions that each
process printed (NCCL's banner, cudaDriverVersion, ...) compared over the whole job.

A difference becomes one synthetic `version` event with `skew: true`, placed at the first line
that shows the minority value, so a signature can name it like any other evidence.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache

from analyzer.correlate.order import ranges, sort_key
from analyzer.model import Event, EventKind
from analyzer.paths import read_yaml, signatures_dir

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
            first.derived(
                EventKind.VERSION,
                message,
                {"skew": True, "component": name, "versions": sorted(seen), "minority": minority_value},
            )
        )
    return out


# --- a torch built for a newer CUDA than the driver supports ---------------------------------

_GAP_CRASH_CODES = (-11, -6, -7, 139, 134)  # SIGSEGV, SIGABRT, SIGBUS as a child's exit status


def version_key(text: str) -> tuple[int, ...]:
    """`2.18.3+cuda12.1` -> (2, 18, 3, 12): the first four numbers, to compare versions by."""
    return tuple(int(x) for x in re.findall(r"\d+", text)[:4])


@cache
def _minimum_driver() -> list[tuple[tuple[int, ...], str]]:
    data = read_yaml(signatures_dir() / "cuda_driver.yaml")
    table = [(version_key(str(driver)), str(cuda)) for cuda, driver in data["minimum_driver"].items()]
    return sorted(table, reverse=True)


def cuda_of_driver(driver: str) -> str | None:
    """The newest CUDA version a driver version (`530.30.02`) supports, from the table in
    signatures/cuda_driver.yaml."""
    key = version_key(driver)
    return next((cuda for minimum, cuda in _minimum_driver() if key >= minimum), None)


def _driver_cuda(e: Event) -> str | None:
    """The newest CUDA the driver supports, as this line gives it: nvidia-smi's `CUDA Version`,
    NCCL's `cudaDriverVersion`, or a driver release looked up in the table."""
    value = e.fields.get("driver_cuda")
    if isinstance(value, str):
        return value
    if isinstance(e.fields.get("cuda_driver_version"), int) and isinstance(e.fields.get("driver_version"), str):
        return str(e.fields["driver_version"])
    release = e.fields.get("driver_release")
    return cuda_of_driver(release) if isinstance(release, str) else None


def cuda_gap_events(events: list[Event]) -> list[Event]:
    """Where torch was built for a newer CUDA than some driver of the job supports and a rank then
    died of a native crash (SIGSEGV, -11): one `version` event (`cuda_gap: true`) at the line that
    gives torch's CUDA and one at the line that gives the driver's, each quoting both versions."""
    torch_lines = [e for e in events if isinstance(e.fields.get("torch_cuda"), str)]
    driver_lines = [e for e in events if _driver_cuda(e)]
    if not torch_lines or not driver_lines:
        return []
    crashes = sorted(
        (
            e
            for e in events
            if e.kind
            in (EventKind.LAUNCHER_EXIT, EventKind.SIGNAL, EventKind.ELASTIC_FAILURE, EventKind.CORE, EventKind.BACKTRACE)
            and (e.fields.get("exitcode") in _GAP_CRASH_CODES or e.fields.get("signal") in ("SIGSEGV", "SIGABRT"))
        ),
        key=sort_key,
    )
    crashed = bool(crashes)
    # an environment report names no rank: the versions are those the first crashed rank ran under
    crash = next((e for e in crashes if e.rank is not None), crashes[0] if crashes else None)
    torch_at = max(torch_lines, key=lambda e: version_key(e.fields["torch_cuda"]))
    driver_at = min(driver_lines, key=lambda e: version_key(_driver_cuda(e) or ""))
    built, supported = torch_at.fields["torch_cuda"], _driver_cuda(driver_at) or ""
    if version_key(built) <= version_key(supported):
        return []
    torch_name = torch_at.fields.get("torch_build") or "torch"
    driver_name = driver_at.fields.get("driver_release")
    message = (
        f"torch {torch_name} is built for CUDA {built}; the NVIDIA driver"
        + (f" {driver_name}" if driver_name else "")
        + f" supports CUDA {supported} at most"
    )
    out = []
    for at in (torch_at, driver_at):
        out.append(
            Event(
                EventKind.VERSION,
                at.loc,
                at.text,
                message,
                rank=at.rank if at.rank is not None or crash is None else crash.rank,
                host=at.host or (crash.host if crash is not None else None),
                pid=at.pid,
                time=at.time if at.time is not None or crash is None else crash.time,
                time_text=at.time_text,
                time_approx=at.time is None and crash is not None and crash.time is not None,
                fields={
                    "cuda_gap": True,
                    "crashed": crashed,
                    "torch_cuda": built,
                    "driver_cuda": supported,
                    "source_kind": at.fields.get("source_kind"),
                    **({"quote": at.fields["quote"]} if "quote" in at.fields else {}),
                },
            )
        )
    return out
