"""Normalisation of parsed events: wall-clock time, and rank/host filled from what other
events say about the same process (pid -> rank from launcher and NCCL lines)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from statistics import median

from analyzer.events.clock import parse_time, year_of
from analyzer.events.identity import date_events, globalize
from analyzer.model import Event, EventKind


def run_year(events: list[Event]) -> int | None:
    years = Counter(y for e in events if (y := year_of(e.time_text)) is not None)
    return years.most_common(1)[0][0] if years else None


YEAR_FROM_FILES = "no year in the logs: the year the files were last written"


def normalize(
    events: list[Event], source_hosts: dict[str, str | None] | None = None, written: float | None = None
) -> tuple[list[Event], list[str]]:
    """Clocks parsed, local ranks made global, hosts/pids/times shared within a rank, pid and bus
    id joins; and the warnings that arose (local ranks that nothing maps). WRITTEN is when the
    run dir's files were last written (epoch seconds): where no line of the run gives a year, a
    year-less time takes that year (the year before where that would put it after WRITTEN)."""
    year = run_year(events)
    out: list[Event] = []
    for e in events:
        if e.time is None and e.time_text:
            t, approx = parse_time(e.time_text, year)
            dated = _year_from_files(e, written) if approx and t is not None and written is not None else None
            e = dated or replace(e, time=t, time_approx=approx)
        out.append(e)
    out, warnings = globalize(out, source_hosts)
    return date_events(join_identities(anchor_uptime(out))), warnings


def _year_from_files(e: Event, written: float) -> Event | None:
    """The event dated in the year its files were last written (or the year before), None where
    neither gives a valid date (29 February)."""
    end = datetime.fromtimestamp(written, UTC).year
    for y in (end, end - 1):
        t, _ = parse_time(e.time_text, y)
        if t is not None and t <= written + 86400:  # a day of slack for clocks and time zones
            return replace(e, time=t, time_approx=True, fields={**e.fields, "time_from": YEAR_FROM_FILES})
    return None


def anchor_uptime(events: list[Event]) -> list[Event]:
    """Give wall time to kernel lines that only carry uptime (`[ 1234.567890]`), where a line of
    the same file, or else of the same host, shows both (syslog's `May 1 12:34:56 host kernel:
    [ 1234.56]`, journalctl): wall = uptime + the median offset seen there."""
    by_file: dict[str, list[float]] = {}
    by_host: dict[str, list[float]] = {}
    for e in events:
        up = e.fields.get("uptime")
        if e.time is not None and not e.time_approx and isinstance(up, float):
            by_file.setdefault(e.loc.file, []).append(e.time - up)
            if e.host:
                by_host.setdefault(e.host, []).append(e.time - up)
    if not by_file:
        return events
    out = []
    for e in events:
        up = e.fields.get("uptime")
        if e.time is None and isinstance(up, float):
            offsets = by_file.get(e.loc.file) or (by_host.get(e.host) if e.host else None)
            if offsets:
                fields = dict(e.fields)
                fields["time_from"] = "kernel uptime anchored to the wall clock of the same log"
                e = replace(e, time=up + median(offsets), fields=fields)
        out.append(e)
    return out


def join_identities(events: list[Event]) -> list[Event]:
    """Fill the rank of events that another event ties to one: a pid (a launcher line, an NCCL
    prefix, a torchelastic summary row) for `Killed process <pid>` and friends; a GPU's PCI bus
    id (NCCL's `busId` in its init line) for an Xid or an AER record naming that GPU."""
    by_pid: dict[tuple[str | None, int], tuple[int, str | None]] = {}
    by_bus: dict[tuple[str | None, str], tuple[int, str | None]] = {}
    # torchrun's summary rows carry the global rank (launcher lines often only the local one), so
    # they are read first and win; their host is often just "localhost", which names nothing
    ordered = sorted(events, key=lambda e: e.kind is not EventKind.ELASTIC_FAILURE)
    for e in ordered:
        if e.rank is None:
            continue
        host = None if e.host in (None, "localhost", "127.0.0.1") else e.host
        if e.pid is not None:
            if e.kind is EventKind.ELASTIC_FAILURE:
                by_pid.setdefault((None, e.pid), (e.rank, host))
            by_pid.setdefault((host, e.pid), (e.rank, host))
            by_pid.setdefault((None, e.pid), (e.rank, host))
        bus = e.fields.get("bus_id")
        if isinstance(bus, str) and bus:
            by_bus.setdefault((host, bus.lower()), (e.rank, host))
            by_bus.setdefault((None, bus.lower()), (e.rank, host))
    if not by_pid and not by_bus:
        return events
    out = []
    for e in events:
        if e.rank is None:
            found = None
            pid = e.fields.get("killed_pid") or e.pid
            if isinstance(pid, int):
                found = by_pid.get((None, pid)) if (None, pid) in by_pid and by_pid[(None, pid)][1] in (None, e.host) else None
                found = found or by_pid.get((e.host, pid))
                how = f"pid {pid}"
            pci = e.fields.get("pci")
            if found is None and isinstance(pci, str) and pci:
                key = pci.lower()[:12]
                found = by_bus.get((e.host, key)) or (by_bus.get((None, key)) if e.host is None else None)
                how = f"GPU {pci}"
            if found is not None:
                fields = dict(e.fields)
                fields["rank_from"] = how
                e = replace(e, rank=found[0], host=e.host or found[1], fields=fields)
        out.append(e)
    return out
