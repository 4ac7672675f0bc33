"""`postmortem analyze` on run dirs that hold real cores made here (tests/native/*.c)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer.model import Category
from analyzer.pipeline import analyze

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native"))
import cores  # noqa: E402

if shutil.which("gdb") is None:
    pytest.skip("gdb is not installed", allow_module_level=True)


def _run_dir(factory: Callable[[Path], Path], tmp: Path) -> Path:
    try:
        core = factory(tmp)
    except cores.Unavailable as exc:
        pytest.skip(f"cannot make the core here: {exc}")
    run = tmp / "run"
    run.mkdir()
    shutil.move(str(core), run / "core.4242")
    return run


def _program(name: str, *args: str) -> Callable[[Path], Path]:
    def factory(out: Path) -> Path:
        exe = cores.compile_c(name, out)
        return cores.make_core([str(exe), *[a.replace("{out}", str(out)) for a in args]], out)

    return factory


def test_dev_shm_sigbus_core_is_shm_and_names_the_mapping(tmp_path: Path) -> None:
    report = analyze(_run_dir(cores.shm_bus_core, tmp_path))
    assert report.verdict.category is Category.SHM
    assert "shm.core_sigbus_in_dev_shm" in report.verdict.signatures
    assert "/dev/shm/torch_" in report.verdict.explanation
    assert report.verdict.first_failure.file == "core.4242"


def test_truncated_file_sigbus_core_is_not_shm(tmp_path: Path) -> None:
    report = analyze(_run_dir(_program("trunc_bus", "{out}/dataset.bin"), tmp_path))
    assert report.verdict.category is not Category.SHM
    assert (
        any("dataset.bin" in e.text or "dataset.bin" in (e.signature or "") for e in report.evidence)
        or "dataset.bin" in report.verdict.explanation
    )


def test_sigsegv_core_shows_the_crash_frame(tmp_path: Path) -> None:
    report = analyze(_run_dir(_program("null_deref"), tmp_path))
    texts = " ".join([report.verdict.explanation, *(e.text for e in report.evidence), *(t.summary for t in report.timeline)])
    assert "crash_here" in texts


def test_non_core_named_core_is_a_warning_and_analysis_goes_on(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "core").write_bytes(b"\x7fELF" + b"\x00" * 60)  # an ELF header that is no core
    (run / "train.log").write_text("RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error.\n")
    report = analyze(run)
    assert report.verdict.category is Category.SHM
    assert any(s.file == "core" and s.status in ("skipped", "error") for s in report.sources)


def test_core_whose_program_is_gone_is_read_from_its_notes(tmp_path: Path) -> None:
    # cores are analyzed away from the node: the program is not here, the notes still tell the fault
    run = _run_dir(cores.shm_bus_core, tmp_path)
    (tmp_path / "shm_bus").unlink()
    report = analyze(run)
    source = next(s for s in report.sources if s.file == "core.4242")
    assert source.status == "parsed"
    assert "is not on this machine" in source.note and "notes alone" in source.note
    assert report.verdict.category is Category.SHM  # the fault address lies in a /dev/shm mapping
    assert report.verdict.first_failure.file == "core.4242"
