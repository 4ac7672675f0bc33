"""Text files scanned in several processes give the very report one process gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.events import ingest as ingest_mod
from analyzer.pipeline import Options, analyze
from analyzer.report import render

from ..conftest import REPO

CASES = sorted(p.parent for p in (REPO / "corpora").rglob("case.yaml"))[:40] + sorted((REPO / "examples").iterdir())


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(REPO)) for c in CASES])
def test_parallel_scan_is_the_same_report(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = json.loads(render(analyze(case, Options(workers=1)), "json"))
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    two = json.loads(render(analyze(case, Options(workers=2)), "json"))
    assert two == one


def test_workers_only_when_worth_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.sources.discover import discover

    for i in range(3):
        (tmp_path / f"rank{i}.log").write_text("step 1\n")
    sources = discover(tmp_path)
    assert ingest_mod.workers_for(sources, 4) == 1  # too small
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    assert ingest_mod.workers_for(sources, 4) == 3
    assert ingest_mod.workers_for(sources, 1) == 1


def test_the_run_dir_limit_is_the_same_in_parallel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    for i in range(4):
        (tmp_path / f"rank{i}.log").write_bytes(b"step\n" * 200000 + line)  # ~1 MiB each
    limits = ingest_mod.Limits(total_bytes=2 << 20)
    one = render(analyze(tmp_path, Options(workers=1, limits=limits)), "json")
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    two = render(analyze(tmp_path, Options(workers=3, limits=limits)), "json")
    assert json.loads(one) == json.loads(two)
    assert "size limit for the whole run dir" in one


def _in_a_daemon(run: str) -> str:
    return render(analyze(Path(run), Options(workers=2)), "json")


def test_inside_a_pool_worker_one_process_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    for i in range(3):
        (tmp_path / f"rank{i}.log").write_text("step 1\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    monkeypatch.setattr(ingest_mod, "PARALLEL_MIN_BYTES", 0)
    with multiprocessing.get_context("fork").Pool(1) as pool:  # its workers are daemons
        out = pool.apply(_in_a_daemon, (str(tmp_path),))
    assert json.loads(out) == json.loads(render(analyze(tmp_path, Options(workers=1)), "json"))
