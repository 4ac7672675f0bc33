"""The HTML report renders in a real headless browser: a screenshot and the page's text."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from analyzer.pipeline import analyze
from analyzer.report import render

from ..conftest import REPO

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")


@pytest.fixture
def page(tmp_path: Path) -> Path:
    report = analyze(REPO / "examples" / "oom-cascade")
    html = render(report, "html")
    assert "<script" not in html and "http://" not in html.split("</style>")[0]  # self-contained
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_page_text_in_a_real_browser(page: Path, tmp_path: Path) -> None:
    browser = _browser()
    dom = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "postmortem:" in dom
    assert "Timeline" in dom and "<circle" in dom
    assert "first failure" in dom
    assert "Evidence" in dom


def test_screenshot(page: Path, tmp_path: Path) -> None:
    browser = _browser()
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile2'}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a drawn page, not a blank one
