"""Ctrl-C in the middle of a batch leaves complete rows; a re-run analyzes only what is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the history needs the triage extra")

from sqlalchemy import create_engine, text  # noqa: E402

from corpora.fleet import make_fleet  # noqa: E402

from ..conftest import REPO  # noqa: E402


def _rows(db: Path) -> int:
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            if not conn.execute(text("SELECT name FROM sqlite_master WHERE name='jobs'")).first():
                return 0
            bad = conn.execute(text("SELECT count(*) FROM jobs WHERE record IS NULL OR fingerprint = ''")).scalar()
            assert bad == 0
            return int(conn.execute(text("SELECT count(*) FROM jobs")).scalar() or 0)
    finally:
        engine.dispose()


def test_ctrl_c_then_resume(tmp_path: Path) -> None:
    fleet = make_fleet(tmp_path / "runs", n_cases=40, copies=3, n_healthy=0, n_unknown=0)
    jobs = [str(j) for j in fleet.jobs if j.name != "binary-only"]
    db = tmp_path / "h.sqlite"
    cmd = [sys.executable, "-m", "analyzer", "triage", *jobs, "--db", f"sqlite:///{db}", "--jobs", "2", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while _rows(db) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    stored = _rows(db)
    if proc.returncode == 0 or stored == len(jobs):
        pytest.skip("the batch finished before the interrupt arrived")
    assert proc.returncode == 130 and "a re-run resumes" in err, err[-3000:]
    assert 3 <= stored < len(jobs)
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"analyzed {len(jobs) - stored}, from history {stored}," in again.stderr
    assert _rows(db) == len(jobs)
