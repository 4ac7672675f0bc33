"""The CORE event of a core dump: signal, fault address and mapping, and the crash signature
of its backtrace (computed here, where events are made, not when the core is read)."""

from __future__ import annotations

from analyzer.model import Event, EventKind, Location
from analyzer.model.native import CoreInfo, Mapping
from analyzer.parse.crash_signature import crash_signature


def _hex(value: int | None) -> str | None:
    return None if value is None else f"0x{value:x}"


def fault_kind(mapping: Mapping | None) -> str:
    """dev_shm | regular_file | anonymous | unmapped."""
    if mapping is None:
        return "unmapped"
    path = (mapping.path or "").removesuffix(" (deleted)")
    if path.startswith("/dev/shm/"):
        return "dev_shm"
    if path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/", "/memfd:", "/SYSV")):
        return "regular_file"
    return "anonymous"


def core_events(info: CoreInfo, rel_path: str) -> list[Event]:
    """One EventKind.CORE event for the analysis pipeline."""
    sig = crash_signature(info.backtrace)
    kind = fault_kind(info.fault_mapping)
    where = ""
    if info.fault_address is not None:
        where = f" at {_hex(info.fault_address)}"
        where += f" in {info.fault_mapping.path}" if info.fault_mapping and info.fault_mapping.path else " (unmapped)"
    message = f"{info.signal or 'no signal'}{where}"
    if sig.crash_function:
        message += f" (crash in {sig.crash_function})"
    return [
        Event(
            kind=EventKind.CORE,
            loc=Location(rel_path, None),
            text=message,
            message=message,
            pid=info.backtrace.threads[info.backtrace.crash_thread].lwp if info.backtrace.crash_thread is not None else None,
            fields={
                "signal": info.signal,
                "si_code": info.si_code,
                "fault_address": _hex(info.fault_address),
                "fault_mapping": info.fault_mapping.path if info.fault_mapping else None,
                "fault_in_dev_shm": kind == "dev_shm",
                "fault_in_regular_file": kind == "regular_file",
                "crash_function": sig.crash_function,
                "crash_library": sig.crash_library,
                "frame_families": list(sig.families),
                "signature": sig.signature,
                "fingerprint": sig.fingerprint,
                "quality": sig.quality,
                "threads": len(info.backtrace.threads),
                "executable": info.executable,
            },
        )
    ]
