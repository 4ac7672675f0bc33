"""Hostile run dirs: no traceback, no hang, nothing read outside, every bound noted."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import lzma
import os
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from analyzer.events.ingest import Limits, build_scanner, ingest
from analyzer.model import Report, SourceKind
from analyzer.pipeline import Options, analyze
from analyzer.report import render
from analyzer.signatures.loader import database, line_patterns
from analyzer.sources.discover import discover

OOM = b"[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 141.25 MiB is free.\n"
FILLER = b"[rank2]: step 100 loss 2.3412 lr 0.0001 tokens/s 81234\n"


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """fn() in a thread; fails (instead of hanging the suite) when it takes longer."""
    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    return box[0] if box else None


def _source(report: Report, name: str):  # type: ignore[no-untyped-def]
    return next(s for s in report.sources if s.file == name)


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True, timeout=timeout)


# --- structured files ------------------------------------------------------------------------


def test_deeply_nested_json_is_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "error.json").write_text('{"message": ' + "[" * 2000 + "]" * 2000 + "}")
    (tmp_path / "train.log").write_bytes(OOM)
    report = analyze(tmp_path, Options())
    assert report.verdict.category.value == "oom_cascade"
    assert _source(report, "error.json").status in ("error", "parsed", "skipped")


@pytest.mark.parametrize(
    "extra",
    [
        '"extraInfo": "s"',
        '"extraInfo": {"py_callstack": 3, "timestamp": "99999999999999999999"}',
        '"extraInfo": {"py_callstack": "x", "timestamp": "\u00b2"}',
        '"extraInfo": {"timestamp": -5}',
        '"extraInfo": ["a"], "message": {"message": 7}',
    ],
)
def test_odd_error_json_fields_are_ignored(tmp_path: Path, extra: str) -> None:
    (tmp_path / "error.json").write_text('{"message": {"message": "RuntimeError: CUDA out of memory", ' + extra + "}}")
    report = analyze(tmp_path, Options())
    assert _source(report, "error.json").status in ("parsed", "error")
    assert json.loads(render(report, "json"))["sources"][0]["file"] == "error.json"


# --- the walk ----------------------------------------------------------------------------------


def test_a_thousand_nested_directories(tmp_path: Path) -> None:
    d = tmp_path
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(1000):  # relative steps: the full path is far beyond PATH_MAX
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open("deep.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write(OOM)
    finally:
        os.close(fd)
    (d / "train.log").write_bytes(OOM)
    try:
        report = analyze(tmp_path, Options())
    finally:
        _remove_deep(tmp_path, "d", "deep.log")
    assert report.verdict.category.value == "oom_cascade"
    deep = [s for s in report.sources if "deeper than" in s.note]
    assert len(deep) == 1 and deep[0].file.count("/") == 32


def _remove_deep(top: Path, name: str, leaf: str) -> None:
    """Remove a chain top/name/name/.../leaf without recursion (shutil.rmtree would recurse)."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leaf, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


def test_a_path_longer_than_path_max(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir("n" * 250, dir_fd=fd)
            nfd = os.open("n" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open("x.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write(OOM)
    finally:
        os.close(fd)
    try:
        report = analyze(tmp_path, Options())  # no exception; the file is noted
    finally:
        _remove_deep(tmp_path, "n" * 250, "x.log")
    assert any(s.status in ("error", "skipped") for s in report.sources)


def test_an_unreadable_subdirectory_is_noted(tmp_path: Path) -> None:
    if os.getuid() == 0:
        pytest.skip("root reads every directory")
    (tmp_path / "node1").mkdir()
    (tmp_path / "node1" / "rank1.log").write_bytes(OOM)
    os.chmod(tmp_path / "node1", 0)
    try:
        report = analyze(tmp_path, Options())
    finally:
        os.chmod(tmp_path / "node1", 0o755)
    assert "directory not read" in _source(report, "node1").note


def test_a_file_name_with_invalid_utf8_and_output(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / os.fsdecode(b"rank0-\xff\xfe.log")).write_bytes(OOM)
    out = tmp_path / "report.json"
    proc = _cli("analyze", str(run), "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(out.read_bytes().decode("utf-8"))
    assert [s["file"] for s in data["sources"]] == ["rank0-\\xff\\xfe.log"]
    stdout = _cli("analyze", str(run), "--format", "json").stdout
    assert json.loads(stdout.decode("utf-8"))["verdict"]["category"] == "oom_cascade"


# --- contents ----------------------------------------------------------------------------------


COMPRESSORS = {
    "gz": gzip.compress,
    "xz": lzma.compress,
    "bz2": bz2.compress,
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
def test_a_truncated_archive_keeps_what_was_read(tmp_path: Path, ext: str) -> None:
    # varied lines: bzip2 gives nothing of a block until the block is whole
    data = OOM + b"".join(b"[rank2]: step %d loss %d.%04d\n" % (i, i % 7, i * 7919 % 10000) for i in range(100000))
    packed = COMPRESSORS[ext](data)
    (tmp_path / f"rank2.log.{ext}").write_bytes(packed[: len(packed) // 2])
    report = analyze(tmp_path, Options())
    assert report.verdict.category.value == "oom_cascade"
    assert any(e.file == f"rank2.log.{ext}" and e.line == 1 for e in report.evidence)
    assert "truncated" in _source(report, f"rank2.log.{ext}").note


def test_a_huge_line_does_not_shift_later_lines(tmp_path: Path) -> None:
    (tmp_path / "rank2.log").write_bytes(b"x" * (10 << 20) + b"\n" + OOM + FILLER)
    report = analyze(tmp_path, Options())
    assert [(e.file, e.line) for e in report.evidence if e.role.value == "root_cause"][0] == ("rank2.log", 2)
    src = _source(report, "rank2.log")
    assert src.lines == 3 and "longer than" in src.note


def test_a_gzip_bomb_stops_at_the_file_limit(tmp_path: Path) -> None:
    member = gzip.compress(FILLER * 300000, compresslevel=9)  # ~16 MiB each
    with (tmp_path / "rank2.log.gz").open("wb") as f:
        f.write(gzip.compress(OOM))
        for _ in range(1536):  # ~24 GiB expanded
            f.write(member)
    limits = Limits(file_bytes=64 << 20)
    report = _within(60, lambda: analyze(tmp_path, Options(limits=limits)))
    assert isinstance(report, Report)
    assert report.verdict.category.value == "oom_cascade"
    assert "size limit per file" in _source(report, "rank2.log.gz").note


def test_the_run_dir_limit_and_the_time_budget_are_noted(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"rank{i}.log").write_bytes(OOM + FILLER * 40000)  # ~2.2 MiB each
    report = analyze(tmp_path, Options(limits=Limits(total_bytes=3 << 20)))
    notes = [s.note for s in report.sources]
    assert any("size limit for the whole run dir" in n for n in notes), notes
    report = analyze(tmp_path, Options(limits=Limits(time_budget=0.0)))
    assert all("time budget" in s.note for s in report.sources)


def test_the_core_budget_is_noted(tmp_path: Path) -> None:
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[16] = 4  # ET_CORE
    (tmp_path / "core.4242").write_bytes(bytes(header) + b"\0" * 4096)
    report = analyze(tmp_path, Options(limits=Limits(core_budget=0.0)))
    src = _source(report, "core.4242")
    assert src.kind is SourceKind.CORE_DUMP and "time budget for cores" in src.note


def test_work_after_the_region_cap_is_bounded(tmp_path: Path) -> None:
    warn = b"node0:1234:1250 [0] NCCL WARN NET/IB : Got async event : port error\n"
    (tmp_path / "nccl.log").write_bytes(warn * 200000)
    report = analyze(tmp_path, Options())
    note = _source(report, "nccl.log").note
    assert "not examined" in note


# --- races -------------------------------------------------------------------------------------


def _listed_then(tmp_path: Path, swap: Callable[[Path], None]):  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.log").write_bytes(OOM)
    sources = discover(run)
    swap(run / "rank0.log")
    return _within(20, lambda: ingest(sources, build_scanner(line_patterns(database())), limits=Limits()))


def test_a_fifo_swapped_in_after_listing_does_not_hang(tmp_path: Path) -> None:
    def to_fifo(p: Path) -> None:
        p.unlink()
        os.mkfifo(p)

    out = _listed_then(tmp_path, to_fifo)
    assert out.sources[0].status == "error" and "FIFO" in out.sources[0].note  # type: ignore[attr-defined]


def test_a_symlink_swapped_in_after_listing_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.log"
    outside.write_bytes(b"RuntimeError: CUDA error: an illegal memory access was encountered SECRET-OUTSIDE\n")

    def to_link(p: Path) -> None:
        p.unlink()
        p.symlink_to(outside)

    out = _listed_then(tmp_path, to_link)
    assert out.sources[0].status == "error"  # type: ignore[attr-defined]
    assert not any("SECRET-OUTSIDE" in e.text for e in out.events)  # type: ignore[attr-defined]


def test_a_file_replaced_after_listing_is_not_read(tmp_path: Path) -> None:
    def replace(p: Path) -> None:
        new = p.with_name("new")
        new.write_bytes(b"RuntimeError: something else\n")
        os.replace(new, p)

    out = _listed_then(tmp_path, replace)
    assert "replaced" in out.sources[0].note  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [("core",), ("parse", "auto")])
def test_cli_on_a_fifo_does_not_hang(tmp_path: Path, args: tuple[str, ...]) -> None:
    fifo = tmp_path / "core"
    os.mkfifo(fifo)
    start = time.monotonic()
    proc = _cli(*args, str(fifo), timeout=60)
    assert proc.returncode == 2 and b"FIFO" in proc.stderr, proc.stderr
    assert time.monotonic() - start < 60


def test_zlib_is_here() -> None:  # the bomb test above relies on multi-member gzip
    assert zlib.MAX_WBITS == 15


@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
def test_a_highly_compressed_stream_is_read_in_flat_memory(tmp_path: Path, ext: str) -> None:
    import tracemalloc

    from analyzer.sources.reader import ReadStats, iter_chunks

    member = COMPRESSORS[ext](FILLER * ((32 << 20) // len(FILLER)))  # ~1000:1 and more
    path = tmp_path / f"x.{ext}"
    path.write_bytes(member * 8)  # 256 MiB of content
    stats = ReadStats()
    tracemalloc.start()
    total = sum(len(c) for c in iter_chunks(path, ext, stats=stats, limit=200 << 20))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert stats.limit_hit and 199 << 20 < total <= 200 << 20
    assert peak < 24 << 20  # a few chunks and one step's input, never the backlog


def test_the_file_limit_is_noted(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"part{i:02d}.log").write_bytes(FILLER)
    found = discover(tmp_path, max_files=5)
    assert len(found) == 6
    assert "7 more file(s) after the first 5 not read" in found[-1].note or any("7 more file(s)" in s.note for s in found)
