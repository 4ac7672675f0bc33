"""One self-contained HTML file (no network): the verdict, the evidence and a drawing of the
timeline, ranks (or hosts) against time, with the first failure and its cascade marked."""

from __future__ import annotations

from html import escape

from analyzer.events.clock import format_time
from analyzer.model import Report, TimelineEntry

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d1d1f;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 8px}
.verdict{border:2px solid #c0392b;border-radius:8px;padding:12px 16px;background:#fdf2f0}
.verdict.unknown{border-color:#b7950b;background:#fcf8e8}
.verdict.none{border-color:#1e8449;background:#eafaf1}
.cat{font-weight:700;font-size:18px} .conf{color:#555;margin-left:8px}
table{border-collapse:collapse;width:100%;font-size:13px} td,th{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}
td.mono,code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;word-break:break-all}
.root_cause{color:#c0392b;font-weight:600} .symptom{color:#7f8c8d} .context{color:#2471a3}
svg text{font-family:ui-monospace,monospace;font-size:11px}
.note{color:#666;font-size:12px}
"""


def _lanes(entries: list[TimelineEntry]) -> list[str]:
    lanes: list[str] = []
    for t in entries:
        name = _lane(t)
        if name not in lanes:
            lanes.append(name)

    def key(name: str) -> tuple[int, int, str]:
        if name.startswith("rank "):
            return (0, int(name.split()[1].split("@")[0]), name)
        return (1, 0, name)

    return sorted(lanes, key=key)


def _lane(t: TimelineEntry) -> str:
    if t.rank is not None:
        return f"rank {t.rank}" + (f"@{t.host}" if t.host else "")
    return t.host or t.file


def timeline_svg(report: Report, width: int = 1100) -> tuple[str, bool]:
    """The drawing, and whether the x axis is real time (else: order of appearance)."""
    entries = list(report.timeline)
    if not entries:
        return "", False
    timed = [t.time for t in entries if t.time is not None]
    real_time = len(timed) >= 2 and max(timed) > min(timed)
    lanes = _lanes(entries)
    row, left, top = 22, 200, 20
    height = top + row * len(lanes) + 40
    x0, x1 = left, width - 20
    if real_time:
        lo, hi = min(timed), max(timed)

        def xpos(i: int, t: TimelineEntry) -> float:
            if t.time is None:
                return x1
            return x0 + (x1 - x0) * (t.time - lo) / (hi - lo)
    else:

        def xpos(i: int, t: TimelineEntry) -> float:
            return x0 + (x1 - x0) * (i / max(1, len(entries) - 1))

    ff = report.verdict.first_failure
    cascade_sigs = {c.what for c in report.cascade}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="timeline">']
    for i, lane in enumerate(lanes):
        y = top + i * row
        parts.append(f'<text x="4" y="{y + 14}">{escape(lane[:28])}</text>')
        parts.append(f'<line x1="{x0}" y1="{y + 10}" x2="{x1}" y2="{y + 10}" stroke="#e5e5e5"/>')
    for i, t in enumerate(entries):
        y = top + lanes.index(_lane(t)) * row + 10
        x = xpos(i, t)
        is_first = ff.file == t.file and ff.line == t.line
        color = (
            "#c0392b" if is_first else ("#e67e22" if any(t.kind in w or t.summary[:40] in w for w in cascade_sigs) else "#7f8c8d")
        )
        r = 7 if is_first else 4
        label = escape(f"{format_time(t.time) or '?'} {_lane(t)}: {t.summary[:120]} ({t.file}:{t.line})")
        parts.append(f'<circle cx="{x:.1f}" cy="{y}" r="{r}" fill="{color}"><title>{label}</title></circle>')
        if is_first:
            parts.append(f'<text x="{x + 9:.1f}" y="{y - 6}" fill="#c0392b">first failure</text>')
    axis_y = top + row * len(lanes) + 14
    parts.append(f'<line x1="{x0}" y1="{axis_y}" x2="{x1}" y2="{axis_y}" stroke="#999"/>')
    if real_time:
        parts.append(f'<text x="{x0}" y="{axis_y + 16}">{escape(format_time(min(timed)) or "")}</text>')
        parts.append(f'<text x="{x1 - 170}" y="{axis_y + 16}">{escape(format_time(max(timed)) or "")}</text>')
    else:
        parts.append(f'<text x="{x0}" y="{axis_y + 16}">order of appearance (the logs carry no comparable clock)</text>')
    parts.append("</svg>")
    return "".join(parts), real_time


def render_html(report: Report) -> str:
    v = report.verdict
    ff = v.first_failure
    svg, real_time = timeline_svg(report)
    cls = f"verdict {v.category.value}" if v.category.value in ("unknown", "none") else "verdict"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>postmortem: {escape(v.category.value)} - {escape(report.run_dir)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>postmortem: <code>{escape(report.run_dir)}</code></h1>",
        f'<div class="{cls}"><span class="cat">{escape(v.category.value)}</span>'
        + (f" <code>{escape(v.subcategory)}</code>" if v.subcategory else "")
        + f'<span class="conf">confidence {v.confidence:.2f}</span>',
        f"<p><strong>{escape(v.title)}</strong></p><p>{escape(v.explanation)}</p>",
    ]
    if ff.file:
        who = (f"rank {ff.rank}" if ff.rank is not None else "rank ?") + (f" on {ff.host}" if ff.host else "")
        out.append(
            f"<p>First failure: {escape(who)}, {escape(((format_time(ff.time) or '') + (' (approx.)' if ff.time_approx else '')) if ff.time else 'time unknown')}, <code>{escape(ff.file)}:{ff.line}</code></p>"
        )
    if report.alternatives:
        out.append(
            "<p>Alternatives: "
            + ", ".join(f"{escape(a.category.value)} ({a.confidence:.2f})" for a in report.alternatives)
            + "</p>"
        )
    out.append(f'<p class="note">fingerprint <code>{escape(v.fingerprint)}</code></p></div>')
    if v.remediation:
        out.append("<h2>What to do</h2><ol>" + "".join(f"<li>{escape(r)}</li>" for r in v.remediation) + "</ol>")
    if svg:
        out.append("<h2>Timeline</h2>")
        out.append(svg)
        if not real_time:
            out.append('<p class="note">Placement is approximate: events are drawn in the order they appear.</p>')
    if report.cascade:
        out.append("<h2>Cascade</h2><ol>" + "".join(f"<li>{escape(c.what)}</li>" for c in report.cascade) + "</ol>")
    if report.evidence:
        out.append("<h2>Evidence</h2><table><tr><th>role</th><th>where</th><th>who</th><th>line</th></tr>")
        for e in report.evidence:
            who = (f"rank {e.rank}" if e.rank is not None else "") + (f" {e.host}" if e.host else "")
            out.append(
                f'<tr><td class="{e.role.value}">{e.role.value}</td><td class="mono">{escape(e.file)}:{e.line}</td>'
                f'<td>{escape(who.strip() or "-")}</td><td class="mono">{escape(e.text)}</td></tr>'
            )
        out.append("</table>")
    if report.missing_evidence:
        out.append("<h2>Missing evidence</h2><ul>" + "".join(f"<li>{escape(m)}</li>" for m in report.missing_evidence) + "</ul>")
    out.append("<h2>Sources</h2><table><tr><th>file</th><th>kind</th><th>status</th><th>note</th></tr>")
    for s in report.sources:
        out.append(
            f'<tr><td class="mono">{escape(s.file)}</td><td>{s.kind.value}</td><td>{s.status}</td><td>{escape(s.note)}</td></tr>'
        )
    out.append("</table>")
    out.append(f'<p class="note">postmortem {escape(report.tool_version)}</p></body></html>')
    return "\n".join(out) + "\n"
