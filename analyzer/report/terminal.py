"""The terminal report (rich). The first screen is the answer: the verdict, the decisive line
verbatim with file:line, the first failing rank, host and time, what followed (one line per
kind of symptom, ranks as ranges) and what to do. Below it, collapsed: evidence grouped by
signature, the timeline windowed on the failure, missing evidence, warnings. `verbose` lists
everything.

Width is the console's (the terminal's, or `width`); no line is wider. Every string that comes
from a run dir goes through `safe` (no escape sequence reaches the terminal), and rich's
markup and emoji codes are off, so `[bold]` or `:smile:` in a log line stay as they are.
"""

from __future__ import annotations

import io

from rich.cells import cell_len, set_cell_size
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from analyzer.model import CascadeEntry, Category, Report
from analyzer.report import layout
from analyzer.report.safe import middle_ellipsis, term_line, term_name

_COLORS = {Category.UNKNOWN: "yellow", Category.NONE: "green"}
FIRST_SCREEN_FOLLOWED = 6  # symptom groups on the first screen
GROUP_ROWS = 2  # evidence rows per signature when collapsed
TIMELINE_ROWS = 10  # timeline rows when collapsed
DECISIVE_LINES = 4  # wrapped lines of the decisive line when collapsed


def _console(buf: io.StringIO, width: int | None, color: bool) -> Console:
    probe = Console(markup=False, emoji=False, highlight=False)
    return Console(
        file=buf,
        width=width or probe.width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
    )


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` terminal cells, an ellipsis where it was cut."""
    if cell_len(text) <= limit:
        return text
    return set_cell_size(text, max(0, limit - 1)) + "…"


def _rows(console: Console, cells: list[tuple[str, ...]], verbose: bool, indent: int = 2) -> None:
    """Columns sized to their content; the last one takes the rest of the line, cut when
    collapsed and wrapped under itself when verbose."""
    if not cells:
        return
    widths = [max(cell_len(c[i]) for c in cells) for i in range(len(cells[0]) - 1)]
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, width=max(0, indent - 1))
    for w in widths:
        grid.add_column(no_wrap=True, width=w)
    rest = console.width - indent - sum(w + 1 for w in widths)
    grid.add_column(overflow="fold", width=max(10, rest))
    for c in cells:
        grid.add_row("", *c[:-1], c[-1] if verbose else _cut(c[-1], max(10, rest)))
    console.print(grid)


def _hang(prefix: str, text: str, style: str = "") -> Table:
    """`prefix` then `text`, its wrapped lines indented under the text (a hanging indent)."""
    grid = Table.grid()
    grid.add_column(no_wrap=True, width=len(prefix))
    grid.add_column(overflow="fold", ratio=1)
    grid.add_row(prefix, Text(text, style=style))
    return grid


def _head(report: Report, inner: int, verbose: bool) -> Group:
    v = report.verdict
    ff = v.first_failure
    cat = v.category.value
    parts: list[RenderableType] = []
    t = Text()
    t.append(cat, style="bold " + _COLORS.get(v.category, "red"))
    if v.subcategory:
        t.append(f"  {v.subcategory}")
    t.append(f"   confidence {v.confidence:.2f}", style="bold")
    parts.append(t)
    parts.append(Text(term_line(v.title), style="bold"))
    line = layout.decisive(report)
    if line is not None:
        head = Text("Decisive line  ", style="bold")
        head.append(term_name(middle_ellipsis(layout.where(line.file, line.line), max(20, inner - 16))))
        parts.append(head)
        text = term_line(line.text)
        if not verbose:
            text = _cut(text, DECISIVE_LINES * (inner - 2))
        parts.append(_hang("  ", text, "cyan"))
    else:
        parts.append(_hang("", term_line(v.explanation)))
    fw = layout.first_when(report)
    anchor = fw.time
    if ff.file or ff.rank is not None or ff.host:
        first = f"{layout.first_who(ff.rank, ff.host, ff.rank_note)}, {fw.stamp}{fw.approx_note}"
        parts.append(_hang("First failure  ", first))
        card = layout.gpu(ff.pci_bus_id, ff.gpu_index)
        if card:
            parts.append(_hang("GPU            ", term_line(card)))
    if report.cascade:
        parts.append(Text("What followed", style="bold"))
        shown = report.cascade if verbose else report.cascade[:FIRST_SCREEN_FOLLOWED]
        for c in shown:
            parts.append(_hang("  • ", term_line(_followed(c, anchor))))
        if len(shown) < len(report.cascade):
            parts.append(Text(f"  … {layout.plural(len(report.cascade) - len(shown), 'more kind')} of symptom", style="dim"))
    if v.remediation:
        parts.append(Text("What to do", style="bold"))
        for i, r in enumerate(v.remediation, 1):
            parts.append(_hang(f"  {i}. ", term_line(r)))
    if layout.alternatives(report):
        alts = ", ".join(f"{a.category.value} {a.confidence:.2f}" for a in layout.alternatives(report))
        close = layout.is_close_call(report)
        parts.append(_hang(f"{layout.alternatives_label(report)}: ", alts, "bold yellow" if close else "dim"))
    return Group(*parts)


def _followed(c: CascadeEntry, root_time: float | None) -> str:
    what = c.what
    if c.count > 1 and "rank" not in what:
        what += f" ({c.count} times)" if "times)" not in what else ""
    if c.time is not None:
        what += f", {layout.relative(c.time - root_time)}" if root_time is not None else f", {layout.when(c.time)}"
    return what


def render_text(report: Report, color: bool = False, width: int | None = None, verbose: bool = False) -> str:
    buf = io.StringIO()
    console = _console(buf, width, color)
    cols = console.width
    inner = cols - 4
    title = term_name(middle_ellipsis(f"postmortem: {report.run_dir}", max(10, cols - 8)))
    console.print(Panel(_head(report, inner, verbose), title=Text(title), title_align="left", width=cols))
    if report.warnings:
        for w in report.warnings if verbose else report.warnings[:3]:
            console.print(Text("! " + term_line(w), style="bold yellow"))
        if not verbose and len(report.warnings) > 3:
            console.print(Text(f"! … {layout.plural(len(report.warnings) - 3, 'more warning')}", style="yellow"))

    hidden = 0
    console.print(Text("Details" + ("" if verbose else "  (--verbose shows everything)"), style="bold underline"))
    groups = layout.evidence_groups(report)
    if groups:
        console.print(
            Text(
                f"Evidence: {layout.plural(len(report.evidence), 'line')}, {layout.plural(len(groups), 'signature')}",
                style="bold",
            )
        )
        path_w = max(16, cols // 3)
        shown_lines: set[tuple[str, int | None]] = set()
        for g in groups:
            fresh = [e for e in g.items if (e.file, e.line) not in shown_lines]
            head = f"  {term_line(g.signature)} · {g.role.value.replace('_', ' ')} · {layout.plural(len(g.items), 'line')}"
            if not fresh:
                console.print(Text(head + ", shown above", style="dim"))
                continue
            console.print(Text(head, style="dim"))
            rows = fresh if verbose else fresh[:GROUP_ROWS]
            shown_lines.update((e.file, e.line) for e in rows)
            cells: list[tuple[str, ...]] = [
                (
                    term_name(middle_ellipsis(layout.where(e.file, e.line), path_w)),
                    _cut(layout.who(e.rank, e.host), 24),
                    term_line(e.text),
                )
                for e in rows
            ]
            _rows(console, cells, verbose, indent=4)
            left = len(g.items) - len(rows) - (len(g.items) - len(fresh))
            if left > 0:
                hidden += left
                console.print(Text(f"     … {layout.plural(left, 'more line')}", style="dim"))

    placed = layout.placed_timeline(report)
    if placed:
        win = layout.window(placed)
        rows_t = layout.collapse(win.shown) if not verbose else [layout.Row(p, (), (), 1) for p in win.shown]
        console.print(Text("Timeline around the failure" if win.earlier else "Timeline", style="bold"))
        if win.earlier:
            if verbose:
                rows_t = [layout.Row(p, (), (), 1) for p in win.earlier] + rows_t
            else:
                console.print(Text("  " + term_line(layout.summarize_earlier(win.earlier)), style="dim"))
        limit = len(rows_t) if verbose else TIMELINE_ROWS
        start = 0
        root_at = next((i for i, r in enumerate(rows_t) if r.first.is_root), 0)
        if root_at >= limit:
            start = max(0, root_at - 2)
        shown = rows_t[start : start + limit]
        cells = []
        for r in shown:
            p = r.first
            what = term_line(p.entry.summary) + (f" (×{r.count})" if r.count > 1 else "")
            stamp = layout.when(p.time, p.approx)
            if win.anchor is not None and p.time is not None and not p.is_root:
                stamp = ("≈ " if p.approx else "") + layout.delta(p.time - win.anchor)
            cells.append(("▶" if p.is_root else "", stamp, _cut(layout.row_who(r), 24), what))
        _rows(console, cells, verbose)
        left = len(rows_t) - len(shown)
        if left:
            hidden += left
            console.print(Text(f"  … {layout.plural(left, 'more row')} (--verbose)", style="dim"))
    if report.missing_evidence:
        console.print(Text("Missing evidence", style="bold"))
        for m in report.missing_evidence:
            console.print(_hang("  - ", term_line(m)))
    problems = [s for s in report.sources if s.status != "parsed"]
    if problems:
        console.print(Text(f"Files not read: {len(problems)}", style="bold"))
        for s in problems if verbose else problems[:5]:
            console.print(Text(f"  - {term_name(middle_ellipsis(s.file, cols // 2))}: {s.status}: {term_line(s.note)}"))
        if not verbose and len(problems) > 5:
            console.print(Text(f"  … {layout.plural(len(problems) - 5, 'more file')}", style="dim"))
    if verbose:
        console.print(Text("Explanation", style="bold"))
        console.print(Text("  " + term_line(report.verdict.explanation)))
    parsed = sum(1 for s in report.sources if s.status == "parsed")
    console.print(
        Text(
            f"{parsed} of {layout.plural(len(report.sources), 'file')} read · fingerprint {report.verdict.fingerprint}",
            style="dim",
        )
    )
    out = buf.getvalue()
    return out if color else "".join(line.rstrip() + "\n" for line in out.splitlines())
