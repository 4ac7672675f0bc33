"""The verdict's fingerprint: one id for one kind of failure, whichever job it happened in.

The same failure on other hosts, pids, ranks, times, paths, sizes and addresses gets the same
fingerprint; two categories never share one (the category is part of what is hashed). What is
hashed, in order:

1. the category and sub-category;
2. the decisive signature (the root-cause finding that decided the verdict);
3. its key fields: for a core dump or a gdb backtrace the crash signature's fingerprint (the
   top meaningful frames, no addresses); otherwise the fields that name the kind of fault
   (Xid number, exception type, signal, NCCL error code, OOM constraint, ...);
4. the decisive line's words with every volatile part masked: host names seen in the run,
   numbers, hex, addresses, UUIDs, PCI bus ids, IP addresses, paths and source file names.

A verdict with no decisive finding (`unknown`, or the model's call without a line) hashes the
category and sub-category only; triage groups such jobs further by their mined log template.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from analyzer.classify.features import normalize as normalize_words
from analyzer.model import EventKind, Finding

# fields that say which fault it was; none of them varies with the host, pid, time or size
KEY_FIELDS = (
    "xid",
    "exception_type",
    "signal",
    "si_code",
    "error_code",
    "nccl_error",
    "cuda_error_number",
    "constraint",
    "fault_in_dev_shm",
    "fault_in_regular_file",
    "ib_status",
)
CRASH_KINDS = (EventKind.CORE, EventKind.BACKTRACE)
MAX_WORDS = 40

_VOLATILE = (
    re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),  # UUID
    re.compile(
        r"\b(?:[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?|[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b"
    ),  # PCI bus id
    re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),  # IPv4[:port]
    re.compile(
        r"\b[0-9a-fA-F]*\d[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b|\b[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\d[0-9a-fA-F]*\b"
    ),  # bare hex
)


def mask_line(text: str, hosts: Iterable[str] = ()) -> str:
    """A line's words with hosts, numbers, hex, addresses, ids and paths masked."""
    for host in sorted({h for h in hosts if h and len(h) > 1}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", " HOST ", text)
    for rx in _VOLATILE:
        text = rx.sub(" 0 ", text)  # masked like any number
    return " ".join(normalize_words(text)[:MAX_WORDS])


def key_fields(root: Finding) -> list[str]:
    fields = root.event.fields
    if root.event.kind in CRASH_KINDS and fields.get("fingerprint"):
        return [f"crash={fields['fingerprint']}"]
    return [f"{name}={fields[name]}" for name in KEY_FIELDS if fields.get(name) not in (None, "")]


def fingerprint(category: str, subcategory: str | None, root: Finding | None, hosts: Iterable[str] = ()) -> str:
    """A 16-hex-digit id of the failure; see the module docstring for what goes in."""
    parts = [category, subcategory or ""]
    if root is not None:
        parts.append(root.signature)
        parts.extend(key_fields(root))
        if root.event.kind not in CRASH_KINDS:
            parts.append(mask_line(root.event.message or root.event.text, hosts))
    raw = "\x1f".join(parts)
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]
