"""A gdb backtrace pasted into a log: where it ends, and the BACKTRACE event it makes."""

from __future__ import annotations

import re

from analyzer.model import Backtrace, Event, EventKind, Location
from analyzer.parse.crash_signature import crash_signature

# Lines that belong to a backtrace besides frames and thread headers.
_INSIDE = re.compile(
    r"^\s*(?:$|#\d+\s|Thread \d|Core was generated|Program (?:terminated|received)|No locals\."
    r"|No symbol table info available\.|\d+\t|\[New |\[Thread |\[Current thread|Using host libthread_db"
    r"|warning: |Backtrace stopped|\(gdb\)|--Type <RET>|Reading symbols|Downloading|Missing separate"
    r"|\s)"
)
MAX_PREAMBLE = 60  # lines before the first frame
MAX_BLANKS = 2


def cut_backtrace(messages: list[str]) -> int:
    """How many of `messages` (prefixes already removed) belong to the backtrace at the top."""
    seen_frame = False
    blanks = 0
    for i, msg in enumerate(messages):
        if not msg.strip():
            blanks += 1
            if blanks > MAX_BLANKS and seen_frame:
                return i - blanks + 1
            continue
        blanks = 0
        if msg.lstrip().startswith("#"):
            seen_frame = True
        if not _INSIDE.match(msg) and (seen_frame or i >= MAX_PREAMBLE):
            return i
    return len(messages)


def backtrace_event(
    bt: Backtrace,
    loc: Location,
    text: str,
    rank: int | None = None,
    host: str | None = None,
    end_line: int | None = None,
) -> Event:
    """EventKind.BACKTRACE with signal, crash_function, crash_library, frames, signature, quality."""
    sig = crash_signature(bt)
    frames = sum(len(t.frames) for t in bt.threads)
    message = f"gdb backtrace: {bt.signal or 'no signal'}"
    if sig.crash_function:
        message += f" in {sig.crash_function}"
    message += f" ({len(bt.threads)} thread(s), {frames} frames)"
    return Event(
        kind=EventKind.BACKTRACE,
        loc=loc,
        text=text,
        message=message,
        rank=rank,
        host=host,
        fields={
            "signal": bt.signal,
            "crash_function": sig.crash_function,
            "crash_library": sig.crash_library,
            "frames": frames,
            "threads": len(bt.threads),
            "signature": sig.signature,
            "fingerprint": sig.fingerprint,
            "frame_families": list(sig.families),
            "quality": sig.quality,
            "executable": bt.executable,
        },
        end_line=end_line,
    )


_SI_ADDR = re.compile(r"\bsi_addr = (0x[0-9a-fA-F]+)")
_MAPPING = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(?:[rwxps-]{4}\s+)?(\S.*?)?\s*$", re.M
)


def fault_from_text(text: str) -> dict[str, object]:
    """Where the fault landed, from a saved gdb session that printed `$_siginfo` and
    `info proc mappings`: the same fields a core read through gdb gives."""
    m = _SI_ADDR.search(text)
    if not m:
        return {}
    addr = int(m.group(1), 16)
    out: dict[str, object] = {"fault_address": m.group(1)}
    for mm in _MAPPING.finditer(text):
        start, end = int(mm.group(1), 16), int(mm.group(2), 16)
        if start <= addr < end:
            path = (mm.group(5) or "").strip()
            out["fault_mapping"] = path or None
            out["fault_in_dev_shm"] = path.startswith("/dev/shm/")
            out["fault_in_regular_file"] = path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/"))
            break
    return out
