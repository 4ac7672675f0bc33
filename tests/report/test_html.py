"""The HTML report renders in a real headless browser: a screenshot and the page's text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from analyzer.model import Report, TimelineEntry
from analyzer.pipeline import analyze
from analyzer.report import render

from ..browser import dump_dom, screenshot
from ..conftest import REPO


@pytest.fixture
def page(tmp_path: Path) -> Path:
    report = analyze(REPO / "examples" / "oom-cascade")
    html = render(report, "html")
    assert "<script" not in html and "http://" not in html.split("</style>")[0]  # self-contained
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_page_text_in_a_real_browser(page: Path, tmp_path: Path) -> None:
    dom = dump_dom(page, tmp_path / "profile")
    assert "postmortem:" in dom
    assert "Timeline" in dom and "<circle" in dom
    assert "first failure" in dom
    assert "Evidence" in dom


def test_screenshot(page: Path, tmp_path: Path) -> None:
    data = screenshot(page, tmp_path / "shot.png", tmp_path / "profile2")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a drawn page, not a blank one


# The timeline drawing, checked on the DOM that chromium builds and lays out: a probe script
# (added to a copy of the page, never to the report) writes every text's box and every lane.
PROBE = """<script>
const svg = document.querySelector('svg.timeline');
const W = svg.width.baseVal.value, H = svg.height.baseVal.value;
const texts = [...svg.querySelectorAll('text')].map(t => { const b = t.getBBox();
  return {text: t.textContent, cls: t.getAttribute('class'), x: b.x, y: b.y, w: b.width, h: b.height}; });
const events = [...svg.querySelectorAll('circle.event')].map(c => ({cls: c.getAttribute('class'),
  cx: +c.getAttribute('cx'), title: c.querySelector('title').textContent}));
const lanes = [...svg.querySelectorAll('g.lane')].map(g => g.dataset.lane);
const out = document.createElement('pre'); out.id = 'probe';
out.textContent = JSON.stringify({W, H, texts, events, lanes, brk: !!svg.querySelector('.axis-break')});
document.body.appendChild(out);
</script>"""


def _probe(report: Report, tmp_path: Path) -> dict[str, Any]:
    page = tmp_path / "probe.html"
    page.write_text(render(report, "html").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = dump_dom(page, tmp_path / "p", "--virtual-time-budget=5000")
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert m, dom[-2000:]
    return json.loads(html.unescape(m.group(1)))


def _inside(data: dict[str, Any]) -> None:
    for t in data["texts"]:
        assert t["x"] >= 0 and t["x"] + t["w"] <= data["W"] + 0.5, t
        assert t["y"] >= 0 and t["y"] + t["h"] <= data["H"] + 0.5, t


@pytest.fixture(scope="module")
def cascade64(tmp_path_factory: pytest.TempPathFactory) -> Report:
    from ..test_cascade_64 import make_run

    return analyze(make_run(tmp_path_factory.mktemp("c64") / "run"))


def test_one_lane_per_rank_with_its_host(cascade64: Report, tmp_path: Path) -> None:
    data = _probe(cascade64, tmp_path)
    ranks = [lane for lane in data["lanes"] if lane.startswith("rank ")]
    assert ranks == [f"rank {r} · node{r // 8}" for r in range(64)]
    assert len(data["lanes"]) == len(set(data["lanes"]))
    _inside(data)


def test_untimed_root_is_placed_by_its_neighbours_and_marked(tmp_path: Path) -> None:
    report = analyze(REPO / "corpora" / "lab" / "lab-oom-cascade-004")  # the kernel log has uptime stamps only
    data = _probe(report, tmp_path)
    root = next(e for e in data["events"] if "root" in e["cls"])
    assert "approx" in root["cls"] and "time approximate" in root["title"]
    timed = [e["cx"] for e in data["events"] if "approx" not in e["cls"]]
    assert root["cx"] <= min(timed) + 0.5  # before what it set off, not at the right edge
    assert any(t["cls"] == "first-label" and "≈" in t["text"] for t in data["texts"])
    _inside(data)


def test_axis_is_windowed_on_the_failure_with_a_break(cascade64: Report, tmp_path: Path) -> None:
    from dataclasses import replace

    noise = tuple(
        TimelineEntry(1719000000.0 + 60 * i, "node3", None, "aer", "corrected PCIe error", "node3/dmesg.log", 100 + i)
        for i in range(200)
    )
    data = _probe(replace(cascade64, timeline=noise + cascade64.timeline), tmp_path)
    assert data["brk"]
    early = [e["cx"] for e in data["events"] if "earlier" in e["cls"]]
    rest = [e["cx"] for e in data["events"] if "earlier" not in e["cls"]]
    assert len(early) == 200 and max(early) < min(rest)
    root = next(e for e in data["events"] if "root" in e["cls"])
    watchdog = [e["cx"] for e in data["events"] if "ALLREDUCE" in e["title"]]
    assert min(watchdog) - root["cx"] > 500  # 10 minutes of the job's own time fill the axis
    assert any(t["text"].startswith("200 earlier events, from 2024-06-21 20:00") for t in data["texts"])
    axis = [t for t in data["texts"] if t["cls"] == "axis"]
    for a in axis:  # the axis labels do not overlap each other
        for b in axis:
            if a is not b and abs(a["y"] - b["y"]) < a["h"]:
                assert a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"], (a, b)
    _inside(data)


def test_first_failure_label_at_the_right_edge_is_not_clipped(cascade64: Report, tmp_path: Path) -> None:
    from dataclasses import replace

    v = cascade64.verdict
    last = max(cascade64.timeline, key=lambda t: t.time or 0)
    moved = replace(v, first_failure=replace(v.first_failure, file=last.file, line=last.line, time=last.time))
    data = _probe(replace(cascade64, verdict=moved), tmp_path)
    label = next(t for t in data["texts"] if t["cls"] == "first-label")
    assert label["x"] + label["w"] <= data["W"]
    _inside(data)
