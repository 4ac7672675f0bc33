"""Renderers of the triage result (a plain dict, see analyzer/triage/result.schema.json): the
terminal table, Markdown, one self-contained HTML page, and the ticket text of one group."""

from __future__ import annotations

import io
from collections import Counter
from html import escape
from typing import Any

MAX_JOBS_LISTED = 20


def _short(job: str) -> str:
    return job.rstrip("/").rsplit("/", 1)[-1] or job


def render_table(result: dict[str, Any], color: bool = False, width: int = 120) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False)
    n_jobs = len(result["jobs"])
    console.print(
        f"[bold]postmortem triage[/bold]: {n_jobs} job(s), {len(result['groups'])} group(s), {len(result['failed'])} failed"
    )
    t = Table(title="Per category", title_justify="left")
    for col in ("category", "subcategory", "jobs"):
        t.add_column(col, justify="right" if col == "jobs" else "left")
    for c in result["counts"]:
        t.add_row(c["category"], c["subcategory"] or "", str(c["jobs"]))
    console.print(t)
    t = Table(title="Groups (same failure, same fingerprint)", title_justify="left")
    for col in ("group", "count", "new", "title", "hosts"):
        t.add_column(col, justify="right" if col == "count" else "left", overflow="fold")
    for g in result["groups"]:
        t.add_row(g["group"], str(g["count"]), "new" if g["new"] else "", g["title"], ", ".join(g["hosts"][:6]))
    console.print(t)
    recurring = [n for n in result["nodes"] if n["count"] > 1]
    if recurring:
        t = Table(title="Nodes in more than one failed job", title_justify="left")
        for col in ("host", "jobs", "categories", "gpus"):
            t.add_column(col, overflow="fold")
        for n in recurring:
            cats = ", ".join(f"{k} {v}" for k, v in n["categories"].items())
            t.add_row(n["host"], str(n["count"]), cats, ", ".join(n["gpus"]))
        console.print(t)
    if result["failed"]:
        t = Table(title="Jobs whose analysis failed", title_justify="left")
        t.add_column("job", overflow="fold")
        t.add_column("why", overflow="fold")
        for f in result["failed"]:
            t.add_row(f["job"], f["reason"])
        console.print(t)
    return buf.getvalue()


def _md(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(result: dict[str, Any]) -> str:
    out = [
        "# postmortem triage",
        "",
        f"{len(result['jobs'])} job(s), {len(result['groups'])} group(s), {len(result['failed'])} failed.",
        "",
    ]
    out += ["## Per category", "", "| category | subcategory | jobs |", "|---|---|---:|"]
    out += [f"| {c['category']} | {_md(c['subcategory'])} | {c['jobs']} |" for c in result["counts"]]
    out += [
        "",
        "## Groups",
        "",
        "| group | count | new | title | hosts | first seen | last seen |",
        "|---|---:|---|---|---|---|---|",
    ]
    for g in result["groups"]:
        out.append(
            f"| `{g['group']}` | {g['count']} | {'new' if g['new'] else ''} | {_md(g['title'])} | "
            f"{_md(', '.join(g['hosts'][:8]))} | {g['first_seen'] or ''} | {g['last_seen'] or ''} |"
        )
    out += ["", "## Nodes", "", "| host | jobs | categories | GPUs |", "|---|---:|---|---|"]
    for n in result["nodes"]:
        cats = ", ".join(f"{k} {v}" for k, v in n["categories"].items())
        out.append(f"| {_md(n['host'])} | {n['count']} | {cats} | {_md(', '.join(n['gpus']))} |")
    if result["failed"]:
        out += ["", "## Failed", "", "| job | why |", "|---|---|"]
        out += [f"| {_md(f['job'])} | {_md(f['reason'])} |" for f in result["failed"]]
    out += ["", "## Jobs", "", "| job | category | subcategory | confidence | group |", "|---|---|---|---:|---|"]
    for j in result["jobs"]:
        out.append(f"| {_md(j['job'])} | {j['category']} | {_md(j['subcategory'])} | {j['confidence']:.2f} | `{j['group']}` |")
    return "\n".join(out) + "\n"


def ticket_markdown(group: dict[str, Any], nodes: list[dict[str, Any]], report_file: str | None = None) -> str:
    """One group's ticket: title, count, jobs, nodes and GPUs, first/last seen, the best evidence,
    remediation, and the fingerprint as a stable id (also in a marker that trackers keep)."""
    hosts = set(group["hosts"])
    out = [
        f"# {group['title']}",
        "",
        f"<!-- postmortem-fingerprint: {group['fingerprint']} -->",
        "",
        f"- **Category**: `{group['category']}`" + (f" (`{group['subcategory']}`)" if group.get("subcategory") else ""),
        f"- **Jobs**: {group['count']}",
        f"- **First seen**: {group['first_seen'] or 'unknown'}; **last seen**: {group['last_seen'] or 'unknown'}",
        f"- **Fingerprint**: `{group['fingerprint']}`",
    ]
    if report_file:
        out.append(f"- **Report**: `{report_file}` (one job's full report)")
    out += ["", "## Jobs", ""]
    out += [f"- `{j}`" for j in group["jobs"][:MAX_JOBS_LISTED]]
    if len(group["jobs"]) > MAX_JOBS_LISTED:
        out.append(f"- ... and {len(group['jobs']) - MAX_JOBS_LISTED} more")
    out += ["", "## Nodes and GPUs", ""]
    listed = [n for n in nodes if n["host"] in hosts]
    if listed:
        for n in listed:
            gpus = f"; GPUs {', '.join(n['gpus'])}" if n["gpus"] else ""
            out.append(f"- `{n['host']}`: {n['count']} failed job(s) in this batch{gpus}")
    else:
        out.append("- no host named in the logs")
    out += ["", "## Evidence", ""]
    if group["evidence"]:
        out += [f"From `{group['jobs'][0]}`:", ""]
        for e in group["evidence"]:
            out += [f"`{e['file']}:{e['line']}`", "", "```", e["text"], "```", ""]
    elif group.get("templates"):
        out += ["No signature explains it; the failing lines' template:", "", "```", *group["templates"], "```", ""]
    else:
        out += ["none", ""]
    out += ["## Remediation", ""]
    out += [f"- {r}" for r in group["remediation"]] or ["- none known yet"]
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d1d1f;max-width:1200px}
h1{font-size:20px} h2{font-size:16px;margin:22px 0 8px} h3{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse;width:100%;font-size:13px} td,th{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;word-break:break-all}
.new{color:#c0392b;font-weight:600} svg text{font-family:ui-monospace,monospace;font-size:11px}
details{border:1px solid #ddd;border-radius:6px;padding:6px 10px;margin:6px 0}
"""
_PALETTE = (
    "#c0392b",
    "#2471a3",
    "#1e8449",
    "#b7950b",
    "#7d3c98",
    "#ca6f1e",
    "#17a589",
    "#566573",
    "#a93226",
    "#2e4053",
    "#95a5a6",
)


def counts_svg(daily: list[dict[str, Any]], width: int = 900, height: int = 220) -> str:
    """Stacked bars: jobs per category per day (the day a job was first seen)."""
    days: dict[str, Counter[str]] = {}
    for row in daily:
        days.setdefault(row["day"], Counter())[row["category"]] += row["jobs"]
    cats = sorted({c for per in days.values() for c in per})
    color = {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(cats)}
    order = sorted(days)
    top = max((sum(per.values()) for per in days.values()), default=1)
    bar = max(8.0, min(60.0, (width - 160) / max(1, len(order)) - 6))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" role="img" aria-label="jobs per category per day">'
    ]
    for i, day in enumerate(order):
        x, y = 40 + i * (bar + 6), float(height)
        for c in cats:
            n = days[day].get(c, 0)
            if not n:
                continue
            h = n / top * (height - 20)
            y -= h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color[c]}"><title>{escape(day)} {escape(c)}: {n}</title></rect>'
            )
        out.append(f'<text x="{x:.1f}" y="{height + 14}">{escape(day[5:] if len(day) == 10 else day)}</text>')
    for i, c in enumerate(cats):
        out.append(f'<rect x="{width - 150}" y="{10 + i * 16}" width="10" height="10" fill="{color[c]}"/>')
        out.append(f'<text x="{width - 135}" y="{19 + i * 16}">{escape(c)}</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(result: dict[str, Any]) -> str:
    e = escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>postmortem triage</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>postmortem triage: {len(result['jobs'])} job(s), {len(result['groups'])} group(s), {len(result['failed'])} failed</h1>",
        "<h2>Jobs per category over time</h2>",
        counts_svg(result.get("daily") or []),
        "<h2>Per category</h2><table><tr><th>category</th><th>subcategory</th><th>jobs</th></tr>",
    ]
    parts += [
        f"<tr><td>{e(c['category'])}</td><td>{e(c['subcategory'] or '')}</td><td>{c['jobs']}</td></tr>" for c in result["counts"]
    ]
    parts.append("</table><h2>Recurring nodes</h2>")
    recurring = [n for n in result["nodes"] if n["count"] > 1]
    if recurring:
        parts.append("<table><tr><th>host</th><th>jobs</th><th>categories</th><th>GPUs</th></tr>")
        for n in recurring:
            cats = ", ".join(f"{k} {v}" for k, v in n["categories"].items())
            parts.append(
                f"<tr><td><code>{e(n['host'])}</code></td><td>{n['count']}</td><td>{e(cats)}</td><td>{e(', '.join(n['gpus']))}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No node appears in more than one failed job.</p>")
    parts.append("<h2>Groups</h2>")
    for g in result["groups"]:
        new = " <span class='new'>new</span>" if g["new"] else ""
        parts.append(
            f"<details id='g-{e(g['fingerprint'])}'><summary><b>{g['count']}</b> &times; <code>{e(g['group'])}</code> "
            f"{e(g['title'])}{new}</summary><pre>{e(ticket_markdown(g, result['nodes']))}</pre></details>"
        )
    if result["failed"]:
        parts.append("<h2>Failed</h2><table><tr><th>job</th><th>why</th></tr>")
        parts += [f"<tr><td><code>{e(f['job'])}</code></td><td>{e(f['reason'])}</td></tr>" for f in result["failed"]]
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)


def render_history_markdown(data: dict[str, Any]) -> str:
    out = [
        "# postmortem history",
        "",
        "## Per fingerprint",
        "",
        "| fingerprint | category | count | first seen | last seen | title |",
    ]
    out.append("|---|---|---:|---|---|---|")
    for f in data["fingerprints"]:
        out.append(
            f"| `{f['fingerprint']}` | {f['category']} | {f['count']} | {f['first_seen']} | {f['last_seen']} | {_md(f['title'])} |"
        )
    out += ["", "## Per node", "", "| host | count | first seen | last seen | categories |", "|---|---:|---|---|---|"]
    for n in data["nodes"]:
        cats = ", ".join(f"{k} {v}" for k, v in n["categories"].items())
        out.append(f"| {_md(n['host'])} | {n['count']} | {n['first_seen']} | {n['last_seen']} | {cats} |")
    return "\n".join(out) + "\n"


def render_history_table(data: dict[str, Any], width: int = 120) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, no_color=True, width=width, highlight=False)
    t = Table(title="Per fingerprint", title_justify="left")
    for col in ("fingerprint", "category", "count", "first seen", "last seen", "title"):
        t.add_column(col, overflow="fold")
    for f in data["fingerprints"]:
        t.add_row(f["fingerprint"], f["category"], str(f["count"]), f["first_seen"], f["last_seen"], f["title"])
    console.print(t)
    t = Table(title="Per node", title_justify="left")
    for col in ("host", "count", "first seen", "last seen", "categories"):
        t.add_column(col, overflow="fold")
    for n in data["nodes"]:
        t.add_row(
            n["host"], str(n["count"]), n["first_seen"], n["last_seen"], ", ".join(f"{k} {v}" for k, v in n["categories"].items())
        )
    console.print(t)
    return buf.getvalue()
