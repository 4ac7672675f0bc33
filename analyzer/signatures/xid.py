"""The Xid table (signatures/xid.yaml): what an NVRM Xid number means and what to do about it.

`xid_info(79)` -> XidInfo(cause_class="hardware", category=hardware_xid, ...). Numbers that the
table does not list give None; `classify_xid` then falls back to the table's defaults so a
caller always gets an answer. Xid 154 carries the recovery action the GPU now needs in its
message; `recovery_action` decodes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analyzer.model import Category, Event, EventKind, Finding, Role
from analyzer.paths import read_yaml, signatures_dir

CAUSE_CLASSES = ("hardware", "driver_firmware", "application", "sympathetic")


@dataclass(frozen=True, slots=True)
class XidInfo:
    number: int
    name: str
    meaning: str
    cause_class: str  # hardware | driver_firmware | application | sympathetic
    category: Category
    subcategory: str | None
    confidence: float
    action: str
    nvidia_action: str | None = None
    context_only: bool = False  # a corrected or harmless-alone event: evidence, never the root cause


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """What Xid 154 says the GPU needs now."""

    code: int
    name: str  # none | gpu_reset | node_reboot | drain_p2p | drain_and_reset | unknown
    action: str
    text: str  # as the driver wrote it, e.g. "GPU Reset Required"
    previous_code: int | None = None


class XidTableError(ValueError):
    """The Xid table is malformed (the message names the entry)."""


def _info(number: int, raw: dict[str, Any]) -> XidInfo:
    try:
        cause = str(raw["cause_class"])
        if cause not in CAUSE_CLASSES:
            raise XidTableError(f"xid {number}: cause_class {cause!r} is not one of {CAUSE_CLASSES}")
        return XidInfo(
            number=number,
            name=str(raw["name"]),
            meaning=str(raw["meaning"]),
            cause_class=cause,
            category=Category(raw["category"]),
            subcategory=raw.get("subcategory"),
            confidence=float(raw["confidence"]),
            action=str(raw["action"]),
            nvidia_action=raw.get("nvidia_action"),
            context_only=raw.get("role") == "context",
        )
    except KeyError as exc:
        raise XidTableError(f"xid {number}: missing key {exc}") from exc
    except ValueError as exc:
        raise XidTableError(f"xid {number}: {exc}") from exc


@cache
def _table(path: Path | None = None) -> tuple[dict[int, XidInfo], dict[int, dict[str, str]]]:
    source = path or signatures_dir() / "xid.yaml"
    data = read_yaml(source)
    infos = {int(n): _info(int(n), raw) for n, raw in (data.get("xids") or {}).items()}
    actions = {int(n): {k: str(v) for k, v in raw.items()} for n, raw in (data.get("recovery_actions") or {}).items()}
    return infos, actions


def xid_info(number: int, table: Path | None = None) -> XidInfo | None:
    """What the table (the shipped xid.yaml, or `table`) says about this Xid, or None for a number
    it does not list."""
    return _table(table)[0].get(number)


def all_xids() -> list[XidInfo]:
    return [info for _, info in sorted(_table()[0].items())]


def classify_xid(number: int, table: Path | None = None) -> XidInfo:
    """Like xid_info, but an unknown number gets a low-confidence `unknown` answer."""
    info = xid_info(number, table)
    if info is not None:
        return info
    return XidInfo(
        number,
        "UNKNOWN_XID",
        f"Xid {number} is not in the table",
        "hardware",
        Category.UNKNOWN,
        None,
        0.2,
        "look the number up in NVIDIA's Xid catalog; check nvidia-smi -q for the GPU's health",
    )


_RECOVERY = re.compile(
    r"recovery action changed from (0x[0-9a-fA-F]+|\d+)(?: \(([^)]*)\))? to "
    r"(0x[0-9a-fA-F]+|\d+)(?: \(([^)]*)\))?"
)


def recovery_action(message: str) -> RecoveryAction | None:
    """Decode Xid 154's message: `GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)`."""
    m = _RECOVERY.search(message)
    if not m:
        return None
    code = int(m.group(3), 0)
    known = _table()[1].get(code)
    return RecoveryAction(
        code=code,
        name=known["name"] if known else "unknown",
        action=known["action"] if known else "see NVIDIA's Xid 154 documentation",
        text=(m.group(4) or "").strip(),
        previous_code=int(m.group(1), 0),
    )


FAMILY = "xid"
_PREVIOUS = re.compile(r"caused by previous Xid (\d+)", re.I)


def xid_findings(events: list[Event], table: Path | None = None) -> list[Finding]:
    """The table-driven Xid family: one finding per NVRM Xid record, named `xid.<number>`.

    A hardware or firmware Xid is a root cause in hardware_xid; an application-class Xid
    (13, 31, 43) is a root cause in user_code at the table's confidence (a user traceback with an
    illegal memory access then agrees); a sympathetic Xid (45) is a symptom, unless its own text
    names the Xid it follows, which then counts at a little less than that Xid's confidence.
    """
    out: list[Finding] = []
    for e in events:
        if e.kind is not EventKind.XID or not isinstance(e.fields.get("xid"), int):
            continue
        number = int(e.fields["xid"])
        info = classify_xid(number, table)
        text = str(e.fields.get("xid_message") or e.message)
        previous = _PREVIOUS.search(text)
        via = ""
        if info.cause_class == "sympathetic" and previous:
            number = int(previous.group(1))
            info = classify_xid(number, table)
            via = f" (named by a follow-up Xid {e.fields['xid']})"
        if info.cause_class == "sympathetic":
            role, category, confidence = Role.SYMPTOM, Category.HARDWARE_XID, info.confidence
        elif info.category is Category.UNKNOWN or info.context_only:
            role, category, confidence = Role.CONTEXT, Category.HARDWARE_XID, info.confidence
        else:
            role, category, confidence = Role.ROOT_CAUSE, info.category, info.confidence * (0.95 if via else 1.0)
        gpu = e.fields.get("pci") or "?"
        process = e.fields.get("process")
        who = (f", pid {e.fields['pid']}" + (f" ({process})" if process else "")) if e.fields.get("pid") else ""
        summary = f"Xid {number} {info.name} on GPU {gpu}{who}{via}: {info.meaning}"
        remediation = [info.action]
        if number == 154:
            action = recovery_action(text)
            if action is not None:
                summary += f"; the driver asks for: {action.text or action.name}"
                remediation.insert(0, action.action)
        out.append(
            Finding(
                signature=f"{FAMILY}.{number}",
                title=f"NVRM Xid {number}: {info.name}",
                category=category,
                subcategory=info.subcategory or "hardware_xid.xid",
                role=role,
                confidence=round(confidence, 3),
                summary=summary,
                event=e,
                remediation=tuple(remediation),
            )
        )
    return out
