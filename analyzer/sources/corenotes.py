"""A core read from its ELF notes alone, for when gdb cannot be used on it: the program is not
on this machine (cores are analyzed away from the node), or the one given does not match.

The notes still say a lot: the signal, `si_code` and fault address (NT_SIGINFO), the mapping
that holds the fault (NT_FILE), every thread's id and registers (NT_PRSTATUS), the command
line. Each thread gets one frame, at its program counter, in the mapping that holds it. A
note in `warnings` says what is missing and how to get it.
"""

from __future__ import annotations

from analyzer.model import Backtrace, Frame, Thread
from analyzer.model.native import CoreInfo, CoreNotes, signal_name

_FAULT_SIGNALS = (4, 5, 7, 8, 11)


def notes_only(path: str, notes: CoreNotes, reason: str) -> CoreInfo:
    """What the notes say about the core at `path`; `reason` says why gdb was not used."""
    threads = []
    crash = None
    for i, t in enumerate(notes.threads):
        frames: tuple[Frame, ...] = ()
        if t.pc is not None:
            mapping = next((m for m in notes.mappings if m.contains(t.pc)), None)
            frames = (Frame(address=f"0x{t.pc:x}", index=0, library=mapping.path if mapping else None),)
        threads.append(Thread(number=i + 1, lwp=t.lwp, frames=frames, tid=f"LWP {t.lwp}"))
        if t.lwp == notes.pid and crash is None:
            crash = i
    if crash is None and threads:
        crash = 0
    fault = notes.fault_address if notes.signal in _FAULT_SIGNALS else None
    fault_mapping = next((m for m in notes.mappings if fault is not None and m.contains(fault)), None)
    executable = notes.executable or (notes.command.split()[0] if notes.command else None)
    bt = Backtrace(threads=tuple(threads), crash_thread=crash, signal=signal_name(notes.signal), executable=executable)
    missing = (
        f"{reason}: signal, fault address, mappings and registers come from the core's notes alone; "
        "no function names or backtraces (pass the program the core came from with --exe"
        + (f", {executable}" if executable else "")
        + ", and its shared libraries, to get them)"
    )
    return CoreInfo(
        path=path,
        executable=executable,
        signal=signal_name(notes.signal),
        signal_number=notes.signal,
        si_code=notes.si_code,
        fault_address=fault,
        fault_mapping=fault_mapping,
        mappings=notes.mappings,
        backtrace=bt,
        command=notes.command,
        mappings_source="nt_file",
        warnings=(missing,),
        registers=notes.threads,
        notes_only=True,
    )
