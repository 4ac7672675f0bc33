"""`-o` never writes into the run dir, through hard links, symlinks or a swap during the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.output import OutputRefused, write_outside

from ..conftest import REPO

OOM = b"[rank2]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB.\n"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "node1").mkdir(parents=True)
    (run / "train.log").write_bytes(OOM)
    return run


def _analyze(run: Path, out: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", "analyze", str(run), "--format", "json", "-o", str(out)],
        capture_output=True,
        timeout=120,
        cwd=REPO,
    )


def test_a_hard_link_to_a_run_dir_file_is_refused(run_dir: Path, tmp_path: Path) -> None:
    link = tmp_path / "report.json"
    os.link(run_dir / "train.log", link)
    proc = _analyze(run_dir, link)
    assert proc.returncode == 2 and b"hard link" in proc.stderr
    assert (run_dir / "train.log").read_bytes() == OOM


def test_a_symlinked_directory_into_the_run_dir_is_refused(run_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "reports").symlink_to(run_dir / "node1")
    with pytest.raises(OutputRefused, match="inside the run dir"):
        write_outside("x", tmp_path / "reports" / "r.json", run_dir)
    assert list((run_dir / "node1").iterdir()) == []


def test_a_symlink_at_the_target_is_replaced_not_followed(run_dir: Path, tmp_path: Path) -> None:
    # as if swapped in during the run, after the command line was checked
    target = tmp_path / "report.json"
    target.symlink_to(run_dir / "train.log")
    write_outside('{"ok": true}\n', target, run_dir)
    assert (run_dir / "train.log").read_bytes() == OOM
    assert not target.is_symlink() and target.read_text() == '{"ok": true}\n'
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    target.unlink()
    target.symlink_to(outside)
    write_outside("new", target, run_dir)
    assert outside.read_text() == "keep" and target.read_text() == "new"


def test_the_write_is_atomic_and_leaves_no_temp(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "r.md"
    write_outside("# report\n", out, run_dir)
    assert out.read_text() == "# report\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["r.md"]


def test_cli_writes_a_normal_path(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = _analyze(run_dir, out)
    assert proc.returncode == 0 and b"oom_cascade" in out.read_bytes()
