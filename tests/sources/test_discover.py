"""Discovery: kinds by content, compressed files, ranks and hosts from paths, and bad input."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

import pytest
import zstandard

from analyzer.model import SourceKind
from analyzer.sources.discover import RunDirError, discover, rank_host_from_path

from ..conftest import REPO

TRACEBACK = 'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\nRuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error.\n'
DMESG = "[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n[ 1843.4] other\n"
NCCL = "node1:123:456 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nnode1:123:456 [0] NCCL INFO NET/Socket : Using [0]eth0\n"


@pytest.mark.parametrize(
    ("path", "rank", "host"),
    [
        ("rank3.log", 3, None),
        ("node7/rank12.log", 12, "node7"),
        ("logs/attempt_0/3/stderr.log", 3, None),
        ("node-07/train.log", None, "node-07"),
        ("log_rank_5.txt", 5, None),
        ("dmesg.log", None, None),
    ],
)
def test_rank_and_host_from_path(path: str, rank: int | None, host: str | None) -> None:
    assert rank_host_from_path(path) == (rank, host)


def test_kinds_by_content_not_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(DMESG)
    (tmp_path / "b.txt").write_text(NCCL)
    (tmp_path / "c.txt").write_text(TRACEBACK)
    (tmp_path / "error.json").write_text('{"message": {"message": "x", "extraInfo": {"py_callstack": "", "timestamp": "1"}}}')
    kinds = {s.rel: s.kind for s in discover(tmp_path)}
    assert kinds == {
        "a.txt": SourceKind.KERNEL_LOG,
        "b.txt": SourceKind.NCCL_LOG,
        "c.txt": SourceKind.TRAINING_LOG,
        "error.json": SourceKind.ELASTIC_ERROR,
    }


def test_compressed_files_are_sniffed_inside(tmp_path: Path) -> None:
    (tmp_path / "k.gz").write_bytes(gzip.compress(DMESG.encode()))
    (tmp_path / "k.xz").write_bytes(lzma.compress(DMESG.encode()))
    (tmp_path / "k.bz2").write_bytes(bz2.compress(DMESG.encode()))
    (tmp_path / "k.zst").write_bytes(zstandard.ZstdCompressor().compress(DMESG.encode()))
    found = {s.rel: (s.kind, s.compression) for s in discover(tmp_path)}
    assert found == {
        "k.gz": (SourceKind.KERNEL_LOG, "gz"),
        "k.xz": (SourceKind.KERNEL_LOG, "xz"),
        "k.bz2": (SourceKind.KERNEL_LOG, "bz2"),
        "k.zst": (SourceKind.KERNEL_LOG, "zst"),
    }


def test_missing_and_not_a_dir(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no such directory"):
        discover(tmp_path / "nope")
    (tmp_path / "f").write_text("x\n")
    assert [s.rel for s in discover(tmp_path / "f")] == ["f"]  # one log file is a run dir of one file
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(RunDirError, match="not a directory"):
        discover(tmp_path / "pipe")


def test_special_files_and_symlinks(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "secret.log"
    outside.write_text(TRACEBACK)
    os.mkfifo(run / "fifo")
    (run / "out.log").symlink_to(outside)
    (run / "loop").symlink_to(run / "loop")
    (run / "sub").mkdir()
    (run / "sub" / "up").symlink_to(run)
    found = {s.rel: s for s in discover(run)}
    assert found["fifo"].status == "skipped" and "FIFO" in found["fifo"].note
    assert found["out.log"].status == "skipped" and "outside" in found["out.log"].note
    assert found["loop"].status in ("skipped", "error")
    assert not any(rel.startswith("sub/up/") for rel in found)  # no second walk through a link
    followed = {s.rel: s for s in discover(run, follow_symlinks=True)}
    assert followed["out.log"].kind is SourceKind.TRAINING_LOG


def test_examples_are_discovered() -> None:
    kinds = {s.kind for s in discover(REPO / "examples" / "xid-fallen-off-bus")}
    assert SourceKind.KERNEL_LOG in kinds
