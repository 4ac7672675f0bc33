"""analyzer/sources/coredump.py on real cores, made here from tests/native/*.c.

Each core is made once per session. Where this machine cannot make one (no gcc or gdb, no
root for the private /dev/shm, unshare refused) the test is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer.model import EventKind
from analyzer.parse.core_event import core_events
from analyzer.parse.crash_signature import crash_signature
from analyzer.parse.gdb_backtrace import parse_text
from analyzer.report.core import core_to_dict, render_core_text
from analyzer.sources.coredump import CoreError, analyze_core

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native"))
import cores  # noqa: E402  (tests/native/cores.py: builds the programs and their cores)

if shutil.which("gdb") is None:
    pytest.skip("gdb is not installed", allow_module_level=True)


def _made(factory: Callable[[Path], Path], tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    try:
        return factory(tmp_path_factory.mktemp(name))
    except cores.Unavailable as exc:
        pytest.skip(f"cannot make the {name} core here: {exc}")


def _run_core(name: str, *args: str) -> Callable[[Path], Path]:
    def factory(out: Path) -> Path:
        exe = cores.compile_c(name, out)
        return cores.make_core([str(exe), *[a.replace("{out}", str(out)) for a in args]], out)

    return factory


@pytest.fixture(scope="session")
def shm_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _made(cores.shm_bus_core, tmp_path_factory, "shm_bus")


@pytest.fixture(scope="session")
def trunc_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _made(_run_core("trunc_bus", "{out}/dataset.bin"), tmp_path_factory, "trunc_bus")


@pytest.fixture(scope="session")
def null_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _made(_run_core("null_deref"), tmp_path_factory, "null_deref")


@pytest.fixture(scope="session")
def threads_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _made(_run_core("threads64"), tmp_path_factory, "threads64")


def test_sigbus_in_a_small_dev_shm(shm_core: Path) -> None:
    info = analyze_core(shm_core)
    assert info.signal == "SIGBUS" and info.si_code == 2  # BUS_ADRERR: no page behind the address
    assert info.fault_mapping is not None and info.fault_mapping.path is not None
    assert info.fault_mapping.path.startswith("/dev/shm/torch_")
    assert info.fault_mapping.contains(info.fault_address or 0)
    assert crash_signature(info.backtrace).crash_function == "touch_pages"
    event = core_events(info, "rank0/core")[0]
    assert event.kind == EventKind.CORE and event.loc.file == "rank0/core"
    assert event.fields["fault_in_dev_shm"] is True and event.fields["fault_in_regular_file"] is False
    assert event.fields["signal"] == "SIGBUS" and event.fields["crash_function"] == "touch_pages"
    assert event.message == f"SIGBUS at 0x{info.fault_address:x} in {info.fault_mapping.path} (crash in touch_pages)"


def test_sigbus_in_a_truncated_regular_file(trunc_core: Path) -> None:
    info = analyze_core(trunc_core)
    assert info.signal == "SIGBUS"
    assert info.fault_mapping is not None
    assert info.fault_mapping.path == str(trunc_core.parent / "dataset.bin")
    fields = core_events(info, "core")[0].fields
    assert fields["fault_in_regular_file"] is True and fields["fault_in_dev_shm"] is False
    assert fields["crash_function"] == "read_records"


def test_sigsegv_null_pointer(null_core: Path) -> None:
    info = analyze_core(null_core, exe=null_core.parent / "null_deref")
    assert info.signal == "SIGSEGV" and info.si_code == 1  # SEGV_MAPERR
    assert info.fault_address == 0 and info.fault_mapping is None
    crash = info.backtrace.threads[info.backtrace.crash_thread or 0]
    assert crash.frames[0].function == "crash_here" and crash.frames[0].file is not None
    assert crash.frames[0].library == str(null_core.parent / "null_deref")
    d = core_to_dict(info)
    assert {"signal", "si_code", "fault_address", "fault_mapping", "threads", "crash_thread", "signature", "executable"} <= set(d)
    assert d["fault_address"] == "0x0" and d["fault_mapping"] is None and d["signal"] == "SIGSEGV"
    json.dumps(d)  # plain data only
    text = render_core_text(info)
    assert "SIGSEGV (si_code 1 SEGV_MAPERR)" in text and "crash_here" in text


def test_executable_is_found_from_the_core_notes(null_core: Path) -> None:
    assert analyze_core(null_core).executable == str(null_core.parent / "null_deref")


def test_64_threads(threads_core: Path) -> None:
    info = analyze_core(threads_core)
    bt = info.backtrace
    assert len(bt.threads) >= 65 and all(t.frames for t in bt.threads)
    assert bt.crash_thread is not None
    assert bt.threads[bt.crash_thread].frames[0].function == "fail_after_start"
    assert len({t.lwp for t in bt.threads}) == len(bt.threads)
    # gdb's own text output, through our parser, tells the same story
    exe = threads_core.parent / "threads64"
    out = subprocess.run(
        ["gdb", "--nx", "-batch", "-iex", "set auto-load off", "-ex", "thread apply all bt", str(exe), str(threads_core)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    parsed = parse_text(out)
    assert len(parsed.threads) == len(bt.threads)
    assert parsed.threads[parsed.crash_thread or 0].frames[0].function == "fail_after_start"


def test_gdb_killed_at_the_time_limit(threads_core: Path) -> None:
    with pytest.raises(CoreError, match=r"did not finish within 0.05 s and was killed"):
        analyze_core(threads_core, timeout=0.05)


def test_memory_limit_applies_to_gdb(null_core: Path) -> None:
    with pytest.raises(CoreError, match="gdb"):
        analyze_core(null_core, memory_limit_mb=16)


def test_no_script_from_the_core_s_paths_runs(null_core: Path, tmp_path: Path) -> None:
    exe = null_core.parent / "null_deref"
    marker = tmp_path / "ran"
    script = null_core.parent / "null_deref-gdb.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    try:
        analyze_core(null_core, exe=exe)
        assert not marker.exists()
        # the control: gdb left to its defaults (safe-path /) runs it, so the check above can fail
        subprocess.run(
            ["gdb", "--nx", "-batch", "-iex", "set auto-load safe-path /", str(exe), str(null_core)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        if not marker.exists():
            pytest.skip("this gdb has no Python auto-load, so the control cannot show the risk")
    finally:
        script.unlink()


def test_not_a_core_named_core(null_core: Path, tmp_path: Path) -> None:
    fake = tmp_path / "core"
    shutil.copy(null_core.parent / "null_deref", fake)
    with pytest.raises(CoreError, match="not a core dump"):
        analyze_core(fake)
    fake.write_text("Segmentation fault (core dumped)\n")
    with pytest.raises(CoreError, match="not an ELF file"):
        analyze_core(fake)


def test_truncated_core(null_core: Path, tmp_path: Path) -> None:
    cut = tmp_path / "core.truncated"
    cut.write_bytes(null_core.read_bytes()[: null_core.stat().st_size // 2])
    with pytest.raises(CoreError, match="truncated core"):
        analyze_core(cut)


def test_core_without_its_executable(tmp_path: Path) -> None:
    try:
        core = _run_core("null_deref")(tmp_path)
    except cores.Unavailable as exc:
        pytest.skip(f"cannot make a core here: {exc}")
    (tmp_path / "null_deref").unlink()
    with pytest.raises(CoreError, match=r"executable recorded in the core .* is not on this machine"):
        analyze_core(core)


def test_garbage_and_missing_files(tmp_path: Path) -> None:
    junk = tmp_path / "core.123"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(CoreError, match="not an ELF file"):
        analyze_core(junk)
    with pytest.raises(CoreError, match="cannot read"):
        analyze_core(tmp_path / "absent")
