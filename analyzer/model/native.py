"""Native crashes: what a core dump and a crash signature say (frozen dataclasses only).

Imports nothing from the project but analyzer.model.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.model import Backtrace

# Linux signal numbers (x86-64, aarch64 and the other generic-ABI targets agree on these).
SIGNAL_NAMES: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}


def signal_name(value: int | str | None) -> str | None:
    """`7` / `"7"` / `"SIGBUS"` -> `"SIGBUS"`; unknown numbers -> `"SIG<n>"`."""
    if value is None:
        return None
    text = str(value).strip()
    if text.isdecimal():
        return SIGNAL_NAMES.get(int(text), f"SIG{text}")
    return text or None


@dataclass(frozen=True, slots=True)
class CrashSignature:
    """The dedup key of a native crash, with the notes that explain how it was made."""

    signature: str  # "f1 | f2 | f3": the top meaningful frames of the crash thread
    fingerprint: str  # sha1 hex of the normalized function names (no addresses)
    frames: tuple[str, ...]  # the normalized function names that make the signature
    crash_function: str | None  # the first meaningful frame's function
    crash_library: str | None  # the library (basename) of that frame, when known
    families: tuple[str, ...]  # nccl, cuda, c10d, shm, dataloader, python, libc ... (sorted)
    quality: float  # 0..1: how much of the stack has symbols
    notes: tuple[str, ...]  # every decision, in order
    thread_index: int | None = None  # the crash thread (index into the backtrace's threads)


@dataclass(frozen=True, slots=True)
class Mapping:
    """One mapped range of the crashed process (`info proc mappings` / the NT_FILE note)."""

    start: int
    end: int
    offset: int
    path: str | None  # None for anonymous memory

    @property
    def size(self) -> int:
        return self.end - self.start

    def contains(self, address: int) -> bool:
        return self.start <= address < self.end


@dataclass(frozen=True, slots=True)
class CoreNotes:
    """What the core's own ELF notes say, read without gdb."""

    signal: int | None = None  # NT_SIGINFO si_signo (else NT_PRSTATUS pr_cursig)
    si_code: int | None = None
    fault_address: int | None = None  # NT_SIGINFO si_addr (SIGSEGV, SIGBUS, SIGILL, SIGFPE)
    pid: int | None = None  # the crashed thread (first NT_PRSTATUS)
    thread_count: int = 0  # NT_PRSTATUS notes
    command: str | None = None  # NT_PRPSINFO pr_psargs
    program: str | None = None  # NT_PRPSINFO pr_fname (16 bytes at most)
    executable: str | None = None  # the NT_FILE mapping holding AT_ENTRY
    mappings: tuple[Mapping, ...] = ()  # NT_FILE (file-backed mappings only)
    threads: tuple[ThreadRegisters, ...] = ()  # every NT_PRSTATUS: the thread's id and registers


@dataclass(frozen=True, slots=True)
class ThreadRegisters:
    """One thread of a core as its NT_PRSTATUS note records it."""

    lwp: int
    registers: tuple[tuple[str, int], ...]  # in the kernel's order (user_regs_struct)
    pc: int | None = None
    sp: int | None = None


@dataclass(frozen=True, slots=True)
class CoreInfo:
    """What gdb (and the core's notes) tell about a core dump."""

    path: str
    executable: str | None
    signal: str | None  # "SIGBUS"
    signal_number: int | None
    si_code: int | None
    fault_address: int | None
    fault_mapping: Mapping | None
    mappings: tuple[Mapping, ...]
    backtrace: Backtrace
    command: str | None = None
    mappings_source: str = "gdb"  # "gdb" (info proc mappings) or "nt_file" (our own reading)
    warnings: tuple[str, ...] = ()
    registers: tuple[ThreadRegisters, ...] = ()  # from the notes, when gdb could not be used
    notes_only: bool = False  # no gdb: what the ELF notes alone say
