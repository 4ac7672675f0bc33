"""The fleet page (`triage --format html`) in a real headless browser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pandas", reason="triage needs the triage extra")

from click.testing import CliRunner  # noqa: E402

from analyzer.cli import main  # noqa: E402

from ..browser import dump_dom, screenshot  # noqa: E402
from ..conftest import REPO  # noqa: E402


def test_fleet_page_in_chromium(tmp_path: Path) -> None:
    runs = []
    for case in ("lab-shm-001", "lab-shm-002", "lab-oom-cascade-001", "lab-oom-cascade-004", "lab-hang-001"):
        for copy in range(2):
            dest = tmp_path / "runs" / f"{case}-{copy}"
            shutil.copytree(REPO / "corpora" / "lab" / case, dest, ignore=shutil.ignore_patterns("case.yaml"))
            runs.append(str(dest))
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(main, ["triage", *runs, "--no-db", "--jobs", "1", "--format", "html", "-o", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "<script" not in html and "http://" not in html.split("<body>")[0] and "<link" not in html  # self-contained
    dom = dump_dom(page, tmp_path / "profile")
    assert "postmortem triage: 10 job(s)" in dom
    assert "Jobs per category over time" in dom and "<rect" in dom
    assert "Recurring nodes" in dom and "labnode2" in dom  # both copies of the 2-node OOM job name it
    assert dom.count("<details") == len({line for line in dom.split("<details")[1:]})
    assert "postmortem-fingerprint" in dom and "## Remediation" in dom  # each group with its ticket text
    shot = tmp_path / "fleet.png"
    screenshot(page, shot, tmp_path / "profile2")
    assert shot.is_file() and shot.stat().st_size > 10_000
