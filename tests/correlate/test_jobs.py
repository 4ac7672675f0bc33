"""Several jobs in one run dir are said so in `warnings`, with a pointer to `triage`; one job's
directory (every corpus case) never is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.correlate.jobs import job_ids, run_ids, several_jobs
from analyzer.model import Event, EventKind, Location
from analyzer.pipeline import analyze

from ..conftest import REPO

REAL = REPO / "corpora" / "real"


def test_two_job_ids_in_file_names(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(REPO / "examples" / "oom-cascade" / "train.log", run / "slurm-4242.out")
    shutil.copy(REPO / "examples" / "shm-bus-error" / "train.log", run / "slurm-4243.out")
    report = analyze(run)
    warning = next(w for w in report.warnings if "jobs" in w)
    assert "2 jobs" in warning and "4242" in warning and "4243" in warning
    assert "postmortem triage" in warning


def test_logs_hours_apart_are_two_jobs(tmp_path: Path) -> None:
    # two real jobs' logs (2024-11-20 and 2025-05-28) dropped into one directory
    run = tmp_path / "run"
    (run / "a").mkdir(parents=True)
    (run / "b").mkdir(parents=True)
    shutil.copy(REAL / "real-oom-001" / "train.log", run / "a" / "train.log")
    shutil.copy(REAL / "real-p2p-010" / "train.log", run / "b" / "train.log")
    report = analyze(run)
    warning = next(w for w in report.warnings if "time spans" in w)
    assert "2 time spans more than 3 hours apart" in warning and "a/train.log" in warning and "b/train.log" in warning


def test_one_job_over_hours_is_one_job() -> None:
    # rank0.log and rank1.log of one job overlap although the job ran for 4.7 hours
    report = analyze(REAL / "real-p2p-009")
    assert not any("jobs" in w or "time spans" in w for w in report.warnings)


# cases whose thread posted the logs of two runs (each file one run, a day apart): the warning is right
SEVERAL_RUNS = {"real-nd-080"}


@pytest.mark.parametrize("case", sorted(p.parent for p in REPO.glob("corpora/*/*/case.yaml")), ids=lambda p: p.name)
def test_no_corpus_case_is_taken_for_several_jobs(case: Path) -> None:
    warned = any("jobs" in w or "time spans" in w or "runs (run ids" in w for w in analyze(case).warnings)
    assert warned == (case.name in SEVERAL_RUNS)


def test_job_ids_from_paths() -> None:
    ids = job_ids(["slurm-4242.out", "job_4243/rank0.log", "node1/rank3.log", "jobid=4244/x.log", "epoch-100.log"])
    assert sorted(ids) == ["4242", "4243", "4244"]


def test_run_ids_from_launcher_lines() -> None:
    def ev(text: str, line: int) -> Event:
        return Event(EventKind.LINE, Location("launcher.log", line), text)

    # torchrun's launch-config dump prints `run_id : <id>`; `none` is the default, not an id
    assert run_ids([ev("  run_id           : 8a3f", 1), ev("  run_id           : none", 2)]) == {"8a3f": "launcher.log:1"}
    w = several_jobs([], [ev("  run_id           : 8a3f", 1), ev("  run_id           : 77c0", 9)])
    assert w is not None and "2 runs" in w
