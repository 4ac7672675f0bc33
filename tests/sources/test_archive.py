"""Inputs users have: one log file, a run dir shipped as an archive (read in place, never
extracted), archives inside a run dir, an empty dir."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.pipeline import analyze
from analyzer.sources.discover import RunDirError, discover

from ..conftest import REPO

EXAMPLE = REPO / "examples" / "oom-cascade" / "train.log"


def _tar(fmt: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    mode = {"tar": "w", "tar.gz": "w:gz", "tgz": "w:gz", "tar.xz": "w:xz", "tar.bz2": "w:bz2", "tar.zst": "w"}[fmt]
    with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    return zstandard.ZstdCompressor().compress(raw) if fmt == "tar.zst" else raw


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


JOB = {"job-4242/node0/rank2.log": EXAMPLE.read_bytes(), "job-4242/node0/notes.txt": b"step 1 loss 2.0\n"}


@pytest.mark.parametrize("fmt", ["tar", "tar.gz", "tgz", "tar.xz", "tar.bz2", "tar.zst", "zip"])
def test_an_archive_of_a_run_dir_is_read_in_place(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / f"job.{fmt}"
    archive.write_bytes(_zip(JOB) if fmt == "zip" else _tar(fmt, JOB))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    before = sorted(tmp_path.rglob("*"))
    report = analyze(archive)
    assert report.verdict.category.value == "oom_cascade"
    assert report.verdict.first_failure.file == "job-4242/node0/rank2.log"
    assert report.verdict.first_failure.line == 1
    assert {s.file: s.status for s in report.sources} == {
        "job-4242/node0/rank2.log": "parsed",
        "job-4242/node0/notes.txt": "parsed",
    }
    assert sorted(tmp_path.rglob("*")) == before  # nothing extracted, next to it or in the temp dir


def test_archives_inside_a_run_dir_are_read_as_members(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "launcher.log").write_text("starting\n")
    (run / "node0-logs.tar.gz").write_bytes(_tar("tar.gz", {"rank2.log": EXAMPLE.read_bytes()}))
    (run / "nested.zip").write_bytes(_zip({"inner.tar": _tar("tar", {"x.log": b"x\n"})}))
    report = analyze(run)
    files = {s.file: (s.status, s.note) for s in report.sources}
    assert files["node0-logs.tar.gz/rank2.log"] == ("parsed", "")
    assert files["nested.zip/inner.tar"] == ("skipped", "an archive inside an archive, not read")
    assert report.verdict.first_failure.file == "node0-logs.tar.gz/rank2.log"
    assert report.verdict.first_failure.rank == 2


def test_a_compressed_member_is_decompressed(tmp_path: Path) -> None:
    import gzip

    archive = tmp_path / "job.tar"
    archive.write_bytes(_tar("tar", {"logs/rank2.log.gz": gzip.compress(EXAMPLE.read_bytes())}))
    report = analyze(archive)
    assert report.verdict.category.value == "oom_cascade"
    assert report.verdict.first_failure.file == "logs/rank2.log.gz"


def test_a_truncated_archive_keeps_what_was_listed(tmp_path: Path) -> None:
    data = _tar("tar", {"a/rank2.log": EXAMPLE.read_bytes(), "a/big.log": b"step\n" * 200_000})
    archive = tmp_path / "cut.tar"
    archive.write_bytes(data[: len(data) // 2])
    report = analyze(archive)
    files = {s.file: s for s in report.sources}
    assert files["a/rank2.log"].status == "parsed"
    assert report.verdict.category.value == "oom_cascade"
    assert any(s.status == "error" and "not read to its end" in s.note for s in report.sources)


def test_one_log_file(tmp_path: Path) -> None:
    code = CliRunner().invoke(main, ["analyze", str(EXAMPLE), "--format", "json"], catch_exceptions=False)
    assert code.exit_code == 0
    data = json.loads(code.stdout)
    assert data["verdict"]["category"] == "oom_cascade"
    assert data["verdict"]["first_failure"]["file"] == "train.log"
    assert [s["file"] for s in data["sources"]] == ["train.log"]


def test_empty_dir_and_empty_archive_are_refused(tmp_path: Path) -> None:
    assert discover(tmp_path) == []  # the library says nothing is there; `analyze` exits 2 (tests/test_cli.py)
    empty = tmp_path / "e.tar"
    empty.write_bytes(_tar("tar", {}))
    # an empty tar is 10 KiB of zeros: no "ustar" magic, so it is a (binary) file, refused as such
    with pytest.raises(RunDirError):
        discover(empty)


def test_a_binary_file_given_alone_is_refused(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(4096))
    result = CliRunner().invoke(main, ["analyze", str(blob)])
    assert result.exit_code == 2
    assert "cannot be analyzed: binary or unrecognised content" in result.stderr


def test_listing_a_huge_archive_stops_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.sources import archive

    monkeypatch.setattr(archive, "MAX_LISTED_BYTES", 1 << 20)
    data = _tar("tar.gz", {"a/rank2.log": EXAMPLE.read_bytes(), "a/big.bin": b"\0" * (4 << 20), "a/late.log": b"x\n"})
    job = tmp_path / "job.tgz"
    job.write_bytes(data)
    report = analyze(job)
    files = {s.file: s for s in report.sources}
    assert files["a/rank2.log"].status == "parsed"
    assert "a/late.log" not in files
    assert any(s.status == "error" and "size limit" in s.note for s in report.sources)
