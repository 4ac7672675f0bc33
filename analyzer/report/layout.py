"""What every human-readable format shows, decided once: the decisive line, the timeline placed
and windowed around the failure, evidence grouped by signature, plain wording.

Pure functions of the Report; the renderers only lay the results out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from analyzer.events.clock import format_time
from analyzer.model import TIME_PLACED, Alternative, EvidenceItem, Report, Role, TimelineEntry

EARLIER_THAN = 300.0  # seconds before the first failure where the job's failure window starts


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 line`, `2 lines`, `3 kinds of error` (with `many` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def rank_ranges(ranks: Iterable[int]) -> str:
    """0,1,2,4 -> '0-2,4'."""
    values = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(f"{values[i]}-{values[j]}" if j > i else f"{values[i]}")
        i = j + 1
    return ",".join(parts)


def who(rank: int | None, host: str | None) -> str:
    """`rank 3 on node7`, `node7`, `rank 3`, or `-` (a rank is named only when the report holds one)."""
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if host:
        parts.append(("on " if parts else "") + host)
    return " ".join(parts) or "-"


def first_who(rank: int | None, host: str | None, note: str | None = None) -> str:
    """The first failure's process: `rank 3 on node7`, `rank 0 (the job was one process: ...)`,
    or that the logs name no rank."""
    if rank is None:
        return (f"{host}, " if host else "") + "no rank named in the logs"
    return who(rank, host) + (f" ({note})" if note else "")


def gpu(pci_bus_id: str | None, gpu_index: int | None) -> str | None:
    """`GPU 3 (PCI 0000:3b:00)`, `GPU at PCI 0000:3b:00`, or None."""
    if pci_bus_id is None:
        return None
    return f"GPU {gpu_index} (PCI {pci_bus_id})" if gpu_index is not None else f"GPU at PCI {pci_bus_id}"


def where(file: str | None, line: int | None) -> str:
    if not file:
        return "-"
    return f"{file}:{line}" if line is not None else file


def when(t: float | None, approx: bool = False) -> str:
    text = format_time(t)
    if text is None:
        return "time unknown"
    return ("≈ " if approx else "") + text.replace("T", " ").removesuffix("Z")


def delta(seconds: float) -> str:
    """+10m04s, +3.2s, +33h12m."""
    sign = "+" if seconds >= 0 else "-"
    s = abs(seconds)
    if s < 60:
        return f"{sign}{s:.1f}s"
    if s < 3600:
        return f"{sign}{int(s // 60)}m{int(s % 60):02d}s"
    return f"{sign}{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


def relative(seconds: float) -> str:
    """When a symptom came, said from the first failure: "10m04s after", "1.0s before"."""
    if abs(seconds) < 0.05:
        return "at the same time"
    word = "after" if seconds > 0 else "before"
    return f"{delta(abs(seconds))[1:]} {word}"


@dataclass(frozen=True, slots=True)
class FirstWhen:
    """When the first failure happened: its own time, else where the timeline placed it."""

    time: float | None
    approx: bool  # borrowed from a neighbour or placed by the lines around it
    note: str | None = None  # where an approximate time comes from

    @property
    def approx_note(self) -> str:
        """' (where the time comes from)' for an approximate time, else ''."""
        return f" ({self.note or TIME_PLACED})" if self.approx else ""

    @property
    def stamp(self) -> str:
        return when(self.time, self.approx)


def first_when(report: Report) -> FirstWhen:
    ff = report.verdict.first_failure
    placed = next((p for p in placed_timeline(report) if p.is_root), None)
    if ff.time is not None:
        return FirstWhen(ff.time, ff.time_approx, ff.time_note)
    return FirstWhen(placed.time if placed else None, ff.time_approx or (placed is not None and placed.approx), ff.time_note)


def followed(report: Report) -> list[tuple[str, str]]:
    """What followed the first failure: each cascade entry's text and, where both times are
    known, when it came (", 1.0s before")."""
    ff = report.verdict.first_failure
    return [
        (c.what, f", {relative(c.time - ff.time)}" if c.time is not None and ff.time is not None else "") for c in report.cascade
    ]


def distinct_lines(evidence: Iterable[EvidenceItem]) -> list[EvidenceItem]:
    """Evidence rows with one row per file:line (a line matched by several signatures is shown once)."""
    seen: set[tuple[str, int | None]] = set()
    out = []
    for e in evidence:
        if (e.file, e.line) not in seen:
            seen.add((e.file, e.line))
            out.append(e)
    return out


def decisive(report: Report) -> EvidenceItem | None:
    """The root-cause line at the first failure's file:line, else the first root-cause line."""
    ff = report.verdict.first_failure
    roots = [e for e in report.evidence if e.role is Role.ROOT_CAUSE]
    for e in roots:
        if e.file == ff.file and e.line == ff.line:
            return e
    return roots[0] if roots else None


@dataclass(frozen=True, slots=True)
class Placed:
    entry: TimelineEntry
    time: float | None  # the entry's time, or one taken from its neighbours
    approx: bool  # the time was taken from neighbours
    is_root: bool


def _root_entry(report: Report) -> TimelineEntry | None:
    ff = report.verdict.first_failure
    if not ff.file:
        return None
    for t in report.timeline:
        if t.file == ff.file and t.line == ff.line:
            return t
    line = decisive(report)
    summary = line.text if line else report.verdict.title
    return TimelineEntry(ff.time, ff.host, ff.rank, "root_cause", summary, ff.file, ff.line)


def placed_timeline(report: Report) -> list[Placed]:
    """The timeline with the root cause always on it, and events without a time placed by their
    neighbours: the nearest timed event before it in the same file (after it when none before);
    a root cause with no neighbour in its file goes just before the first symptom that followed."""
    root = _root_entry(report)
    entries = list(report.timeline)
    if root is not None and root not in entries:
        entries.append(root)
    timed_by_file: dict[str, list[tuple[int, float]]] = {}
    for t in entries:
        if t.time is not None and t.line is not None:
            timed_by_file.setdefault(t.file, []).append((t.line, t.time))
    for v in timed_by_file.values():
        v.sort()
    after_root = [c.time for c in report.cascade if c.time is not None]
    out: list[Placed] = []
    for t in entries:
        is_root = root is not None and t.file == root.file and t.line == root.line
        if t.time is not None:  # a root cause's borrowed time (first_failure.time_approx) is approximate too
            out.append(Placed(t, t.time, is_root and report.verdict.first_failure.time_approx, is_root))
            continue
        guess: float | None = None
        near = timed_by_file.get(t.file, [])
        if t.line is not None and near:
            before = [tm for ln, tm in near if ln <= t.line]
            later = [tm for ln, tm in near if ln > t.line]
            guess = before[-1] if before else later[0]
        elif is_root and after_root:
            guess = min(after_root)
        out.append(Placed(t, guess, guess is not None, is_root))
    out.sort(key=_placed_key)
    return out


def _placed_key(p: Placed) -> tuple[float, int, int, str, int]:
    # a root cause placed at a neighbour's time comes first among equals: it is what set them off
    return (
        p.time if p.time is not None else float("inf"),
        0 if p.is_root else 1,
        p.entry.rank if p.entry.rank is not None else 1 << 30,
        p.entry.file,
        p.entry.line or 0,
    )


@dataclass(frozen=True, slots=True)
class Window:
    earlier: list[Placed]  # before the job's failure window: summarized, not listed
    shown: list[Placed]
    anchor: float | None  # the first failure's (placed) time


def window(placed: list[Placed], before: float = EARLIER_THAN) -> Window:
    """Events more than `before` seconds before the first failure are set apart."""
    root = next((p for p in placed if p.is_root), None)
    anchor = root.time if root is not None else next((p.time for p in placed if p.time is not None), None)
    if anchor is None:
        return Window([], placed, None)
    earlier = [p for p in placed if p.time is not None and p.time < anchor - before and not p.is_root]
    shown = [p for p in placed if p not in earlier]
    return Window(earlier, shown, anchor)


@dataclass(frozen=True, slots=True)
class Row:
    """Consecutive timeline entries of one kind, collapsed: first time, ranks, count."""

    first: Placed
    ranks: tuple[int, ...]
    hosts: tuple[str, ...]
    count: int


def collapse(placed: list[Placed]) -> list[Row]:
    """One row per kind of event in order of first appearance; the root cause keeps its own row."""
    rows: list[Row] = []
    index: dict[str, int] = {}
    for p in placed:
        key = p.entry.kind
        if p.is_root or key not in index:
            if not p.is_root:
                index[key] = len(rows)
            rows.append(Row(p, tuple(r for r in [p.entry.rank] if r is not None), (p.entry.host,) if p.entry.host else (), 1))
            continue
        i = index[key]
        r = rows[i]
        ranks = r.ranks + ((p.entry.rank,) if p.entry.rank is not None and p.entry.rank not in r.ranks else ())
        hosts = r.hosts + ((p.entry.host,) if p.entry.host and p.entry.host not in r.hosts else ())
        rows[i] = Row(r.first, ranks, hosts, r.count + 1)
    return rows


def row_who(row: Row) -> str:
    if len(row.ranks) > 1:
        return f"ranks {rank_ranges(row.ranks)}"
    if len(row.hosts) > 1:
        return f"{len(row.hosts)} hosts"
    return who(row.ranks[0] if row.ranks else None, row.hosts[0] if row.hosts else None)


def summarize_earlier(earlier: list[Placed]) -> str:
    """`12 earlier events from T1 to T2 (corrected PCIe errors ×11, ...)`."""
    kinds: dict[str, int] = {}
    for p in earlier:
        kinds[p.entry.summary[:60]] = kinds.get(p.entry.summary[:60], 0) + 1
    top = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    what = "; ".join(f"{k} ×{n}" if n > 1 else k for k, n in top)
    times = [p.time for p in earlier if p.time is not None]
    span = f" from {when(min(times))} to {when(max(times))}" if times else ""
    return f"{plural(len(earlier), 'earlier event')}{span}, before the failure window: {what}"


@dataclass(frozen=True, slots=True)
class Group:
    signature: str
    role: Role
    items: list[EvidenceItem]


def evidence_groups(report: Report) -> list[Group]:
    """Evidence grouped by signature: root cause first, then context and symptoms, in report order."""
    groups: dict[tuple[str, Role], list[EvidenceItem]] = {}
    for e in report.evidence:
        groups.setdefault((e.signature or "-", e.role), []).append(e)
    order = {Role.ROOT_CAUSE: 0, Role.CONTEXT: 1, Role.SYMPTOM: 2}
    keyed = sorted(groups.items(), key=lambda kv: order[kv[0][1]])
    return [Group(sig, role, items) for (sig, role), items in keyed]


def alternatives(report: Report) -> list[Alternative]:
    """The alternatives worth a reader's eye: those at 0.01 or more (the JSON keeps them all)."""
    return [a for a in report.alternatives if a.confidence >= 0.01]


def alternatives_label(report: Report) -> str:
    """What the alternatives are to the reader: an `unknown` verdict's candidates (the causes its
    evidence leaves open, best guess first), a close call, or the less likely causes."""
    if report.verdict.category.value == "unknown":
        return "Candidates"
    return "Close call with" if is_close_call(report) else "Less likely"


def is_close_call(report: Report, margin: float = 0.15) -> bool:
    """The best alternative is within `margin` of the verdict (and both are real candidates)."""
    if not report.alternatives:
        return False
    best = max(a.confidence for a in report.alternatives)
    return best >= 0.2 and report.verdict.confidence - best <= margin
