"""Python faulthandler dumps: the fatal signal and every thread's Python stack."""

from __future__ import annotations

import re

from lark import Token, Transformer
from lark.exceptions import LarkError

from analyzer.model import Event, EventKind, Frame, Location, SourceKind, Thread
from analyzer.parse._lark import load_parser
from analyzer.parse.base import GrammarParser, Region, Trigger, origin, unparsed
from analyzer.parse.prefix import split_prefix

# the watchdog of faulthandler.dump_traceback_later (pytest's faulthandler_timeout, a job's own
# stall guard): Modules/faulthandler.c, Python 3.3 to 3.13
TIMEOUT = re.compile(r"^Timeout \((\d+:\d\d:\d\d)(?:\.\d+)?\)!$")
TRIGGERS = (Trigger(r"Fatal Python error: ", block=300), Trigger(r"^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!$", block=300))

_SHAPE = re.compile(
    r"^(?:Fatal Python error: .*|Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!|(?:Current thread|Thread) 0x[0-9a-fA-F]+.*\(most recent call first\):|"
    r"Stack \(most recent call first\):|\s*File \".*\", line \d+ in .*|\s+<no Python frame>|\s*)$"
)
_FRAME = re.compile(r'^\s*File "([^"]*)", line (\d+) in (.*)$')
_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Aborted": "SIGABRT",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


class _ToModel(Transformer[Token, object]):
    def start(self, items: list[object]) -> tuple[str | None, list[tuple[bool, Thread]]]:
        fatal = next((i for i in items if isinstance(i, str)), None)
        threads = [i for i in items if isinstance(i, tuple)]
        return fatal, threads

    def fatal(self, items: list[Token]) -> str:
        text = str(items[0])
        return text[len("Fatal Python error: ") :].strip() if text.startswith("Fatal Python error: ") else text.strip()

    def bare(self, items: list[object]) -> tuple[bool, Thread]:
        return True, Thread(None, None, tuple(i for i in items if isinstance(i, Frame)), None)

    def thread(self, items: list[object]) -> tuple[bool, Thread]:
        header = str(items[0])
        frames = tuple(i for i in items[1:] if isinstance(i, Frame))
        tid = re.search(r"0x[0-9a-fA-F]+", header)
        return header.startswith(("Current thread", "Stack")), Thread(None, None, frames, tid.group(0) if tid else None)

    def frame(self, items: list[Token]) -> Frame:
        m = _FRAME.match(str(items[0]))
        if not m:
            return Frame(function="<no Python frame>")
        return Frame(function=m.group(3).strip(), file=m.group(1), line=int(m.group(2)))


def parse_lines(lines: list[str]) -> tuple[str | None, list[tuple[bool, Thread]]] | None:
    try:
        tree = load_parser("faulthandler").parse("\n".join(lines) + "\n")
    except LarkError:
        return None
    result = _ToModel().transform(tree)
    assert isinstance(result, tuple)
    return result


def parse_region(region: Region) -> list[Event]:
    first = split_prefix(region.lines[0])
    body: list[str] = []
    for raw in region.lines:
        msg = split_prefix(raw).message
        if not _SHAPE.match(msg):
            break
        body.append(msg)
    parsed = parse_lines(body)
    if parsed is None:
        return [unparsed(region, 0, "faulthandler dump not understood")]
    fatal, threads = parsed
    timeout = TIMEOUT.match(fatal or "")
    if timeout:
        fatal = None
    current = next((t for is_cur, t in threads if is_cur), threads[0][1] if threads else None)
    sig = next((s for k, s in _SIGNALS.items() if fatal and fatal.startswith(k)), None)
    frames = current.frames if current else ()
    fields: dict[str, object] = {
        "fatal_error": fatal,
        "signal": sig,
        "threads": len(threads),
        "frames": [f"{f.file}:{f.line} {f.function}" for f in frames],
        "frame_files": [f.file for f in frames if f.file],
        "frame_functions": [f.function for f in frames if f.function],
    }
    if timeout:
        fields["timeout"] = timeout.group(1)  # dump_traceback_later's dump: still running after this long
    message = f"Fatal Python error: {fatal}" if fatal else timeout.group(0) if timeout else "faulthandler dump"
    return [
        Event(
            kind=EventKind.FAULTHANDLER,
            loc=Location(region.file, region.start),
            text=region.lines[0],
            message=message,
            **origin(first, region),
            fields=fields,
            end_line=region.start + len(body) - 1,
        )
    ]


PARSER = GrammarParser("faulthandler", (SourceKind.FAULTHANDLER,), tuple(TRIGGERS), parse_region, None)
