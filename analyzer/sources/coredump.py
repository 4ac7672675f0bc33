"""Core dumps: what gdb (through pygdbmi) and the core's own notes say about a crash.

`analyze_core` checks that the file is a whole ELF core, finds the executable from the core's
notes when none is given, runs an isolated gdb (analyzer/sources/gdbmi.py) under a time and a
memory limit, and collects every thread's frames, `$_siginfo` and the process's mappings, so
that a SIGBUS is tied to the file it hit (a /dev/shm segment, or a regular file).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from analyzer.model import Backtrace, Frame, Thread
from analyzer.model.native import CoreInfo, CoreNotes, Mapping, signal_name
from analyzer.sources.corenotes import notes_only
from analyzer.sources.elfcore import CoreFormatError, read_notes
from analyzer.sources.gdbmi import GdbError, GdbSession, mi_quote
from analyzer.sources.reader import ReadProblem, open_regular

DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_LIMIT_MB = 8192
MAX_FRAMES = 256  # per thread
_MAPPING = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)"
    r"(?:\s+[rwxsp-]{4})?\s*(.*?)\s*$"
)
_LWP = re.compile(r"LWP (\d+)|process (\d+)")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_INT = re.compile(r"-?\d+")


class CoreError(Exception):
    """A core that cannot be analyzed; the message says why (and names the file)."""


class ExecutableMissing(CoreError):
    """The core's program is not here (or not the one given): only its notes can be read."""


def analyze_core(
    path: str | Path,
    exe: str | Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
    gdb: str = "gdb",
) -> CoreInfo:
    """Analyze one core dump. Raises CoreError for anything that is not a readable, whole core."""
    core = Path(path)
    # the core is opened once, without blocking (a FIFO cannot hang it), checked to be a regular
    # file, and read by us and by gdb through that open file: a file swapped in later is not read
    try:
        handle = open_regular(core, follow=True)
    except ReadProblem as exc:
        raise CoreError(f"{core}: {str(exc).replace('cannot open:', 'cannot read:')}") from exc
    with handle:
        pinned = Path(f"/proc/{os.getpid()}/fd/{handle.fileno()}")
        if not pinned.exists():
            pinned = core
        return _analyze_open_core(core, pinned, exe, timeout, memory_limit_mb, gdb)


def _analyze_open_core(
    core: Path, pinned: Path, exe: str | Path | None, timeout: float, memory_limit_mb: int, gdb: str
) -> CoreInfo:
    try:
        notes = read_notes(pinned)
    except CoreFormatError as exc:
        raise CoreError(str(exc).replace(str(pinned), str(core))) from exc
    try:
        executable = _executable(core, exe, notes)
    except ExecutableMissing as exc:
        return notes_only(str(core), notes, str(exc))
    warnings: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="postmortem-core-") as tmp, GdbSession(timeout, memory_limit_mb, gdb) as session:
            load = session.run(
                [
                    f"-file-exec-and-symbols {mi_quote(executable)}",
                    f"-target-select core {_plain_path(pinned if pinned != core else core.resolve(), Path(tmp))}",
                    "-thread-info",
                ]
            )
            for (rec, _text), what in zip(load[:2], ("executable", "core"), strict=True):
                if rec.get("message") == "error":
                    raise CoreError(f"{core}: gdb cannot load the {what}: {_msg(rec)}")
            if "may not match" in load[1][1] or "does not match" in load[1][1]:
                return notes_only(str(core), notes, f"the program {executable} does not match the core (gdb says so)")
            info = load[2][0].get("payload") or {}
            threads, current = _threads(session, info)
            siginfo = _siginfo(session, current)
            mappings_text = session.run(['-interpreter-exec console "info proc mappings"'])[0][1]
    except GdbError as exc:
        raise CoreError(f"{core}: {exc}") from exc
    mappings = tuple(parse_mappings(mappings_text))
    source = "gdb"
    if not mappings:
        mappings, source = notes.mappings, "nt_file"
        warnings.append("gdb listed no mappings; using the core's NT_FILE note")
    with_libs = tuple(_with_libraries(t, mappings) for t in threads)
    crash = _crash_index(with_libs, current, notes)
    signo = siginfo.get("signo") or notes.signal
    si_code = siginfo.get("code", notes.si_code)
    fault = siginfo.get("addr", notes.fault_address) if signo in (4, 5, 7, 8, 11) else None
    bt = Backtrace(threads=with_libs, crash_thread=crash, signal=signal_name(signo), executable=executable)
    return CoreInfo(
        path=str(core),
        executable=executable,
        signal=signal_name(signo),
        signal_number=signo,
        si_code=si_code,
        fault_address=fault,
        fault_mapping=find_mapping(mappings, fault),
        mappings=tuple(mappings),
        backtrace=bt,
        command=notes.command,
        mappings_source=source,
        warnings=tuple(warnings),
    )


def _executable(core: Path, exe: str | Path | None, notes: CoreNotes) -> str:
    if exe is not None:
        if not Path(exe).is_file():
            raise CoreError(f"{core}: executable {exe} not found")
        return str(Path(exe).resolve())  # relative to the caller's directory, not gdb's
    recorded = notes.executable or (notes.command.split()[0] if notes.command else None)
    if not recorded:
        raise ExecutableMissing("the core does not name its program")
    if not Path(recorded).is_file():
        raise ExecutableMissing(f"the program recorded in the core ({recorded}) is not on this machine")
    return recorded


def _plain_path(path: Path, tmp: Path) -> str:
    """`target core` takes its argument unquoted: a path with odd characters gets a plain alias."""
    text = str(path)
    if re.fullmatch(r"[\w./+-]+", text):
        return text
    alias = tmp / "core"
    alias.symlink_to(path)
    return str(alias)


def _msg(rec: dict[str, Any]) -> str:
    payload = rec.get("payload") or {}
    return str(payload.get("msg", payload)) if isinstance(payload, dict) else str(payload)


def _threads(session: GdbSession, info: dict[str, Any]) -> tuple[list[Thread], str | None]:
    listed = info.get("threads") or []
    ids = [str(t.get("id")) for t in listed]
    answers = session.run([f"-stack-list-frames --thread {i} --no-frame-filters 0 {MAX_FRAMES - 1}" for i in ids])
    threads = []
    for t, (rec, _text) in zip(listed, answers, strict=True):
        payload = rec.get("payload") or {}
        frames = tuple(_frame(f) for f in payload.get("stack") or [] if isinstance(f, dict))
        m = _LWP.search(str(t.get("target-id", "")))
        lwp = int(m.group(1) or m.group(2)) if m else None
        threads.append(Thread(number=int(t["id"]), lwp=lwp, frames=frames, tid=t.get("target-id")))
    current = info.get("current-thread-id")
    return threads, str(current) if current is not None else None


def _frame(raw: dict[str, Any]) -> Frame:
    line = raw.get("line")
    return Frame(
        function=raw.get("func") if raw.get("func") not in (None, "??") else None,
        file=raw.get("file"),
        line=int(line) if line and str(line).isdecimal() else None,
        library=raw.get("from"),
        address=raw.get("addr"),
        index=int(raw["level"]) if str(raw.get("level", "")).isdecimal() else None,
    )


def _siginfo(session: GdbSession, thread: str | None) -> dict[str, int]:
    scope = f"--thread {thread} " if thread else ""
    fields = {
        "signo": "$_siginfo.si_signo",
        "code": "$_siginfo.si_code",
        "addr": "(unsigned long)$_siginfo._sifields._sigfault.si_addr",
    }
    answers = session.run([f"-data-evaluate-expression {scope}{mi_quote(expr)}" for expr in fields.values()])
    out: dict[str, int] = {}
    for key, (rec, _text) in zip(fields, answers, strict=True):
        value = str((rec.get("payload") or {}).get("value", "")) if rec.get("message") == "done" else ""
        m = _HEX.search(value) or _INT.search(value)
        if m:
            out[key] = int(m.group(0), 0)
    return out


def parse_mappings(text: str) -> list[Mapping]:
    """The rows of `info proc mappings` (gdb 12-15 layouts)."""
    out = []
    for line in text.splitlines():
        m = _MAPPING.match(line)
        if m:
            start, end, _size, offset = (int(m.group(i), 16) for i in range(1, 5))
            out.append(Mapping(start=start, end=end, offset=offset, path=m.group(5) or None))
    return out


def find_mapping(mappings: tuple[Mapping, ...] | list[Mapping], address: int | None) -> Mapping | None:
    if address is None:
        return None
    return next((m for m in mappings if m.contains(address)), None)


def _with_libraries(thread: Thread, mappings: list[Mapping] | tuple[Mapping, ...]) -> Thread:
    """Frames without `from` get the file of the mapping that holds their pc."""
    frames = []
    for f in thread.frames:
        if f.library is None and f.address:
            m = find_mapping(mappings, int(f.address, 16))
            if m is not None and m.path:
                f = replace(f, library=m.path)
        frames.append(f)
    return replace(thread, frames=tuple(frames))


def _crash_index(threads: tuple[Thread, ...], current: str | None, notes: CoreNotes) -> int | None:
    if notes.pid is not None:
        for i, t in enumerate(threads):
            if t.lwp == notes.pid:
                return i
    for i, t in enumerate(threads):
        if current is not None and str(t.number) == current:
            return i
    return 0 if threads else None
