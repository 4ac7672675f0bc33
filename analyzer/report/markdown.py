"""Markdown that reads well pasted into a GitHub, GitLab or Jira ticket: the answer first, the
details in a collapsed `<details>` block.

Text from the run dir (log lines, file names, summaries that quote them) appears only in code
spans, or as prose with every markup character escaped and URLs in code spans, so that a log
line cannot add an image, a link, HTML or a table row to the ticket (see `safe`).
"""

from __future__ import annotations

import re

from analyzer.model import Report
from analyzer.report import layout
from analyzer.report.safe import md_cell, md_code, md_name, md_prose, md_text, strip_sequences

EVIDENCE_ROWS = 40
TIMELINE_ROWS = 40


def render_markdown(report: Report) -> str:
    v = report.verdict
    ff = v.first_failure
    out = [f"## postmortem: `{v.category.value}`" + (f" / `{v.subcategory}`" if v.subcategory else "")]
    out.append("")
    out.append(f"**{md_text(v.title)}** (confidence {v.confidence:.2f})")
    out.append("")
    line = layout.decisive(report)
    if line is not None:
        out.append(f"Decisive line, {md_name(layout.where(line.file, line.line))}:")
        out.append("")
        out.append(_block(line.text))
        out.append("")
    else:
        out.append(md_text(v.explanation))
        out.append("")
    fw = layout.first_when(report)
    rows = [
        ("Run dir", md_cell(md_name(report.run_dir))),
        ("First failure", md_text(layout.first_who(ff.rank, ff.host, ff.rank_note))),
        ("When", md_text(fw.stamp + fw.approx_note)),
        ("Where", md_cell(md_name(layout.where(ff.file, ff.line))) if ff.file else "unknown"),
        ("Signatures", ", ".join(md_code(s) for s in v.signatures) or "none"),
        ("Fingerprint", md_code(v.fingerprint)),
    ]
    card = layout.gpu(ff.pci_bus_id, ff.gpu_index)
    if card:
        rows.insert(3, ("GPU", md_text(card)))
    if v.category.value == "none":  # a job with no failure has no first failure to place
        rows = [r for r in rows if r[0] not in ("First failure", "When", "Where")]
    if layout.alternatives(report):
        label = layout.alternatives_label(report)
        rows.append((label, ", ".join(f"{a.category.value} ({a.confidence:.2f})" for a in layout.alternatives(report))))
    out.append("| | |")
    out.append("|---|---|")
    out.extend(f"| {k} | {val} |" for k, val in rows)
    out.append("")
    if report.cascade:
        out.append("### What followed")
        for what, when in layout.followed(report):
            out.append(f"- {md_code(what)}{when}")
        out.append("")
    if v.remediation:
        out.append("### What to do")
        out.extend(f"{i}. {md_prose(r)}" for i, r in enumerate(v.remediation, 1))
        out.append("")
    for w in report.warnings:
        out.append(f"> **Warning:** {md_text(w)}")
        out.append("")
    out.append("<details><summary>Details: evidence, timeline, sources</summary>")
    out.append("")
    out.append(md_text(v.explanation))
    out.append("")
    if report.evidence:
        out.append("#### Evidence")
        out.append("| role | where | who | line |")
        out.append("|---|---|---|---|")
        for e in layout.distinct_lines(report.evidence[:EVIDENCE_ROWS]):
            out.append(
                f"| {e.role.value} | {md_cell(md_name(layout.where(e.file, e.line)))} | "
                f"{md_text(layout.who(e.rank, e.host))} | {md_cell(md_code(e.text))} |"
            )
        if len(report.evidence) > EVIDENCE_ROWS:
            out.append(f"\n{layout.plural(len(report.evidence) - EVIDENCE_ROWS, 'more line')} in the JSON report.")
        out.append("")
    placed_all = layout.placed_timeline(report)
    if placed_all:
        win = layout.window(placed_all)
        out.append("#### Timeline")
        if win.earlier:
            out.append(md_text(layout.summarize_earlier(win.earlier)))
            out.append("")
        out.append("| time | who | what | where |")
        out.append("|---|---|---|---|")
        for r in layout.collapse(win.shown)[:TIMELINE_ROWS]:
            p = r.first
            what = p.entry.summary + (f" (x{r.count})" if r.count > 1 else "")
            mark = "**first failure** " if p.is_root else ""
            out.append(
                f"| {md_text(layout.when(p.time, p.approx))} | {md_text(layout.row_who(r))} | "
                f"{mark}{md_cell(md_code(what))} | {md_cell(md_name(layout.where(p.entry.file, p.entry.line)))} |"
            )
        out.append("")
    if report.missing_evidence:
        out.append("#### Missing evidence")
        out.extend(f"- {md_text(m)}" for m in report.missing_evidence)
        out.append("")
    problems = [s for s in report.sources if s.status != "parsed"]
    if problems:
        out.append("#### Files not read")
        out.extend(f"- {md_name(s.file)}: {s.status}: {md_text(s.note)}" for s in problems)
        out.append("")
    out.append("</details>")
    out.append("")
    parsed = sum(1 for s in report.sources if s.status == "parsed")
    out.append(
        f"<sub>postmortem {md_text(report.tool_version)}, {parsed} of {layout.plural(len(report.sources), 'file')} read</sub>"
    )
    return "\n".join(out) + "\n"


def _block(text: str) -> str:
    """A fenced code block longer than any backtick run in `text`."""
    body = strip_sequences(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"
