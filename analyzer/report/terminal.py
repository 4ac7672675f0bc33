"""The terminal report (rich): a verdict panel, the evidence with file:line, the failing
moments of the timeline, the cascade and what to do."""

from __future__ import annotations

import io

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from analyzer.events.clock import format_time
from analyzer.model import Category, Report

_COLORS = {Category.UNKNOWN: "yellow", Category.NONE: "green"}


def _where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


def _who(rank: int | None, host: str | None) -> str:
    parts = []
    if rank is not None:
        parts.append(f"rank {rank}")
    if host:
        parts.append(host)
    return " @ ".join(parts) or "-"


def render_text(report: Report, color: bool = False, width: int = 110) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None, highlight=False)
    v = report.verdict
    ff = v.first_failure
    head = Text()
    head.append(f"{v.category.value}", style="bold " + _COLORS.get(v.category, "red"))
    if v.subcategory:
        head.append(f"  ({v.subcategory})")
    head.append(f"   confidence {v.confidence:.2f}\n", style="bold")
    head.append(v.title + "\n", style="bold")
    head.append(v.explanation + "\n")
    if ff.file:
        head.append(
            f"First failure: {_who(ff.rank, ff.host)}  {((format_time(ff.time) or '') + (' (approx.)' if ff.time_approx else '')) if ff.time else 'time unknown'}  {_where(ff.file, ff.line)}\n"
        )
    if report.alternatives:
        alts = ", ".join(f"{a.category.value} {a.confidence:.2f}" for a in report.alternatives)
        head.append(f"Alternatives: {alts}\n")
    head.append(f"Fingerprint: {v.fingerprint}")
    console.print(Panel(head, title=Text(f"postmortem: {report.run_dir}"), title_align="left"))

    if report.evidence:
        table = Table(title="Evidence", title_justify="left", show_lines=False, expand=True)
        table.add_column("role", no_wrap=True)
        table.add_column("where", no_wrap=True, overflow="fold")
        table.add_column("who", no_wrap=True)
        table.add_column("line", overflow="fold")
        for e in report.evidence[:20]:
            table.add_row(Text(e.role.value), Text(_where(e.file, e.line)), Text(_who(e.rank, e.host)), Text(e.text[:240]))
        console.print(table)
    if report.cascade:
        console.print(Text("Cascade", style="bold"))
        for c in report.cascade[:15]:
            when = format_time(c.time) or ""
            console.print(f"  -> {c.what}  {when}".rstrip(), markup=False)
    if report.timeline:
        table = Table(title="Timeline (failing moments)", title_justify="left", expand=True)
        table.add_column("time", no_wrap=True)
        table.add_column("who", no_wrap=True)
        table.add_column("what", overflow="fold")
        table.add_column("where", no_wrap=True, overflow="fold")
        for t in report.timeline[:25]:
            table.add_row(
                Text(format_time(t.time) or "?"), Text(_who(t.rank, t.host)), Text(t.summary[:160]), Text(_where(t.file, t.line))
            )
        console.print(table)
    if v.remediation:
        console.print(Text("What to do", style="bold"))
        for i, r in enumerate(v.remediation, 1):
            console.print(f"  {i}. {r}", markup=False)
    if report.missing_evidence:
        console.print(Text("Missing evidence", style="bold"))
        for m in report.missing_evidence:
            console.print(f"  - {m}", markup=False)
    problems = [s for s in report.sources if s.status != "parsed"]
    if problems or report.warnings:
        console.print(Text("Warnings", style="bold"))
        for s in problems:
            console.print(f"  - {s.file}: {s.status}: {s.note}", markup=False)
        for w in report.warnings:
            console.print(f"  - {w}", markup=False)
    parsed = sum(1 for s in report.sources if s.status == "parsed")
    console.print(Text(f"{parsed} of {len(report.sources)} files read", style="dim"))
    return buf.getvalue()
