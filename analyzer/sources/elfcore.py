"""Reading a core dump's ELF header and notes ourselves, without gdb.

Enough to refuse what is not a core (with a clear reason), to notice a truncated core, and to
learn from the notes what the kernel recorded: the signal and fault address (NT_SIGINFO), the
threads (NT_PRSTATUS), the command line (NT_PRPSINFO), the file-backed mappings (NT_FILE) and
the entry point (NT_AUXV AT_ENTRY), whose mapping is the executable.
Little-endian ELF64 and ELF32 cores (x86-64, aarch64, i386, arm).
"""

from __future__ import annotations

import struct
from pathlib import Path

from analyzer.model.native import CoreNotes, Mapping, ThreadRegisters

ET_CORE = 4
PT_LOAD = 1
PT_NOTE = 4
NT_PRSTATUS = 1
NT_PRPSINFO = 3
NT_AUXV = 6
NT_SIGINFO = 0x53494749
NT_FILE = 0x46494C45
AT_ENTRY = 9
MAX_NOTES = 64 << 20  # bytes of PT_NOTE we are willing to read
_FAULT_SIGNALS = {4, 5, 7, 8, 11}  # SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV carry si_addr
# elf_prstatus.pr_reg per e_machine: (offset of pr_reg, register names in user_regs_struct order,
# the pc's name, the sp's name); the layouts of the Linux uapi headers
_X86_64 = [
    "r15",
    "r14",
    "r13",
    "r12",
    "rbp",
    "rbx",
    "r11",
    "r10",
    "r9",
    "r8",
    "rax",
    "rcx",
    "rdx",
    "rsi",
    "rdi",
    "orig_rax",
    "rip",
    "cs",
    "eflags",
    "rsp",
    "ss",
    "fs_base",
    "gs_base",
    "ds",
    "es",
    "fs",
    "gs",
]
_REGS: dict[int, tuple[int, list[str], str, str]] = {
    62: (112, _X86_64, "rip", "rsp"),  # EM_X86_64
    183: (112, [f"x{i}" for i in range(31)] + ["sp", "pc", "pstate"], "pc", "sp"),  # EM_AARCH64
    3: (
        72,
        ["ebx", "ecx", "edx", "esi", "edi", "ebp", "eax", "ds", "es", "fs", "gs", "orig_eax", "eip", "cs", "eflags", "esp", "ss"],
        "eip",
        "esp",
    ),  # EM_386
    40: (72, [f"r{i}" for i in range(16)] + ["cpsr", "orig_r0"], "r15", "r13"),  # EM_ARM
}


class CoreFormatError(ValueError):
    """The file is not a core dump, or not a whole one."""


def machine_of(head: bytes) -> int | None:
    """e_machine of an ELF header (62 x86-64, 183 aarch64, 3 i386, 40 arm)."""
    return struct.unpack_from("<H", head, 18)[0] if len(head) >= 20 else None


def _header(data: bytes, path: Path) -> tuple[bool, str, int, int, int]:
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise CoreFormatError(f"{path}: not an ELF file, so not a core dump")
    is64 = data[4] == 2
    if data[4] not in (1, 2):
        raise CoreFormatError(f"{path}: unknown ELF class {data[4]}")
    if data[5] != 1:
        raise CoreFormatError(f"{path}: big-endian ELF cores are not supported")
    e = "<"
    (e_type,) = struct.unpack_from(e + "H", data, 16)
    if e_type != ET_CORE:
        kinds = {1: "a relocatable object", 2: "an executable", 3: "a shared object or PIE executable"}
        what = kinds.get(e_type, f"ELF type {e_type}")
        raise CoreFormatError(f"{path}: {what}, not a core dump (ELF e_type is not ET_CORE)")
    if is64:
        phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], *struct.unpack_from("<HH", data, 54)
    else:
        phoff, phentsize, phnum = struct.unpack_from("<I", data, 28)[0], *struct.unpack_from("<HH", data, 42)
    return is64, e, phoff, phentsize, phnum


def _segments(fh, path: Path, size: int) -> tuple[bool, list[tuple[int, int, int, int]]]:  # type: ignore[no-untyped-def]
    head = fh.read(64)
    is64, _e, phoff, phentsize, phnum = _header(head, path)
    if phnum == 0 or phoff + phnum * phentsize > size:
        raise CoreFormatError(f"{path}: truncated core (program headers are missing)")
    fh.seek(phoff)
    table = fh.read(phnum * phentsize)
    segs = []
    for i in range(phnum):
        base = i * phentsize
        if is64:
            p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", table, base)
        else:
            p_type, offset, vaddr, _paddr, filesz = struct.unpack_from("<IIIII", table, base)
        segs.append((p_type, offset, vaddr, filesz))
    return is64, segs


def check_core(path: str | Path) -> None:
    """Raise CoreFormatError unless `path` is a whole ELF core dump."""
    read_notes(path)


def read_notes(path: str | Path) -> CoreNotes:
    """The notes of a core dump; CoreFormatError if it is not a (whole) core."""
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            machine = machine_of(fh.read(20))
            fh.seek(0)
            is64, segs = _segments(fh, p, size)
            end = max((off + filesz for t, off, _v, filesz in segs if t in (PT_LOAD, PT_NOTE)), default=0)
            if end > size:
                raise CoreFormatError(f"{p}: truncated core: {size} bytes, the program headers describe {end} bytes")
            notes: list[tuple[int, bytes]] = []
            budget = MAX_NOTES
            for p_type, offset, _vaddr, filesz in segs:
                if p_type != PT_NOTE or filesz > budget:
                    continue
                budget -= filesz
                fh.seek(offset)
                notes.extend(_split_notes(fh.read(filesz)))
    except OSError as exc:
        raise CoreFormatError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    except struct.error as exc:
        raise CoreFormatError(f"{p}: malformed ELF headers ({exc})") from exc
    if not notes:
        raise CoreFormatError(f"{p}: core has no notes (not a process core dump?)")
    return _decode(notes, is64, machine)


def _split_notes(blob: bytes) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    while pos + 12 <= len(blob):
        namesz, descsz, n_type = struct.unpack_from("<III", blob, pos)
        pos += 12
        pos += (namesz + 3) & ~3
        if pos + descsz > len(blob):
            break
        out.append((n_type, blob[pos : pos + descsz]))
        pos += (descsz + 3) & ~3
    return out


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace").strip()


def _registers(desc: bytes, machine: int | None, is64: bool) -> ThreadRegisters | None:
    pid_at = 32 if is64 else 24
    if len(desc) < pid_at + 4:
        return None
    (lwp,) = struct.unpack_from("<i", desc, pid_at)
    layout = _REGS.get(machine or -1)
    if layout is None:
        return ThreadRegisters(lwp, ())
    offset, names, pc_name, sp_name = layout
    word, size = ("Q", 8) if is64 else ("I", 4)
    if len(desc) < offset + len(names) * size:
        return ThreadRegisters(lwp, ())
    values = struct.unpack_from("<" + word * len(names), desc, offset)
    regs = tuple(zip(names, values, strict=True))
    found = dict(regs)
    return ThreadRegisters(lwp, regs, found.get(pc_name), found.get(sp_name))


def _decode(notes: list[tuple[int, bytes]], is64: bool, machine: int | None = None) -> CoreNotes:
    word = "Q" if is64 else "I"
    wsize = 8 if is64 else 4
    signal = si_code = fault = pid = None
    command = program = None
    threads = 0
    entry = None
    mappings: list[Mapping] = []
    registers: list[ThreadRegisters] = []
    for n_type, desc in notes:
        if n_type == NT_PRSTATUS and len(desc) >= 28:
            regs = _registers(desc, machine, is64)
            if regs is not None:
                registers.append(regs)
            threads += 1
            if threads == 1:
                (cursig,) = struct.unpack_from("<h", desc, 12)
                pid_at = 32 if is64 else 24
                (pid,) = struct.unpack_from("<i", desc, pid_at)
                signal = signal or (cursig or None)
        elif n_type == NT_SIGINFO and len(desc) >= 12 and si_code is None:
            signo, _errno, code = struct.unpack_from("<iii", desc, 0)
            signal, si_code = signo, code
            addr_at = 16 if is64 else 12
            if signo in _FAULT_SIGNALS and len(desc) >= addr_at + wsize:
                (fault,) = struct.unpack_from("<" + word, desc, addr_at)
        elif n_type == NT_PRPSINFO:
            fname_at = 40 if is64 else 28
            if len(desc) >= fname_at + 96:
                program = _cstr(desc[fname_at : fname_at + 16])
                command = _cstr(desc[fname_at + 16 : fname_at + 96])
        elif n_type == NT_AUXV:
            for i in range(0, len(desc) - 2 * wsize + 1, 2 * wsize):
                key, value = struct.unpack_from("<" + word * 2, desc, i)
                if key == AT_ENTRY:
                    entry = value
        elif n_type == NT_FILE:
            mappings = _nt_file(desc, word, wsize)
    executable = None
    if entry is not None:
        executable = next((m.path for m in mappings if m.contains(entry)), None)
    if executable is None and program:
        executable = next((m.path for m in mappings if m.path and Path(m.path).name.startswith(program)), None)
    return CoreNotes(
        signal=signal,
        si_code=si_code,
        fault_address=fault,
        pid=pid,
        thread_count=threads,
        command=command,
        program=program,
        executable=executable,
        mappings=tuple(mappings),
        threads=tuple(registers),
    )


def _nt_file(desc: bytes, word: str, wsize: int) -> list[Mapping]:
    if len(desc) < 2 * wsize:
        return []
    count, page = struct.unpack_from("<" + word * 2, desc, 0)
    table_end = 2 * wsize + count * 3 * wsize
    if table_end > len(desc):
        return []
    names = desc[table_end:].split(b"\0")
    out = []
    for i in range(count):
        start, end, pgoff = struct.unpack_from("<" + word * 3, desc, 2 * wsize + i * 3 * wsize)
        name = names[i].decode("utf-8", errors="replace") if i < len(names) else None
        out.append(Mapping(start=start, end=end, offset=pgoff * page, path=name or None))
    return out
