"""gdb backtraces (`bt`, `bt full`, `thread apply all bt [full]`, ABRT reports) -> Backtrace.

Line work first: frame lines that gdb wrapped over several lines are joined into one.
The structure is the grammar's (grammars/gdb_backtrace.lark). A line that starts like a frame
or a thread header but does not fit is dropped (never an exception), and the rest parsed again.
Which thread crashed is decided in analyzer/parse/gdb_crash_thread.py.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from typing import Any

from lark import Token, Transformer
from lark.exceptions import LarkError

from analyzer.model import Backtrace, Event, Frame, Location, SourceKind, Thread
from analyzer.model.native import signal_name
from analyzer.model.serialize import backtrace_data
from analyzer.parse._lark import load_parser
from analyzer.parse.base import GrammarParser, Region, Trigger
from analyzer.parse.gdb_crash_thread import SIGNAL_HANDLER, find_crash_thread
from analyzer.parse.prefix import split_prefix

TRIGGERS = (
    Trigger(r"(?:Program|^\s*Thread \d+(?: \"[^\"\n]*\")?) (?:terminated with|received) signal \w+", block=3000),
    Trigger(r"^\s*Thread \d+ \((?:Thread|LWP|process) [^)]*\)+[^:]*:\s*$", block=3000),
    Trigger(r"^\s*#0\s+(?:0x[0-9a-fA-F]+ in )?\S+ \(", block=400),
)

_FRAME_START = re.compile(r"^\s*#\d+\s")
_STRUCTURAL = re.compile(r"^\s*(?:#\d+\s|Thread \d|Core was generated|Program (?:terminated|received))")
_CONTINUES_AFTER = re.compile(r"^\s+(?:at|from)\s+\S")
_SOURCE_LINE = re.compile(r"^(\d+)\t(.*)$")
MAX_JOINED = 40  # physical lines in one frame line, at most


@dataclass(frozen=True, slots=True)
class _Loose:
    """Frames with no thread header above them (a crash frame, or a plain `bt`)."""

    frames: tuple[Frame, ...]


@dataclass(frozen=True, slots=True)
class _Note:
    kind: str  # "core" | "signal" | "text"
    value: str


def _parens(text: str, quotes_at_top: bool = True) -> tuple[list[int], int]:
    """Positions of the top-level "(" of `text` and the depth left open at its end; parentheses
    inside quotes do not count (with `quotes_at_top` False, a quote only opens a string inside
    parentheses: the function name before the argument list holds no strings)."""
    starts: list[int] = []
    depth, quote, escaped = 0, "", False
    for pos, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and (quotes_at_top or depth > 0):
            quote = ch
        elif ch == "(":
            if depth == 0:
                starts.append(pos)
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
    return starts, depth


def join_lines(text: str) -> list[str]:
    """Logical lines: a frame line and the lines gdb wrapped it over become one."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if _FRAME_START.match(line):
            joined = 0
            while i < len(lines) and joined < MAX_JOINED:
                nxt = lines[i]
                if not nxt[:1].isspace() or _STRUCTURAL.match(nxt):
                    break
                open_args = _parens(line)[1] > 0
                if not (open_args or _CONTINUES_AFTER.match(nxt) or nxt.lstrip().startswith("(")):
                    break
                line = line.rstrip() + " " + nxt.strip()
                i += 1
                joined += 1
        out.append(line)
    return out


def split_call(call: str) -> tuple[str | None, str | None]:
    """`ns::f(int) (a=1, b=2)` -> (`ns::f(int)`, `a=1, b=2`): the last top-level group is the args."""
    call = call.strip()
    if not call.endswith(")"):
        return (call or None), None
    starts, depth = _parens(call, quotes_at_top=False)
    if depth != 0 or not starts:
        return call, None
    start = starts[-1]
    function = call[:start].strip()
    return (function or None), call[start + 1 : -1]


class _Builder(Transformer[Token, Backtrace]):
    """One method per grammar rule."""

    def start(self, items: list[Any]) -> Backtrace:
        return assemble(items)

    def thread(self, items: list[Any]) -> Thread:
        header: Thread = items[0]
        return replace(header, frames=tuple(f for f in items[1:] if isinstance(f, Frame)))

    def thread_header(self, items: list[Any]) -> Thread:
        number_text = str(items[1])
        number = int(number_text.rsplit(".", 1)[-1])
        kind_id: tuple[str, str, int | None] = items[2]
        return Thread(number=number, lwp=kind_id[2], frames=(), tid=kind_id[1])

    def thread_target(self, items: list[Any]) -> tuple[str, str, int | None]:
        tokens = [str(t) for t in items if t.type in ("TARGET_KIND", "TARGET_ID")]
        kind, ident = tokens[0], tokens[1]
        lwp: int | None = None
        if len(tokens) >= 4 and tokens[2] == "LWP":
            lwp = int(tokens[3])
        elif kind in ("LWP", "process") or not ident.startswith("0x"):
            lwp = int(ident)  # old gdb: `Thread 19965` is the LWP itself
        return kind, ident, lwp

    def frames(self, items: list[Frame]) -> _Loose:
        return _Loose(tuple(items))

    def frame(self, items: list[Any]) -> Frame:
        head: Frame = items[0]
        for detail in items[1:]:
            m = _SOURCE_LINE.match(detail)
            if m and head.source is None and head.line is not None and int(m.group(1)) == head.line:
                head = replace(head, source=m.group(2).strip())
        return head

    def frame_head(self, items: list[Any]) -> Frame:
        index = int(str(items[0])[1:])
        address = function = file = library = None
        line: int | None = None
        for item in items[1:]:
            if isinstance(item, tuple):
                file, line, library = item
            elif item.type == "ADDRESS":
                address = str(item)
            elif item.type == "SIGNAL_HANDLER":
                function = SIGNAL_HANDLER
            elif item.type == "CALL":
                function, _args = split_call(str(item))
                function = None if function == "??" else function
        return Frame(
            function=function,
            file=file,
            line=line,
            library=library,
            address=address,
            index=index,
        )

    def location(self, items: list[Token]) -> tuple[str | None, int | None, str | None]:
        path = str(items[1])
        if items[0].type == "FROM":
            return None, None, path
        if len(items) > 2:
            return path, int(items[2]), None
        if re.search(r"\.so(\.[\d.]+)?$", path):  # `() at /lib64/libc.so.6`: a library
            return None, None, path
        return path, None, None

    def detail(self, items: list[Token]) -> str:
        return str(items[0])

    def note(self, items: list[Any]) -> _Note:
        item = items[0]
        return item if isinstance(item, _Note) else _Note("text", str(item))

    def core_line(self, items: list[Token]) -> _Note:
        command = str(items[1]).strip().lstrip("`")
        return _Note("core", re.sub(r"'\.?\s*$", "", command))

    def signal_line(self, items: list[Token]) -> _Note:
        return _Note("signal", signal_name(str(items[1])) or "")


def assemble(items: list[Any]) -> Backtrace:
    """Threads, the crash frame section and the notes -> a Backtrace."""
    groups: list[Thread | _Loose] = []
    signal = command = None
    for item in items:
        if isinstance(item, _Note):
            if item.kind == "signal" and signal is None:
                signal = item.value
            elif item.kind == "core" and command is None:
                command = item.value
        else:
            groups.extend(_split_restarts(item))
    crash_frame: Frame | None = None
    headed = [i for i, g in enumerate(groups) if isinstance(g, Thread)]
    first = groups[0] if groups else None
    if isinstance(first, _Loose) and len(groups) > 1 and (headed or len(first.frames) == 1):
        crash_frame = first.frames[0]  # ABRT style: the frame gdb printed when it loaded the core
        groups = groups[1:]
    threads = tuple(g if isinstance(g, Thread) else Thread(None, None, g.frames) for g in groups)
    executable = command.split()[0] if command else None
    crash = find_crash_thread(threads, crash_frame)
    return Backtrace(threads=threads, crash_thread=crash, signal=signal, executable=executable)


def _split_restarts(group: Thread | _Loose) -> list[Thread | _Loose]:
    """A frame list that starts again at #0 is another thread (headerless pastes)."""
    frames = group.frames
    cuts = [i for i, f in enumerate(frames) if i and f.index == 0]
    if not cuts:
        return [group]
    bounds = [0, *cuts, len(frames)]
    parts = [frames[a:b] for a, b in itertools.pairwise(bounds)]
    first: Thread | _Loose = replace(group, frames=parts[0])
    return [first, *(_Loose(p) for p in parts[1:])]


def _parse(text: str) -> Backtrace:
    tree = load_parser("gdb_backtrace").parse(text)
    return _Builder().transform(tree)


def parse_text(text: str) -> Backtrace:
    """Parse gdb backtrace text. Never raises on odd input: lines that do not fit are skipped."""
    lines = join_lines(text)
    doc = "\n".join(lines) + "\n"
    try:
        return _parse(doc)
    except LarkError:
        pass
    kept: list[str] = []
    for line in lines:  # keep the lines that parse on their own; any sequence of them parses
        if line.strip():
            try:
                _parse(line.strip() + "\n")
            except LarkError:
                continue
        kept.append(line)
    try:
        return _parse("\n".join(kept) + "\n")
    except LarkError:
        return Backtrace(threads=())


def to_dict(bt: Backtrace) -> dict[str, Any]:
    """The JSON shape of a backtrace (stable keys)."""
    return backtrace_data(bt)


def parse_region(region: Region) -> list[Event]:
    """A backtrace pasted into a log -> one BACKTRACE event (nothing when no frame parses)."""
    # imported here: the signature code sits in analyzer.signatures, whose package may import parsers
    from analyzer.parse.gdb_event import backtrace_event, cut_backtrace

    prefixes = [split_prefix(line) for line in region.lines]
    messages = [p.message for p in prefixes]
    count = cut_backtrace(messages)
    bt = parse_text("\n".join(messages[:count]))
    if not any(t.frames for t in bt.threads):
        return []
    first = prefixes[0] if prefixes else None
    return [
        backtrace_event(
            bt,
            Location(region.file, region.start),
            text=region.lines[0] if region.lines else "",
            rank=first.rank if first and first.rank is not None else region.source_rank,
            host=first.host if first and first.host else region.source_host,
            end_line=region.start + max(count, 1) - 1,
        )
    ]


def parse_file(text: str, file: str, rank: int | None, host: str | None) -> tuple[list[Event], str | None]:
    """A file that is a gdb backtrace as a whole (saved `bt` / `thread apply all bt full`): one
    BACKTRACE event with what the text says about the fault."""
    from analyzer.parse.gdb_event import backtrace_event, fault_from_text

    lines = text.count("\n") + 1
    try:
        bt = parse_text(text)
    except Exception as exc:
        return [], f"backtrace not understood: {exc}"
    ev = backtrace_event(bt, Location(file, 1), text.split("\n", 1)[0], rank, host, end_line=lines)
    fault = fault_from_text(text)
    ev = replace(ev, fields={**ev.fields, **fault})
    if fault.get("fault_mapping"):
        ev = replace(ev, message=f"{ev.message}; fault at {fault['fault_address']} in {fault['fault_mapping']}")
    return [ev], None


PARSER = GrammarParser(
    "gdb_backtrace",
    (SourceKind.GDB_BACKTRACE,),
    tuple(TRIGGERS),
    parse_region,
    lambda text, file: to_dict(parse_text(text)),
    whole_file=parse_file,
)
