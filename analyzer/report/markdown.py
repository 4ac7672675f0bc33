"""Markdown that reads well pasted into a GitHub or Jira ticket."""

from __future__ import annotations

from analyzer.events.clock import format_time
from analyzer.model import Report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def render_markdown(report: Report) -> str:
    v = report.verdict
    ff = v.first_failure
    out = [f"## postmortem: `{v.category.value}`" + (f" / `{v.subcategory}`" if v.subcategory else "")]
    out.append("")
    out.append(f"**{v.title}** (confidence {v.confidence:.2f})")
    out.append("")
    out.append(v.explanation)
    out.append("")
    rows = [
        ("Run dir", f"`{report.run_dir}`"),
    ]
    if v.category.value != "none":  # a job with no failure has no first failure to place
        rows += [
            ("First failure", (f"rank {ff.rank}" if ff.rank is not None else "rank ?") + (f" on `{ff.host}`" if ff.host else "")),
            ("When", ((format_time(ff.time) or "") + (" (approximate)" if ff.time_approx else "")) if ff.time else "unknown"),
            ("Where", f"`{ff.file}:{ff.line}`" if ff.file else "unknown"),
        ]
    rows += [
        ("Signatures", ", ".join(f"`{s}`" for s in v.signatures) or "none"),
        ("Fingerprint", f"`{v.fingerprint}`"),
    ]
    if report.alternatives:
        rows.append(("Alternatives", ", ".join(f"{a.category.value} ({a.confidence:.2f})" for a in report.alternatives)))
    out.append("| | |")
    out.append("|---|---|")
    out.extend(f"| {k} | {val} |" for k, val in rows)
    out.append("")
    if v.remediation:
        out.append("### What to do")
        out.extend(f"{i}. {r}" for i, r in enumerate(v.remediation, 1))
        out.append("")
    if report.cascade:
        out.append("### Cascade")
        out.extend(f"- {c.what}" + (f" ({format_time(c.time)})" if c.time else "") for c in report.cascade[:15])
        out.append("")
    if report.evidence:
        out.append("### Evidence")
        out.append("| role | where | who | line |")
        out.append("|---|---|---|---|")
        for e in report.evidence[:20]:
            who = (f"rank {e.rank}" if e.rank is not None else "") + (f" {e.host}" if e.host else "")
            out.append(f"| {e.role.value} | `{e.file}:{e.line}` | {who.strip() or '-'} | `{_cell(e.text[:200])}` |")
        out.append("")
    if report.missing_evidence:
        out.append("### Missing evidence")
        out.extend(f"- {m}" for m in report.missing_evidence)
        out.append("")
    problems = [s for s in report.sources if s.status != "parsed"]
    if problems or report.warnings:
        out.append("<details><summary>Warnings</summary>")
        out.append("")
        out.extend(f"- `{s.file}`: {s.status}: {s.note}" for s in problems)
        out.extend(f"- {w}" for w in report.warnings)
        out.append("")
        out.append("</details>")
        out.append("")
    out.append(
        f"<sub>postmortem {report.tool_version}, {sum(1 for s in report.sources if s.status == 'parsed')} of {len(report.sources)} files read</sub>"
    )
    return "\n".join(out) + "\n"
