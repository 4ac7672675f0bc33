"""One self-contained HTML file (no network): the verdict, the evidence and a drawing of the
timeline, ranks (or hosts) against time, with the first failure and its cascade marked."""

from __future__ import annotations

import re
from html import escape

from analyzer.model import Report, TimelineEntry
from analyzer.report import layout, safe

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
.note{color:#666;font-size:12px} .warning{color:#9a6700;font-weight:600}\npre.decisive{background:#f6f8fa;padding:8px;white-space:pre-wrap;word-break:break-all;font-size:12px}\n.drawing{overflow-x:auto} td.where{white-space:nowrap;word-break:normal} .alts{color:#555}
"""


LANE_LABEL_MAX = 36  # characters of a lane label; longer file names are cut in the middle
MONO_W = 6.7  # width of one character of the drawing's 11px monospace font, rounded up
EARLIER_W = 90  # width of the compressed zone for events before the failure window


def _lane_key(t: TimelineEntry) -> tuple[int, int, str]:
    """One lane per rank; events with no rank go to their host's lane, else their file's."""
    if t.rank is not None:
        return (0, t.rank, "")
    return (1, 0, t.host or t.file)


def _lane_labels(entries: list[TimelineEntry]) -> dict[tuple[int, int, str], str]:
    hosts: dict[int, dict[str, int]] = {}
    for t in entries:
        if t.rank is not None and t.host:
            hosts.setdefault(t.rank, {})
            hosts[t.rank][t.host] = hosts[t.rank].get(t.host, 0) + 1
    labels = {}
    for t in entries:
        key = _lane_key(t)
        if key in labels:
            continue
        if t.rank is not None:
            seen = hosts.get(t.rank)
            host = max(sorted(seen), key=lambda h: seen[h]) if seen else None
            labels[key] = f"rank {t.rank}" + (f" · {host}" if host else "")
        else:
            labels[key] = safe.middle_ellipsis(safe.escape_controls(key[2]), LANE_LABEL_MAX)
    return dict(sorted(labels.items()))


def _text_w(text: str) -> float:
    return len(text) * MONO_W


def timeline_svg(report: Report, width: int = 1100) -> tuple[str, bool]:
    """The drawing, and whether the x axis is real time (else: order of appearance).

    One lane per rank (the host in its label). Events without a time are placed by their
    neighbours (`layout.placed_timeline`) and drawn hollow, marked approximate. The axis covers
    the failure window; earlier events sit in a compressed zone at the left, after a break.
    """
    placed = layout.placed_timeline(report)
    if not placed:
        return "", False
    entries = [p.entry for p in placed]
    labels = _lane_labels(entries)
    keys = list(labels)
    times = [p.time for p in placed if p.time is not None]
    real_time = len(times) >= 2 and max(times) > min(times)
    win = layout.window(placed) if real_time else layout.Window([], placed, None)
    row = 22 if len(keys) <= 24 else 14
    top = 30
    left = int(max(_text_w(v) for v in labels.values())) + 16
    height = top + row * len(keys) + 48 + (18 if win.earlier else 0)
    x1 = width - 20
    zone = EARLIER_W if win.earlier else 0
    x0 = left + zone + (16 if zone else 0)
    shown_times = [p.time for p in win.shown if p.time is not None]
    lo = min(shown_times) if shown_times else 0.0
    hi = max(shown_times) if shown_times else 1.0
    if hi <= lo:
        hi = lo + 1.0
    early = [p.time for p in win.earlier if p.time is not None]
    e_lo, e_hi = (min(early), max(early)) if early else (0.0, 1.0)

    def xpos(i: int, p: layout.Placed) -> float:
        if not real_time or p.time is None:
            return x0 + (x1 - x0) * (i / max(1, len(placed) - 1))
        if p in win.earlier:
            span = (e_hi - e_lo) or 1.0
            return left + 4 + (zone - 8) * ((p.time - e_lo) / span)
        return x0 + (x1 - x0) * (p.time - lo) / (hi - lo)

    root_at = next((i for i, p in enumerate(placed) if p.is_root), None)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="timeline" class="timeline">'
    ]
    for i, key in enumerate(keys):
        y = top + i * row
        parts.append(
            f'<g class="lane" data-lane="{escape(labels[key])}"><text class="lane-label" x="4" y="{y + row // 2 + 4}">'
            f'{escape(labels[key])}</text><line x1="{left}" y1="{y + row // 2}" x2="{x1}" y2="{y + row // 2}" stroke="#e5e5e5"/></g>'
        )
    axis_y = top + row * len(keys) + 10
    if zone:
        bx = left + zone + 8
        parts.append(
            f'<g class="axis-break"><line x1="{bx - 4}" y1="{top - 6}" x2="{bx - 4}" y2="{axis_y + 6}" stroke="#bbb" '
            f'stroke-dasharray="3,3"/><line x1="{bx - 8}" y1="{axis_y + 6}" x2="{bx}" y2="{axis_y - 6}" stroke="#666"/>'
            f'<line x1="{bx - 2}" y1="{axis_y + 6}" x2="{bx + 6}" y2="{axis_y - 6}" stroke="#666"/></g>'
        )
    first_label: tuple[float, int] | None = None
    for i, p in enumerate(placed):
        t = p.entry
        y = top + keys.index(_lane_key(t)) * row + row // 2
        x = xpos(i, p)
        after = root_at is not None and i > root_at
        color = "#c0392b" if p.is_root else ("#e67e22" if after else "#7f8c8d")
        r = 7 if p.is_root else 4
        stamp = layout.when(p.time, p.approx) if p.time is not None else "time unknown"
        lane = labels[_lane_key(t)]
        note = " (time approximate: placed by the lines around it)" if p.approx else ""
        tip = f"{stamp} {lane}: {safe.strip_sequences(t.summary[:160])} ({safe.escape_controls(t.file)}:{t.line}){note}"
        cls = (
            "event" + (" root" if p.is_root else "") + (" approx" if p.approx else "") + (" earlier" if p in win.earlier else "")
        )
        fill = "white" if p.approx else color
        dash = ' stroke-dasharray="2,2"' if p.approx else ""
        parts.append(
            f'<circle class="{cls}" cx="{x:.1f}" cy="{y}" r="{r}" fill="{fill}" stroke="{color}" stroke-width="2"{dash}>'
            f"<title>{escape(tip)}</title></circle>"
        )
        if p.is_root:
            first_label = (x, y)
    if first_label is not None:
        x, y = first_label
        text = "first failure" + (" (≈ time)" if next(p for p in placed if p.is_root).approx else "")
        w = _text_w(text)
        if x + 10 + w <= width - 4:
            parts.append(f'<text class="first-label" x="{x + 10:.1f}" y="{max(12, y - 8)}" fill="#c0392b">{escape(text)}</text>')
        else:
            parts.append(
                f'<text class="first-label" x="{x - 10:.1f}" y="{max(12, y - 8)}" fill="#c0392b" '
                f'text-anchor="end">{escape(text)}</text>'
            )
    parts.append(f'<line x1="{left}" y1="{axis_y}" x2="{x1}" y2="{axis_y}" stroke="#999"/>')
    ty = axis_y + 16
    if real_time:
        if zone:
            # below the axis's own labels, from the left edge: never over them
            label = f"{layout.plural(len(win.earlier), 'earlier event')}, from {layout.when(e_lo)[:16]}"
            parts.append(f'<text class="axis" x="{left}" y="{ty + 16}">{escape(label)}</text>')
        parts.append(f'<text class="axis" x="{x0}" y="{ty}">{escape(layout.when(lo))}</text>')
        parts.append(f'<text class="axis" x="{x1}" y="{ty}" text-anchor="end">{escape(layout.when(hi))}</text>')
    else:
        parts.append(f'<text class="axis" x="{x0}" y="{ty}">order of appearance (the logs carry no comparable clock)</text>')
    parts.append("</svg>")
    return "".join(parts), real_time


def _h(text: str) -> str:
    """Log text for HTML: escape sequences and controls removed, then escaped."""
    return escape(safe.strip_sequences(text))


def _prose(text: str) -> str:
    """The project's own prose (remediation, missing evidence): escaped, its `code` spans as <code>."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", _h(text))


def _n(text: str) -> str:
    """A file name for HTML: controls shown escaped, then escaped."""
    return escape(safe.escape_controls(text))


def render_html(report: Report) -> str:
    v = report.verdict
    ff = v.first_failure
    svg, real_time = timeline_svg(report)
    cls = f"verdict {v.category.value}" if v.category.value in ("unknown", "none") else "verdict"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>postmortem: {escape(v.category.value)} - {_n(report.run_dir)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>postmortem: <code>{_n(report.run_dir)}</code></h1>",
        f'<div class="{cls}"><span class="cat">{escape(v.category.value)}</span>'
        + (f" <code>{escape(v.subcategory)}</code>" if v.subcategory else "")
        + f'<span class="conf">confidence {v.confidence:.2f}</span>',
        f"<p><strong>{_h(v.title)}</strong></p>",
    ]
    line = layout.decisive(report)
    if line is not None:
        out.append(
            f'<p>Decisive line, <code>{_n(layout.where(line.file, line.line))}</code>:</p><pre class="decisive">{_h(line.text)}</pre>'
        )
    else:
        out.append(f"<p>{_h(v.explanation)}</p>")
    if ff.file or ff.rank is not None or ff.host:
        fw = layout.first_when(report)
        out.append(
            f"<p>First failure: {_h(layout.first_who(ff.rank, ff.host, ff.rank_note))}, {escape(fw.stamp)}"
            + escape(fw.approx_note)
            + (f", <code>{_n(layout.where(ff.file, ff.line))}</code>" if ff.file else "")
            + "</p>"
        )
    card = layout.gpu(ff.pci_bus_id, ff.gpu_index)
    if card:
        out.append(f"<p>{_h(card)}</p>")
    if layout.alternatives(report):
        label = layout.alternatives_label(report)
        out.append(
            f'<p class="alts">{label}: '
            + ", ".join(f"{escape(a.category.value)} ({a.confidence:.2f})" for a in layout.alternatives(report))
            + "</p>"
        )
    out.append(f'<p class="note">fingerprint <code>{escape(v.fingerprint)}</code></p></div>')
    for w in report.warnings:
        out.append(f'<p class="warning">Warning: {_h(w)}</p>')
    if report.cascade:
        out.append("<h2>What followed</h2><ul>")
        for what, when in layout.followed(report):
            out.append(f"<li>{_h(what)}{escape(when)}</li>")
        out.append("</ul>")
    if v.remediation:
        out.append("<h2>What to do</h2><ol>" + "".join(f"<li>{_prose(r)}</li>" for r in v.remediation) + "</ol>")
    if svg:
        out.append("<h2>Timeline</h2>")
        out.append('<div class="drawing">' + svg + "</div>")
        out.append(
            '<p class="note">Filled: time from the log. Hollow, dashed: no time in the line, placed by the lines around it.'
            + ("" if real_time else " Events are drawn in the order they appear.")
            + "</p>"
        )
    if report.evidence:
        out.append("<h2>Evidence</h2><table><tr><th>role</th><th>where</th><th>who</th><th>line</th></tr>")
        for e in layout.distinct_lines(report.evidence):
            out.append(
                f'<tr><td class="{e.role.value}">{e.role.value}</td><td class="mono where">{_n(layout.where(e.file, e.line))}</td>'
                f'<td>{_h(layout.who(e.rank, e.host))}</td><td class="mono">{_h(e.text)}</td></tr>'
            )
        out.append("</table>")
    if report.missing_evidence:
        out.append("<h2>Missing evidence</h2><ul>" + "".join(f"<li>{_prose(m)}</li>" for m in report.missing_evidence) + "</ul>")
    out.append("<h2>Sources</h2><table><tr><th>file</th><th>kind</th><th>status</th><th>note</th></tr>")
    for src in report.sources:
        out.append(
            f'<tr><td class="mono">{_n(src.file)}</td><td>{src.kind.value}</td><td>{escape(src.status)}</td><td>{_h(src.note)}</td></tr>'
        )
    out.append("</table>")
    out.append(f'<p class="note">{_h(v.explanation)}</p>')
    out.append(f'<p class="note">postmortem {escape(report.tool_version)}</p></body></html>')
    return "\n".join(out) + "\n"
