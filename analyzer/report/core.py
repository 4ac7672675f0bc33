"""`postmortem core` as plain text for a terminal (signal, fault, mapping, crash thread, threads)
and as JSON (`core_to_dict`)."""

from __future__ import annotations

from typing import Any

from analyzer.model import Frame, Thread
from analyzer.model.native import CoreInfo
from analyzer.model.serialize import thread_data
from analyzer.parse.crash_signature import crash_signature, signature_dict

MAX_OTHER_FRAMES = 8  # frames shown per non-crash thread
_SI_CODES = {
    "SIGBUS": {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR", 5: "BUS_MCEERR_AO"},
    "SIGSEGV": {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR"},
}
_GENERIC_CODES = {0: "SI_USER", -6: "SI_TKILL", -1: "SI_QUEUE", 128: "SI_KERNEL"}


def si_code_name(signal: str | None, code: int | None) -> str | None:
    if code is None:
        return None
    return _SI_CODES.get(signal or "", {}).get(code) or _GENERIC_CODES.get(code)


def _frame_line(frame: Frame) -> str:
    where = ""
    if frame.file:
        where = f" at {frame.file}" + (f":{frame.line}" if frame.line is not None else "")
    elif frame.library:
        where = f" from {frame.library}"
    address = f"{frame.address} in " if frame.address else ""
    return f"  #{frame.index if frame.index is not None else '?':<3} {address}{frame.function or '??'}{where}"


def _thread_title(i: int, thread: Thread, crash: bool) -> str:
    lwp = f" (LWP {thread.lwp})" if thread.lwp is not None else ""
    mark = "  <- crashed" if crash else ""
    return f"Thread {thread.number if thread.number is not None else i}{lwp}{mark}"


def render_core_text(info: CoreInfo) -> str:
    """A plain-text report of one core analysis."""
    out: list[str] = [f"core:        {info.path}", f"executable:  {info.executable or '(unknown)'}"]
    if info.command:
        out.append(f"command:     {info.command}")
    code = si_code_name(info.signal, info.si_code)
    signal = info.signal or "(none recorded)"
    if info.si_code is not None:
        signal += f" (si_code {info.si_code}{' ' + code if code else ''})"
    out.append(f"signal:      {signal}")
    if info.fault_address is not None:
        out.append(f"fault addr:  0x{info.fault_address:x}")
        fm = info.fault_mapping
        if fm is not None:
            out.append(f"mapped:      {fm.path or '(anonymous)'} [0x{fm.start:x}-0x{fm.end:x}, file offset 0x{fm.offset:x}]")
        else:
            out.append("mapped:      nothing (the address is in no mapping)")
    sig = crash_signature(info.backtrace)
    out.append(f"signature:   {sig.signature or '(none)'}")
    out.append(f"fingerprint: {sig.fingerprint[:16]}  quality {sig.quality:.2f}")
    if sig.families:
        out.append(f"families:    {', '.join(sig.families)}")
    bt = info.backtrace
    out.append(f"threads:     {len(bt.threads)}")
    for warning in info.warnings:
        out.append(f"warning:     {warning}")
    order = list(range(len(bt.threads)))
    if bt.crash_thread is not None:
        order.remove(bt.crash_thread)
        order.insert(0, bt.crash_thread)
    for i in order:
        thread = bt.threads[i]
        crash = i == bt.crash_thread
        out.append("")
        out.append(_thread_title(i, thread, crash))
        frames = thread.frames if crash else thread.frames[:MAX_OTHER_FRAMES]
        out.extend(_frame_line(f) for f in frames)
        if len(frames) < len(thread.frames):
            out.append(f"  ... {len(thread.frames) - len(frames)} more frame(s)")
    if sig.notes:
        out.append("")
        out.append("signature notes:")
        out.extend(f"  - {note}" for note in sig.notes)
    return "\n".join(out) + "\n"


def core_to_dict(info: CoreInfo) -> dict[str, Any]:
    """The JSON shape of a core analysis (stable keys)."""
    fm = info.fault_mapping
    return {
        "path": info.path,
        "executable": info.executable,
        "command": info.command,
        "signal": info.signal,
        "si_code": info.si_code,
        "fault_address": _hex(info.fault_address),
        "fault_mapping": (
            {"path": fm.path, "start": _hex(fm.start), "end": _hex(fm.end), "offset": _hex(fm.offset)} if fm else None
        ),
        "threads": [thread_data(t) for t in info.backtrace.threads],
        "crash_thread": info.backtrace.crash_thread,
        "signature": signature_dict(crash_signature(info.backtrace)),
        "mappings_source": info.mappings_source,
        "warnings": list(info.warnings),
    }


def _hex(value: int | None) -> str | None:
    return None if value is None else f"0x{value:x}"
