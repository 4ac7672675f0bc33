"""The Transformer of grammars/dmesg.lark: one method per rule, and the records it builds.

Used by analyzer/parse/_dmesg_lines.py, which picks the start rule and resolves the clock prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from lark import Token, Transformer, v_args

from analyzer.model import Frame


@dataclass(frozen=True, slots=True)
class Stamps:
    """What the clock / host prefix of a line told."""

    time_text: str | None = None  # wall-clock text when there is one, else the uptime text
    time_format: str | None = None  # uptime | delta | ctime | syslog | iso | journal_full
    uptime: float | None = None  # dmesg seconds since boot
    host: str | None = None
    tag: str | None = None  # syslog tag ("kernel")
    end: int = 0  # where the message starts in the line


@dataclass(frozen=True, slots=True)
class KernelFrame:
    function: str | None
    offset: str | None  # "+0x7f/0xc0"
    module: str | None
    address: str | None
    reliable: bool = True

    def to_frame(self) -> Frame:
        return Frame(function=self.function, library=self.module, address=self.address, reliable=self.reliable)


class _Stamp(NamedTuple):
    time_format: str | None
    time_text: str | None
    host: str | None
    tag: str | None
    end: int


def normalize_pci(ref: str) -> str:
    """`PCI:0000:3B:00` / `0000:3b:00.0` / `3b:00.0` -> `0000:3b:00` (domain:bus:device)."""
    ref = ref.strip().lower().removeprefix("pci:")
    ref = ref.split(".", 1)[0]
    parts = ref.split(":")
    if len(parts) == 2:
        parts.insert(0, "0000")
    return ":".join(parts[-3:])


def _int(text: str) -> int | None:
    text = text.strip("'")
    return int(text) if text.isdecimal() else None


def _kb(text: str) -> int | None:
    digits = text.removesuffix("kB").replace(",", "")
    return int(digits) if digits.isdecimal() else None


_SIGNAL_OF_TRAP = (
    ("general protection", "SIGSEGV"),
    ("invalid opcode", "SIGILL"),
    ("divide error", "SIGFPE"),
    ("int3", "SIGTRAP"),
    ("stack segment", "SIGBUS"),
    ("alignment", "SIGBUS"),
)


@v_args(inline=True)
class KernelTransformer(Transformer[Token, Any]):
    """One method per grammar rule; line rules return a LineRecord (without stamps resolved)."""

    # clock prefixes -> (time_format, time_text, host, tag, end)
    def level_stamp(self, tok: Token) -> _Stamp:
        return _Stamp(None, None, None, None, tok.end_pos or 0)

    def uptime_stamp(self, tok: Token) -> _Stamp:
        return _Stamp("uptime", tok.strip("[] "), None, None, tok.end_pos or 0)

    def delta_stamp(self, tok: Token) -> _Stamp:
        return _Stamp("delta", tok.strip("[] "), None, None, tok.end_pos or 0)

    def tag_stamp(self, tok: Token) -> _Stamp:
        return _Stamp(None, None, None, "kernel", tok.end_pos or 0)

    def ctime_stamp(self, tok: Token) -> _Stamp:
        return _Stamp("ctime", tok.strip("[] "), None, None, tok.end_pos or 0)

    def _head(self, fmt: str, t: Token, host: Token, tag: Token) -> _Stamp:
        return _Stamp(fmt, str(t), str(host), tag.rstrip(":").split("[", 1)[0], tag.end_pos or 0)

    def syslog_stamp(self, t: Token, host: Token, tag: Token) -> _Stamp:
        return self._head("syslog", t, host, tag)

    def iso_stamp(self, t: Token, host: Token, tag: Token) -> _Stamp:
        return self._head("iso", t, host, tag)

    def full_stamp(self, t: Token, host: Token, tag: Token) -> _Stamp:
        return self._head("journal_full", t, host, tag)

    # NVRM
    def xid_pid(self, tok: Token) -> tuple[str, Any]:
        return "pid", _int(tok)

    def xid_name(self, tok: Token) -> tuple[str, Any]:
        name = tok.strip()
        return "process", None if name in ("<unknown>", "'<unknown>'") else name

    def xid_channel(self, tok: Token) -> tuple[str, Any]:
        return "channel", tok.split()[-1].lower().removeprefix("0x")

    def xid_text(self, tok: Token) -> tuple[str, Any]:
        return "xid_message", tok.strip()

    # OOM killer
    def oom_arg(self, key: Token, value: Token) -> tuple[str, str]:
        return str(key), str(value)

    def oom_item(self, key: Token, value: Token | None = None) -> tuple[str, str | None]:
        return str(key), None if value is None else value.strip()

    def kill_stat(self, key: Token, value: Token) -> tuple[str, str]:
        return key.rstrip(":"), str(value)

    def kill_score(self, score: Token) -> tuple[str, str]:
        return "score", str(score)

    # segfault / traps
    def seg_cpu(self, cpu: Token) -> tuple[str, Any]:
        return "cpu", int(cpu)

    def seg_mapping(self, mapping: Token) -> tuple[str, Any]:
        return "segfault_library", mapping.split("[", 1)[0]

    def seg_text(self, text: Token) -> tuple[str, Any]:
        return "detail", text.strip()

    # AER
    def aer_received(self, severity: Token, source: Token) -> dict[str, Any]:
        out: dict[str, Any] = {"aer_severity": _severity(severity), "aer_event": "received"}
        if not source.startswith("id="):
            out["aer_source"] = normalize_pci(source)
        return out

    def aer_bus_error(self, severity: Token, rest: Token | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"aer_severity": _severity(severity), "aer_event": "bus_error"}
        m = re.search(r"type=([^,]+)", rest or "")
        if m:
            out["aer_type"] = m.group(1).strip()
        return out

    def aer_status(self, ident: Token, status: Token, mask: Token) -> dict[str, Any]:
        return {"aer_event": "status", "aer_device_id": str(ident), "aer_status": str(status), "aer_mask": str(mask)}

    def aer_bit(self, bit: Token, rest: Token | None = None) -> dict[str, Any]:
        name = (rest or "").split()
        return {"aer_event": "bit", "aer_bit": int(bit), "aer_error": name[0] if name else None}

    def aer_other(self, rest: Token) -> dict[str, Any]:
        return {"aer_event": "other", "aer_text": rest.strip()}

    # stack frames
    def symbol(self, func: Token, offset: Token | None = None) -> tuple[str | None, str | None]:
        return str(func), None if offset is None else str(offset)

    def raw_address(self, tok: Token) -> tuple[str | None, str | None]:
        return None, None

    def x86_frame(self, addr: Token, *rest: Any) -> KernelFrame:
        reliable = not any(isinstance(r, Token) and r.type == "UNRELIABLE" for r in rest)
        return _frame(addr, rest, reliable)

    def s390_frame(self, addr: Token, *rest: Any) -> KernelFrame:
        return _frame(addr, rest, True)

    def arm_frame(self, addr: Token, sym: tuple[str | None, str | None], *rest: Any) -> KernelFrame:
        module = rest[0] if rest and isinstance(rest[0], Token) and rest[0].type == "MODULE" else None
        return _frame(addr, (sym, module) if module else (sym,), True)

    def ppc_frame(self, sp: Token, addr: Token, *rest: Any) -> KernelFrame:
        reliable = not any(isinstance(r, Token) and r.type == "PPC_UNRELIABLE" for r in rest)
        return _frame(addr, rest, reliable)

    def bare_frame(self, *parts: Token) -> KernelFrame:
        reliable = parts[0].type != "UNRELIABLE"
        named = [p for p in parts if p.type != "UNRELIABLE"]
        module = named[2].strip("[]") if len(named) > 2 else None
        return KernelFrame(str(named[0]), str(named[1]), module, None, reliable)

    def module_item(self, name: Token, flags: Token | None = None) -> str:
        return str(name)

    # one method per line rule: (kind, stamps, payload); parse_line makes the LineRecord
    def xid_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        _nvrm, pci, number, *parts = rest
        masked = str(pci).startswith("PCI:") and not any(ch.isdigit() for ch in str(pci))
        fields: dict[str, Any] = {"xid": int(number), "pci": None if masked else normalize_pci(pci)}
        fields.update(dict(parts))
        return _Parsed("xid", stamps, fields)

    def nvrm_gpu_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        text = rest[2].strip() if len(rest) > 2 else ""
        fields: dict[str, Any] = {"pci": normalize_pci(rest[1]), "gpu_message": text}
        if text.startswith("GPU-"):
            fields["gpu_uuid"] = text.split()[0]
        return _Parsed("nvrm_gpu", stamps, fields)

    def oom_invoked_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        fields: dict[str, Any] = {"invoked_by": rest[0].strip()}
        fields.update({f"oom_{k}": v for k, v in rest[1:]})
        return _Parsed("oom_invoked", stamps, fields)

    def oom_kill_line(self, *c: Any) -> _Parsed:
        stamps, items = _stamps(c)
        kv = dict(items)
        fields: dict[str, Any] = {"constraint": _constraint(kv), "task": kv.get("task")}
        fields["killed_pid"] = _int(kv.get("pid") or "")
        for key in ("task_memcg", "oom_memcg", "uid"):
            if kv.get(key) is not None:
                fields[key] = kv[key]
        return _Parsed("oom_kill", stamps, fields)

    def killed_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        scope = rest[0] if rest[0].type == "OOM_SCOPE" else None
        verb, pid, name, *stats = rest[1:] if scope else rest
        kv = dict(stats)
        fields: dict[str, Any] = {"killed_pid": int(pid), "process": name[1:-1], "kill_verb": str(verb)}
        if scope:
            fields["constraint"] = "memcg" if scope.startswith("Memory cgroup") else "global"
        for key in ("total-vm", "anon-rss", "file-rss", "shmem-rss"):
            if key in kv:
                fields[key.replace("-", "_") + "_kb"] = _kb(kv[key])
        if "score" in kv:
            fields["oom_score"] = int(kv["score"])
        return _Parsed("killed", stamps, fields)

    def segfault_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        proc, addr, ip, sp, error, *tail = rest
        fields = _proc(proc) | {
            "signal": "SIGSEGV",
            "fault_address": str(addr),
            "ip": str(ip),
            "sp": str(sp),
            "error_code": int(error),
        }
        return _Parsed("segfault", stamps, fields | dict(tail))

    def trap_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        proc, kind, ip, sp, error, *tail = rest
        trap = kind.strip().removeprefix("trap ").strip()
        signal = next((sig for key, sig in _SIGNAL_OF_TRAP if key in trap), None)
        fields = _proc(proc) | {"trap": trap, "signal": signal, "ip": str(ip), "sp": str(sp), "error_code": str(error)}
        return _Parsed("trap", stamps, fields | dict(tail))

    def aer_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        driver, device, body = rest[0], rest[1], rest[-1]
        fields: dict[str, Any] = {"aer_driver": str(driver), "aer_reporter": normalize_pci(device)}
        fields.update(body)
        fields["pci"] = fields.get("aer_source") or fields["aer_reporter"]
        return _Parsed("aer", stamps, fields)

    def frame_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        return _Parsed("frame", stamps, {}, frame=rest[0])

    def modules_line(self, *c: Any) -> _Parsed:
        stamps, rest = _stamps(c)
        return _Parsed("modules", stamps, {}, modules=tuple(r for r in rest if not isinstance(r, Token)))

    def modules_cont_line(self, *c: Any) -> _Parsed:
        parsed = self.modules_line(*c)
        return _Parsed("modules_cont", parsed.stamps, {}, modules=parsed.modules)

    def plain_line(self, *c: Any) -> _Parsed:
        stamps, _rest = _stamps(c)
        return _Parsed("plain", stamps, {})


class _Parsed(NamedTuple):
    kind: str
    stamps: list[_Stamp]
    fields: dict[str, Any]
    frame: KernelFrame | None = None
    modules: tuple[str, ...] = ()


def _stamps(children: tuple[Any, ...]) -> tuple[list[_Stamp], list[Any]]:
    stamps = [c for c in children if isinstance(c, _Stamp)]
    return stamps, [c for c in children if not isinstance(c, _Stamp)]


def _constraint(kv: dict[str, str | None]) -> str | None:
    value = kv.get("constraint") or ""
    if "MEMCG" in value:
        return "memcg"
    if value:
        return "global" if value == "CONSTRAINT_NONE" else value.removeprefix("CONSTRAINT_").lower()
    return None


def _proc(tok: str) -> dict[str, Any]:
    name, _, pid = tok.strip().rstrip("]").rpartition("[")
    return {"process": name, "pid": _int(pid)}


def _severity(text: str) -> str:
    if "Non-Fatal" in text:
        return "non_fatal"
    if "Fatal" in text or text.startswith(("Uncorrect", "Multiple Uncorrect")):
        return "fatal" if "Fatal" in text else "uncorrected"
    return "corrected"


def _frame(addr: Token, rest: tuple[Any, ...], reliable: bool) -> KernelFrame:
    func = offset = module = None
    for r in rest:
        if isinstance(r, tuple):
            func, offset = r
        elif isinstance(r, Token) and r.type == "MODULE":
            module = r.strip("[]")
    return KernelFrame(func, offset, module, addr.strip("[]<>"), reliable)
