"""An isolated gdb in MI mode (pygdbmi), with a wall-clock limit and a memory limit.

A core is untrusted input: gdb starts with no init file (`--nx`), and before any file is loaded
auto-loading of every kind is off (scripts, `.debug_gdb_scripts`, libthread_db from the
core's own library directories), debuginfod is off, and gdb may not start or attach to a
process. Its address space is limited (RLIMIT_AS), it writes no core itself, it runs in its
own session, and a watchdog kills it at the deadline.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pygdbmi.gdbcontroller import GdbController
from pygdbmi.gdbmiparser import parse_response
from pygdbmi.IoManager import IoManager

ISOLATION = (
    "set auto-load off",
    "set auto-load gdb-scripts off",
    "set auto-load python-scripts off",
    "set auto-load libthread-db off",
    "set auto-load local-gdbinit off",
    "set auto-load safe-path /nonexistent",
    "set libthread-db-search-path $sdir",
    "set debuginfod enabled off",
    "set auto-connect-native-target off",
    "set confirm off",
    "set pagination off",
    "set width 0",
    "set height 0",
    "set print frame-arguments none",
    "set verbose off",
)


class GdbError(RuntimeError):
    """gdb could not be started, answered with an error, or was killed."""


class GdbTimeout(GdbError):
    pass


def _limits(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


class _Controller(GdbController):
    """pygdbmi's controller, spawning gdb with limits, a clean environment and its own session."""

    def __init__(self, command: list[str], memory_bytes: int) -> None:
        self._memory_bytes = memory_bytes
        super().__init__(command=command, time_to_check_for_additional_output_sec=0.005)

    def spawn_new_gdb_subprocess(self) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DEBUGINFOD", "GDB", "PYTHON"))}
        env["LC_ALL"] = "C"
        self.gdb_process = subprocess.Popen(
            self.command,
            shell=False,
            stdout=subprocess.PIPE,
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=env,
            cwd="/",
            preexec_fn=_limits(self._memory_bytes),  # noqa: PLW1509 (no threads of ours run in the child)
            start_new_session=True,
        )
        assert self.gdb_process.stdin is not None and self.gdb_process.stdout is not None
        self.io_manager = IoManager(
            self.gdb_process.stdin,
            self.gdb_process.stdout,
            self.gdb_process.stderr,
            self.time_to_check_for_additional_output_sec,
        )
        return self.gdb_process.pid


def mi_record(raw: bytes) -> dict[str, Any]:
    """One line of gdb's MI output as pygdbmi's record; a line it cannot read is kept as text."""
    line = raw.decode("utf-8", errors="replace").rstrip("\r")
    try:
        rec = parse_response(line)
    except Exception:  # pygdbmi is not written for hostile text (a function name from a core)
        return {"type": "output", "message": None, "payload": line, "token": None}
    return rec if isinstance(rec, dict) else {"type": "output", "message": None, "payload": line, "token": None}


def mi_quote(text: str) -> str:
    """A C string for an MI command argument."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class GdbSession:
    """One gdb; `run` sends commands (pipelined) and returns their result and console text."""

    def __init__(self, timeout: float, memory_limit_mb: int, gdb: str = "gdb") -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.killed = False
        command = [gdb, "--nx", "--quiet", "--interpreter=mi3"]
        for setting in ISOLATION:
            command += ["-iex", setting]
        try:
            self._gdb = _Controller(command, memory_limit_mb << 20)
        except (OSError, ValueError) as exc:
            raise GdbError(f"cannot start gdb: {exc}") from exc
        self._token = 0
        self._pending = b""
        self._watchdog = threading.Timer(max(timeout, 0.0), self.kill)
        self._watchdog.daemon = True
        self._watchdog.start()

    def kill(self) -> None:
        proc = self._gdb.gdb_process
        if proc is not None and proc.poll() is None:
            self.killed = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()

    def close(self) -> None:
        self._watchdog.cancel()
        proc = self._gdb.gdb_process
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.stdin.write(b"-gdb-exit\n")  # type: ignore[union-attr]
                proc.wait(timeout=1.0)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> GdbSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, commands: Sequence[str]) -> list[tuple[dict[str, Any], str]]:
        """Send `commands`; for each, its result record and the console text before it.

        Reads gdb's pipes itself and parses each line with pygdbmi's parser (pygdbmi's own
        reader pretty-prints every record for its debug log, which costs more than gdb here).
        """
        proc = self._gdb.gdb_process
        if proc is None or proc.stdin is None or proc.stdout is None or proc.stderr is None:
            raise GdbError("gdb is not running")
        first = self._token + 1
        lines = []
        for command in commands:
            self._token += 1
            lines.append(f"{self._token}{command}\n")
        wanted = set(range(first, self._token + 1))
        try:
            proc.stdin.write("".join(lines).encode("utf-8"))
            proc.stdin.flush()
        except OSError as exc:
            raise self._failure(f"writing to gdb failed: {exc}") from exc
        results: dict[int, tuple[dict[str, Any], str]] = {}
        console: list[str] = []
        while wanted - results.keys():
            left = self._left()
            if left <= 0 or self.killed:
                self.kill()
                raise GdbTimeout(f"gdb did not finish within {self.timeout:g} s and was killed")
            ready, _, _ = select.select([proc.stdout, proc.stderr], [], [], min(left, 0.5))
            if proc.stderr in ready:
                os.read(proc.stderr.fileno(), 1 << 16)  # drained so gdb never blocks on it
            if proc.stdout not in ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise self._failure("gdb exited")
            self._pending += chunk
            *complete, self._pending = self._pending.split(b"\n")
            for raw in complete:
                rec = mi_record(raw)
                if rec.get("type") in ("console", "log") and isinstance(rec.get("payload"), str):  # log: gdb's warnings
                    console.append(rec["payload"])
                elif rec.get("type") == "result" and rec.get("token") in wanted:
                    results[rec["token"]] = (rec, "".join(console))
                    console = []
        return [results[t] for t in sorted(results)]

    def _left(self) -> float:
        return self.deadline - time.monotonic()

    def _failure(self, what: str) -> GdbError:
        if self.killed:
            return GdbTimeout(f"gdb did not finish within {self.timeout:g} s and was killed")
        proc = self._gdb.gdb_process
        code = proc.poll() if proc is not None else None
        if code is not None and code < 0 and -code == signal.SIGKILL:
            return GdbError(f"{what}: gdb was killed (memory limit or out of memory?)")
        if code is not None:
            return GdbError(f"{what}: gdb exited with status {code} (memory limit reached?)")
        return GdbError(what)
