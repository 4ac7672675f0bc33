"""Real core dumps for the tests and the benchmark: compile a C program here, crash it, keep the core.

The kernel writes the core when /proc/sys/kernel/core_pattern names a file; when it pipes
cores to a handler (systemd-coredump, apport), the program is run under gdb instead and the
core is written with `generate-core-file` at the signal. `Unavailable` says why a core cannot be
made on this machine (the tests skip with that reason).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

NATIVE = Path(__file__).resolve().parent


class Unavailable(Exception):
    """This machine cannot make this core (no gcc, no gdb, no unshare, not root...)."""


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise Unavailable(f"{tool} is not installed")
    return path


def compile_c(name: str, out_dir: Path) -> Path:
    """tests/native/<name>.c -> out_dir/<name> (debug info, no optimisation)."""
    require("gcc")
    exe = out_dir / name
    cmd = ["gcc", "-g", "-O0", "-pthread", "-o", str(exe), str(NATIVE / f"{name}.c"), "-lrt"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise Unavailable(f"gcc failed on {name}.c: {proc.stderr.strip()[:300]}")
    return exe


def kernel_writes_core_files() -> bool:
    try:
        pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError:
        return False
    return bool(pattern) and not pattern.startswith("|") and "/" not in pattern and "%" not in pattern


def _unlimited_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _find_core(cwd: Path, before: set[str]) -> Path | None:
    found = [p for p in cwd.iterdir() if p.name.startswith("core") and p.name not in before]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def make_core(argv: list[str], cwd: Path, shell_prefix: str = "", timeout: float = 120.0) -> Path:
    """Run argv (it must die of a signal) in cwd and return its core file."""
    before = {p.name for p in cwd.iterdir()}
    command = " ".join(_quote(a) for a in argv)
    if kernel_writes_core_files():
        script = f"{shell_prefix}cd {_quote(str(cwd))} && ulimit -c unlimited && exec {command}"
        proc = subprocess.run(
            ["sh", "-c", script],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_unlimited_core,
            check=False,
        )
        if proc.returncode >= 0 and proc.returncode < 128:
            raise Unavailable(f"{argv[0]} did not die of a signal (exit {proc.returncode}): {proc.stderr[:300]}")
        core = _find_core(cwd, before)
        if core is not None:
            return core
    return _core_under_gdb(command, cwd, shell_prefix, timeout)


def _core_under_gdb(command: str, cwd: Path, shell_prefix: str, timeout: float) -> Path:
    require("gdb")
    core = cwd / "core.gdb"
    gdb = (
        f"gdb --nx -batch -ex 'set auto-load off' -ex 'set debuginfod enabled off' -ex run "
        f"-ex 'generate-core-file {core}' --args {command}"
    )
    script = f"{shell_prefix}cd {_quote(str(cwd))} && {gdb}"
    subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, timeout=timeout, check=False)
    if not core.is_file():
        raise Unavailable("neither the kernel nor gdb wrote a core on this machine")
    return core


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def small_shm_prefix() -> str:
    """The shell prefix that gives the program a private 1 MiB /dev/shm."""
    if os.geteuid() != 0:
        raise Unavailable("a private /dev/shm needs root (mount namespace + tmpfs mount)")
    require("unshare")
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        raise Unavailable(f"unshare -m + tmpfs mount not permitted here: {probe.stderr.strip()[:200]}")
    return ""


def shm_bus_core(out_dir: Path) -> Path:
    exe = compile_c("shm_bus", out_dir)
    small_shm_prefix()
    inner = f"mount -t tmpfs -o size=1m tmpfs /dev/shm && cd {_quote(str(out_dir))} && "
    if kernel_writes_core_files():
        script = f"{inner}ulimit -c unlimited && exec {_quote(str(exe))}"
    else:
        core = out_dir / "core.gdb"
        script = (
            f"{inner}gdb --nx -batch -ex 'set auto-load off' -ex run -ex 'generate-core-file {core}' --args {_quote(str(exe))}"
        )
    before = {p.name for p in out_dir.iterdir()}
    subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        timeout=120,
        preexec_fn=_unlimited_core,
        check=False,
    )
    core_path = _find_core(out_dir, before)
    if core_path is None:
        raise Unavailable("no core was written for the /dev/shm SIGBUS program")
    return core_path
