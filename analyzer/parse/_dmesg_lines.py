"""One kernel log line -> one `LineRecord`, through grammars/dmesg.lark.

A cheap literal test picks the grammar's start rule for the line (an Xid, an OOM-killer line, a
stack frame, ...); when that rule does not parse, the line is parsed as a plain line, and when
even that fails (an unknown clock format) it is kept whole. Nothing here raises on odd input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lark import Lark
from lark.exceptions import LarkError

from analyzer.parse._dmesg_transform import (
    KernelFrame,
    KernelTransformer,
    Stamps,
    _Parsed,
    _Stamp,
    normalize_pci,
)
from analyzer.parse._lark import load_parser

__all__ = ["KernelFrame", "LineRecord", "Stamps", "normalize_pci", "parse_line"]

MAX_LINE = 65536  # longer lines are cut before parsing (the scan stage cuts at the same size)


@dataclass(frozen=True, slots=True)
class LineRecord:
    kind: str  # the start rule without "_line": xid, nvrm_gpu, oom_invoked, ..., plain
    stamps: Stamps
    message: str  # the line without its clock / host prefix
    fields: dict[str, Any] = field(default_factory=dict)
    frame: KernelFrame | None = None
    modules: tuple[str, ...] = ()


_DISPATCH: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"NVRM: Xid"), "xid_line"),
    (re.compile(r"NVRM: GPU (?:at )?(?:PCI:)?[0-9a-fA-F]{4}:"), "nvrm_gpu_line"),
    (re.compile(r" invoked oom-killer:"), "oom_invoked_line"),
    (re.compile(r"oom-kill:"), "oom_kill_line"),
    (re.compile(r"\bKill(?:ed)? process \d+ \("), "killed_line"),
    (re.compile(r"\]: segfault at "), "segfault_line"),
    (re.compile(r"traps: "), "trap_line"),
    (
        re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: +(?:AER:|PCIe Bus Error|device \[|\[ ?\d+\])"),
        "aer_line",
    ),
    (re.compile(r"Modules linked in:"), "modules_line"),
    (
        re.compile(r"\[<[0-9a-fA-F]+>\]|\[[0-9a-fA-F]{8,16}\] \[|(?:^|[\]\s])(?:\? )?[\w.$]{1,200}\+0x[0-9a-fA-F]+/0x"),
        "frame_line",
    ),
)


@cache
def _parser(start: str) -> Lark:
    """One LALR parser per start rule, so that no lexer state is shared between record kinds."""
    return load_parser("dmesg", start=start)


def _resolve(stamps: list[_Stamp]) -> Stamps:
    wall = next((s for s in stamps if s.time_format in ("ctime", "syslog", "iso", "journal_full")), None)
    up = next((s for s in stamps if s.time_format in ("uptime", "delta")), None)
    chosen = wall or up
    uptime = float(up.time_text) if up and up.time_format == "uptime" and up.time_text else None
    host = next((s.host for s in stamps if s.host), None)
    tag = next((s.tag for s in stamps if s.tag), None)
    return Stamps(
        chosen.time_text if chosen else None,
        chosen.time_format if chosen else None,
        uptime,
        host,
        tag,
        max((s.end for s in stamps), default=0),
    )


_TRANSFORMER = KernelTransformer()


def parse_line(line: str, *, start: str | None = None) -> LineRecord:
    """The record of one line; `start` forces a rule (e.g. modules_cont_line), else dispatch."""
    line = line.rstrip("\r\n")
    truncated = len(line) > MAX_LINE
    if truncated:
        line = line[:MAX_LINE]
    rules = [start] if start else [rule for rx, rule in _DISPATCH if rx.search(line)][:1]
    for rule in [*rules, "plain_line"]:
        try:
            parsed: _Parsed = _TRANSFORMER.transform(_parser(rule).parse(line))
        except LarkError:
            continue
        stamps = _resolve(parsed.stamps)
        fields = dict(parsed.fields)
        if truncated:
            fields["truncated"] = True
        return LineRecord(parsed.kind, stamps, line[stamps.end :].strip(), fields, parsed.frame, parsed.modules)
    return LineRecord("plain", Stamps(), line.strip(), {"truncated": True} if truncated else {})
