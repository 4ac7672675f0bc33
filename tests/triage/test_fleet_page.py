"""The fleet page (`triage --format html`) in a real headless browser."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pandas", reason="triage needs the triage extra")

from click.testing import CliRunner  # noqa: E402

from analyzer.cli import main  # noqa: E402

from ..conftest import REPO  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")


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
    browser = _browser()
    dom = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "postmortem triage: 10 job(s)" in dom
    assert "Jobs per category over time" in dom and "<rect" in dom
    assert "Recurring nodes" in dom and "labnode2" in dom  # both copies of the 2-node OOM job name it
    assert dom.count("<details") == len({line for line in dom.split("<details")[1:]})
    assert "postmortem-fingerprint" in dom and "## Remediation" in dom  # each group with its ticket text
    shot = tmp_path / "fleet.png"
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
    assert shot.is_file() and shot.stat().st_size > 10_000
