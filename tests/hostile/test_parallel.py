"""Text files scanned in several processes give the very report one process gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.events import ingest as ingest_mod
from analyzer.events import parallel as parallel_mod
from analyzer.events.placement import CONTEXT_CAP
from analyzer.pipeline import Options, analyze, collect
from analyzer.report import render

from ..conftest import REPO

CASES = sorted(p.parent for p in (REPO / "corpora").rglob("case.yaml"))[:40] + sorted((REPO / "examples").iterdir())


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(REPO)) for c in CASES])
def test_parallel_scan_is_the_same_report(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = json.loads(render(analyze(case, Options(workers=1)), "json"))
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    two = json.loads(render(analyze(case, Options(workers=2)), "json"))
    assert two == one


def test_workers_only_when_worth_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.sources.discover import discover

    for i in range(3):
        (tmp_path / f"rank{i}.log").write_text("step 1\n")
    sources = discover(tmp_path)
    assert parallel_mod.workers_for(sources, 4) == 1  # too small
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    assert parallel_mod.workers_for(sources, 4) == 3
    assert parallel_mod.workers_for(sources, 1) == 1


def test_the_run_dir_limit_is_the_same_in_parallel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = b"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    for i in range(4):
        (tmp_path / f"rank{i}.log").write_bytes(b"step\n" * 200000 + line)  # ~1 MiB each
    limits = ingest_mod.Limits(total_bytes=2 << 20)
    one = render(analyze(tmp_path, Options(workers=1, limits=limits)), "json")
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    two = render(analyze(tmp_path, Options(workers=3, limits=limits)), "json")
    assert json.loads(one) == json.loads(two)
    assert "size limit for the whole run dir" in one


def _in_a_daemon(run: str) -> str:
    return render(analyze(Path(run), Options(workers=2)), "json")


def test_inside_a_pool_worker_one_process_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    for i in range(3):
        (tmp_path / f"rank{i}.log").write_text("step 1\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    with multiprocessing.get_context("fork").Pool(1) as pool:  # its workers are daemons
        out = pool.apply(_in_a_daemon, (str(tmp_path),))
    assert json.loads(out) == json.loads(render(analyze(tmp_path, Options(workers=1)), "json"))


# --- a large file read in parts ---------------------------------------------------------------

TRACEBACK = (
    "[rank3]: Traceback (most recent call last):\n"
    '[rank3]:   File "/workspace/train.py", line 498, in main\n'
    "[rank3]:     loss = model(batch).loss\n"
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 3 has a total capacity "
    "of 79.15 GiB of which 1.05 GiB is free.\n"
)


def _big_log(path: Path, mib: int) -> None:
    """Step lines, tqdm bars, more failure-sounding lines than the context cap allows (spread over
    every part), a traceback whose block runs over a 1 MiB boundary, the OOM near the end."""
    out = []
    size = 0
    i = 0
    placed = False
    while size < mib << 20:
        if i % 131 == 0:
            line = f"[rank3]: data loader error in step {i}, retrying\n"
        elif i % 5 == 0:
            line = f"Epoch {i // 1000}: {i % 100:3d}%|#####     | {i % 100}/100 [00:{i % 60:02d}<00:10, 5.1it/s]\n"
        else:
            line = f"[rank3]:[2024-05-01 00:00:{i % 60:02d},123] [INFO] step {i} loss {1.0 / (i + 1):.5f} lr 3.0e-04\n"
        if not placed and size > (2 << 20) - 150:  # the traceback starts a line or two before 2 MiB
            line, placed = TRACEBACK, True
        out.append(line)
        size += len(line)
        i += 1
    out.append(TRACEBACK)
    path.write_text("".join(out))


def test_a_file_read_in_parts_gives_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.scan.scanner import Scanner

    run = tmp_path / "run"
    run.mkdir()
    _big_log(run / "rank3.log", 6)
    one = render(analyze(run, Options(workers=1)), "json")
    joined: list[bool] = []
    join = Scanner.join

    def spy(self: Scanner, parts: list) -> object:
        result = join(self, parts)
        joined.append(len(parts) > 1 and result is not None)
        return result

    monkeypatch.setattr(Scanner, "join", spy)
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel_mod, "PART_BYTES", 1 << 20)
    two = render(analyze(run, Options(workers=2)), "json")
    assert joined == [True]  # read in parts and put together, not scanned again whole
    assert two == one
    # every event too, not only what the report shows of them (over 400 context lines: capped)
    events = collect(run, Options(workers=2)).events
    assert events == collect(run, Options(workers=1)).events
    in_file = (run / "rank3.log").read_text().count("data loader error")
    kept = sum(1 for e in events if e.message.startswith("data loader error"))
    assert in_file > CONTEXT_CAP >= kept > CONTEXT_CAP - 10  # the cap over the whole file, not per part
    report = json.loads(one)
    assert report["verdict"]["category"] == "oom_cascade"
    assert report["sources"][0]["lines"] == (run / "rank3.log").read_bytes().count(b"\n")


def test_many_files_some_in_parts_give_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _big_log(run / "rank3.log", 3)
    for r in range(6):
        lines = [f"[rank{r}]: step {i} loss 0.5\n" for i in range(3000 * (r + 1))]
        lines[100 * r] = f"[rank{r}]:[E ProcessGroupNCCL.cpp:1182] [Rank {r}] Watchdog caught collective operation timeout\n"
        (run / f"rank{r}.log").write_text("".join(lines))
    one = render(analyze(run, Options(workers=1)), "json")
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel_mod, "PART_BYTES", 1 << 20)
    for workers in (2, 3):
        assert render(analyze(run, Options(workers=workers)), "json") == one


def test_parts_past_the_limit_of_interesting_lines_are_scanned_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.scan import scanner as scanner_mod

    run = tmp_path / "run"
    run.mkdir()
    _big_log(run / "rank3.log", 4)
    monkeypatch.setattr(scanner_mod, "MAX_REGIONS", 30)  # reached in the second part
    one = render(analyze(run, Options(workers=1)), "json")
    assert "not examined" in one
    monkeypatch.setattr(parallel_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel_mod, "PART_BYTES", 1 << 20)
    assert render(analyze(run, Options(workers=2)), "json") == one


def test_parts_read_apart_are_the_whole_file(tmp_path: Path) -> None:
    import random

    from analyzer.sources.reader import Unplaced, iter_chunks

    rng = random.Random(7)
    path = tmp_path / "log"
    path.write_bytes(b"\n".join(b"x" * rng.choice([0, 5, 80, 900, 3000]) for _ in range(5000)) + b"\nno newline at the end")
    whole = list(iter_chunks(path, None, chunk=4096))
    size = path.stat().st_size
    for step in (4096, 3 * 4096, 10 * 4096):
        parts = []
        for start in range(0, size, step):
            parts += list(iter_chunks(path, None, chunk=4096, start=start, stop=start + step if start + step < size else None))
        assert parts == whole
    one_line = tmp_path / "one"
    one_line.write_bytes(b"y" * 20000 + b"\n")
    with pytest.raises(Unplaced):
        list(iter_chunks(one_line, None, chunk=4096, start=8192))
