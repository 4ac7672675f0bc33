"""Python tracebacks in logs: cut out of the surrounding lines, then parsed with Lark.

The cutting is line work (which lines belong to the traceback, across other ranks' interleaved
lines); the structure of what was cut is the grammar's (grammars/python_traceback.lark).
Frames come out innermost first, the order gdb and satyr use.
"""

from __future__ import annotations

import re
from dataclasses import replace

from lark import Token, Transformer
from lark.exceptions import LarkError

from analyzer.model import Event, EventKind, Frame, Location, PyException, PyTraceback, SourceKind
from analyzer.model.serialize import PYTHON_FRAME_KEYS, frame_data
from analyzer.parse._lark import load_parser
from analyzer.parse.base import GrammarParser, Region, Trigger, origin, unparsed
from analyzer.parse.prefix import Prefix, split_prefix

TRIGGERS = (
    Trigger(r"Traceback \(most recent call last\):", block=400),
    Trigger(r"^\s*File \"[^\"]+\", line \d+\s*$", block=6),  # a SyntaxError without a header
    # a frame where no traceback's header came before (frames inside a parsed traceback are its
    # own): what a log kept of a traceback whose start was cut off, or one whose header another
    # prefix interrupted; a fragment is read only as a whole traceback or as one the log ends in
    # (the frames after a header or a first frame are in what that line handed over: a frame
    # within 8 lines of the previous trigger line starts nothing)
    Trigger(r"File \"[^\"]+\", line \d+, in \S", block=400, continues=8),
    # IPython's (Jupyter's) verbose traceback: the exception's name, then the words right-aligned
    Trigger(r"^[ \t]*[A-Za-z_][\w.]*[ \t]{2,}Traceback \(most recent call last\)[ \t]*$", block=400),
)

_HEADER = "Traceback (most recent call last):"
_LINKS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_FRAME_TEXT = r'File "?([^"]*)", line (\d+)(?:, in (.*))?\s*$'  # a lost opening quote: pasted logs
_FRAME = re.compile(rf"^\s+{_FRAME_TEXT}")
# a frame line that lost its indentation (a traceback pasted where leading blanks are dropped):
# taken as a frame only inside a traceback, and the line after it as its source line
_BARE_FRAME = re.compile(f"^{_FRAME_TEXT}")
# an exception line; Ray's wrapped exceptions name their cause in parentheses
# (`ray.exceptions.RayTaskError(DistBackendError): ray::Actor.train() ...`)
_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:(?:(?<=Error)|(?<=Exception))\([A-Za-z_][\w.]*\))?)(?::\s?(.*))?$")
_EXC_NAME = re.compile(r"(?:Error|Exception|Interrupt|Exit|Warning|Failure|Fault|Iteration|Timeout)$")
MAX_CONTINUATION = 12


def _key(p: Prefix) -> tuple[object, ...]:
    return (p.rank, p.local_rank, p.host)


def cut(lines: list[str]) -> tuple[list[str], int, list[Prefix]]:
    """The lines of the traceback chain that starts at lines[0], its last index in `lines`.

    Lines of other ranks (another prefix) in between are passed over.
    """
    first = split_prefix(lines[0])
    key = _key(first)
    out: list[str] = []
    prefixes: list[Prefix] = []
    state = "frames"
    last = 0
    blank_run = 0
    continuation = 0
    source_next = False  # the line after a frame that lost its indentation is that frame's source
    for i, raw in enumerate(lines):
        p = split_prefix(raw)
        if i and _key(p) != key and (p.rank, p.local_rank) != (None, None):
            continue  # another rank's line
        msg = p.message
        stripped = msg.strip()
        if state == "frames" and out and stripped and msg[:1] not in (" ", "\t"):
            msg, source_next = _reindent(msg, stripped, source_next)
        else:
            source_next = False
        if not stripped:
            blank_run += 1
            if blank_run > 2:
                break
            continue
        after_blank, blank_run = blank_run > 0, 0
        if state == "exception":
            if stripped in _LINKS:
                state = "link"
            elif (
                not after_blank
                and continuation < MAX_CONTINUATION
                and (
                    _continues(msg)
                    or _empty_message(out[-1])
                    and not _looks_like_record(msg)
                    or _next_section(msg, out[-1], lines[i + 1 : i + 2])
                )
            ):
                out[-1] = out[-1] + "\n" + msg
                continuation += 1
                last = i
                continue
            else:
                break
        if state == "link":
            if stripped in _LINKS:
                out.append(stripped)
                prefixes.append(p)
                last = i
                continue
            if stripped == _HEADER:
                state = "frames"
            else:
                break
        if stripped == _HEADER:
            if out and out[-1] == _HEADER:
                break  # a header that no frame followed: the next traceback begins here
            out.append(_HEADER)
        elif _FRAME.match(msg):
            out.append(msg)
        elif msg[:1] in (" ", "\t"):
            if not out:
                break
            out.append(msg)
        elif _EXC.match(stripped) and out:
            out.append(stripped)
            state = "exception"
            continuation = 0
        else:
            if out and out[-1] == _HEADER:
                continue  # a log line between the header and the first frame
            break
        prefixes.append(p)
        last = i
    return out, last, prefixes


def _reindent(msg: str, stripped: str, source_next: bool) -> tuple[str, bool]:
    """A traceback line without indentation, given its indentation back where it is a frame
    (`File "...", line N, in f`) or the source line right after one (not the exception line):
    (the line, whether the next one is a source line)."""
    if _BARE_FRAME.match(msg):
        return "  " + msg, True
    if source_next and stripped != _HEADER and stripped not in _LINKS:
        name = msg.split(":", 1)[0]
        if not (_EXC.match(msg) and _EXC_NAME.search(name)):
            return "    " + msg, False
    return msg, False


def _next_section(msg: str, message: str, following: list[str]) -> bool:
    """A line that heads the next section of a message laid out as titled, indented blocks
    (Ray's version check: "Version mismatch: The cluster was started with:", its indented
    versions, then "This process on node ... was started with:" and its own)."""
    return (
        msg.rstrip().endswith(":")
        and "\n " in message
        and not message.rstrip().endswith(":")
        and not _looks_like_record(msg)
        and bool(following)
        and split_prefix(following[0]).message.startswith((" ", "\t"))
    )


def _empty_message(exc_line: str) -> bool:
    """`AssertionError:` with its message on the following lines (old torch's driver check)."""
    return exc_line.rstrip().endswith(":") and "\n" not in exc_line


# the start of a new log record (a bracketed or dated prefix, glog, NCCL, the next traceback):
# never part of the exception message before it
_NEW_RECORD = re.compile(r"^(?:\[|\d{4}-|[IWEF]\d{4} |\w+:\d+:\d+ \[|Traceback|During handling|The above exception)")


def _looks_like_record(msg: str) -> bool:
    return bool(_NEW_RECORD.match(msg))


def _continues(msg: str) -> bool:
    """A line that continues a multi-line exception message (not a new log record)."""
    if msg.startswith((" ", "\t")):
        return True
    if _looks_like_record(msg):
        return False
    if _EXC.match(msg) and _EXC_NAME.search(msg.split(":", 1)[0]):
        return False
    return bool(
        re.match(
            r"^(?:CUDA|HIP|For debugging|Compile with|Tried to|If reserved|See documentation|Of the allocated|Including non-PyTorch|Process \d+ has|This error|HINT|Exception raised from)",
            msg,
        )
    )


class _ToModel(Transformer[Token, list[PyTraceback]]):
    def start(self, items: list[object]) -> list[PyTraceback]:
        chain: list[PyTraceback] = []
        link: str | None = None
        for item in items:
            if isinstance(item, str):
                link = item
            elif isinstance(item, PyTraceback):
                if chain:
                    item = PyTraceback(item.exception, item.frames, tuple(chain), link)
                chain = [item]
        return chain

    def link(self, items: list[Token]) -> str:
        return "cause" if "direct cause" in str(items[0]) else "context"

    def header(self, items: list[Token]) -> None:
        return None

    def traceback(self, items: list[object]) -> PyTraceback:
        frames = [i for i in items if isinstance(i, Frame)]
        exc = next(i for i in items if isinstance(i, PyException))
        return PyTraceback(exc, tuple(reversed(frames)))

    def frame(self, items: list[object]) -> Frame:
        m = _FRAME.match(str(items[0]))
        assert m is not None
        code = [str(i) for i in items[1:] if isinstance(i, str)]
        source = next((c.strip() for c in code if c.strip() and not set(c.strip()) <= set("^~ ")), None)
        func = m.group(3).strip() if m.group(3) else None
        return Frame(function=func, file=m.group(1), line=int(m.group(2)), source=source)

    def code(self, items: list[Token]) -> str:
        return str(items[0])

    def exception(self, items: list[Token]) -> PyException:
        text = str(items[0])
        m = _EXC.match(text.split("\n", 1)[0])
        assert m is not None
        message = (m.group(2) or "").strip()
        rest = text.split("\n", 1)[1:] if "\n" in text else []
        if rest:
            message = (message + "\n" + rest[0]).strip()
        return PyException(m.group(1), message)


def parse_lines(lines: list[str]) -> PyTraceback | None:
    """Parse the cut lines of one chain; None when the grammar rejects them."""
    # continuation lines of the message travel inside the exception line's token
    text = "\n".join(line.replace("\n", "\x00") for line in lines) + "\n"
    try:
        tree = load_parser("python_traceback").parse(text)
    except LarkError:
        return None
    chain = _ToModel().transform(tree)
    if not chain:
        return None
    return _unmask(chain[0])


def _unmask(tb: PyTraceback) -> PyTraceback:
    exc = PyException(tb.exception.type, tb.exception.message.replace("\x00", "\n").strip())
    return PyTraceback(exc, tb.frames, tuple(_unmask(c) for c in tb.chained), tb.chain_kind)


def parse_text(text: str) -> list[PyTraceback]:
    """Every traceback chain in a text (for `postmortem parse python_traceback`)."""
    lines = text.splitlines()
    found: list[PyTraceback] = []
    i = 0
    while i < len(lines):
        msg = split_prefix(lines[i]).message
        if msg.strip() == _HEADER or (_FRAME.match(msg) and not _frame_before(lines, i)):
            cut_lines, last, _ = cut(lines[i:])
            tb = parse_lines(cut_lines) if cut_lines else None
            if tb is not None:
                found.append(tb)
                i += last + 1
                continue
        i += 1
    return found


def _frame_before(lines: list[str], i: int) -> bool:
    if i == 0:
        return False
    prev = split_prefix(lines[i - 1]).message
    return bool(_FRAME.match(prev) or prev.startswith((" ", "\t")) or prev.strip() == _HEADER)


# IPython/core/ultratb.py VerboseTB (2.x to 9.x): a header `<ExcName>   Traceback (most recent call
# last)` (no colon), frames `<file> in <func>(<args>)` (before 8.0) or `File <file>:<line>, in
# <func>(<args>)` / `Cell In[3], line 1` (8.0+), each with numbered source lines (`---> 12`), and
# the exception `<ExcName>: <message>` last
_IPY_HEADER = re.compile(r"^\s*([A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)\s*$")
_IPY_SOURCE = re.compile(r"^(?:\s|-*>\s*\d)")  # a frame's numbered source lines, `---> 12` the current one
_IPY_FRAME_OLD = re.compile(r"^(\S.*?) in ([\w.<>]+)\(")
_IPY_FRAME_NEW = re.compile(r"^(?:File (\S.*?):(\d+)|Cell In\[\d+\], line (\d+))(?:, in ([\w.<>]+))?")


def _parse_ipython(region: Region, lines: list[str], first: Prefix, name: str) -> list[Event]:
    """An IPython traceback: its exception's type from the header, its frames, and its message
    from the exception line (a cut one, where the log ends before that line, keeps the type)."""
    frames: list[Frame] = []
    exc_message = ""
    last = 0
    found = False
    for i, raw in enumerate(lines[1:], start=1):
        msg = split_prefix(raw).message.rstrip()
        if not msg.strip() or _IPY_SOURCE.match(msg) or set(msg) <= {"-"}:
            last = i if msg.strip() else last
            continue
        new, old = _IPY_FRAME_NEW.match(msg), _IPY_FRAME_OLD.match(msg)
        if new:
            line = new.group(2) or new.group(3)
            frames.append(Frame(function=new.group(4), file=new.group(1) or "<cell>", line=int(line) if line else None))
        elif old:
            frames.append(Frame(function=old.group(2), file=old.group(1)))
        elif msg == name or msg.startswith(name + ":"):
            exc_message = msg[len(name) + 1 :].strip()
            last, found = i, True
            break
        else:
            break
        last = i
    if not found and not _ends_the_log(lines, last):
        return []  # a header the log goes on after without its exception: not read
    frames.reverse()  # innermost first
    tb = PyTraceback(exception=PyException(type=name, message=exc_message), frames=tuple(frames))
    at = region.line_no(last)
    return [_traceback_event(region, lines, first, tb, at if found else region.start, at, cut=not found)]


def _frame_text(f: Frame) -> str:
    where = f"{f.file}:{f.line}" if f.line is not None else f"{f.file}"
    return f"{where} {f.function or ''}".strip()


def _traceback_event(
    region: Region, lines: list[str], first: Prefix, tb: PyTraceback, line: int, end_line: int, cut: bool
) -> Event:
    """The event of a parsed traceback (at its exception line `line`); `cut`: the log ends
    before its exception line, or in a later link of its chain."""
    fields: dict[str, object] = {
        "exception_type": tb.exception.type,
        "exception_message": tb.exception.message,
        "frames": [_frame_text(f) for f in tb.frames],
        "frame_files": [f.file for f in tb.frames if f.file],
        "frame_functions": [f.function for f in tb.frames if f.function],
        # the file of the innermost frame (frames are innermost first): where the exception was raised
        "raising_file": tb.frames[0].file if tb.frames and tb.frames[0].file else None,
        "chained": [f"{c.exception.type}: {c.exception.message}" for c in tb.chained],
        "start_line": region.start,
        "traceback": tb,
    }
    if cut:
        fields["cut_traceback"] = True
    message = f"{tb.exception.type}: {tb.exception.message}" if tb.exception.message else tb.exception.type
    return Event(
        kind=EventKind.TRACEBACK,
        loc=Location(region.file, line),
        text=lines[0],
        message=message,
        **origin(first, region),
        fields=fields,
        end_line=end_line,
    )


def parse_region(region: Region) -> list[Event]:
    lines = list(region.lines)
    first = split_prefix(lines[0])
    ipython = _IPY_HEADER.match(first.message)
    if ipython:
        return _parse_ipython(region, lines, first, ipython.group(1))
    if first.message.strip() != _HEADER and not _FRAME.match(first.message):
        return []
    cut_lines, last, prefixes = cut(lines)
    tb = parse_lines(cut_lines) if cut_lines else None
    cut_short = False
    at_end = tb is None and _ends_the_log(lines, last)
    if at_end:
        # the log ends inside a later link of the chain: the links before it are whole
        whole = _whole_links(cut_lines)
        tb = parse_lines(whole) if whole else None
        cut_short = tb is not None
    if (
        tb is None
        and first.message.strip() != _HEADER
        and _FRAME.match(first.message)
        and ", in " in first.message
        and not at_end
    ):
        # frames without a header or an exception line (a printed stack, say): no traceback; the
        # region is still marked read, so its later frames do not each start another one
        ev = unparsed(region, 0, "frames without a traceback header or an exception line")
        return [replace(ev, end_line=region.line_no(last))]
    if tb is None:
        if at_end and not any(_EXC.match(line.strip()) and not _FRAME.match(line) for line in cut_lines[1:]):
            # the log ends inside the traceback, before its exception line: a process died while it
            # printed it, or what was kept of the log stops there; either way an exception was on
            # its way out, and its type is lost
            ev = unparsed(region, 0, "traceback cut before its exception line: the log ends there")
            fields = {**ev.fields, "cut_traceback": True}
            return [
                replace(ev, message=first.message.strip(), **origin(first, region), fields=fields, end_line=region.line_no(last))
            ]
        note = "traceback header without frames" if not cut_lines else "traceback the grammar could not parse"
        return [unparsed(region, 0, note)]
    exc_line = region.line_no(last)
    # find the exception line itself (the last line of the innermost traceback)
    for i in range(last, -1, -1):
        if split_prefix(lines[i]).message.strip().startswith(tb.exception.type):
            exc_line = region.line_no(i)
            break
    return [_traceback_event(region, lines, first, tb, exc_line, region.line_no(last), cut=cut_short)]


def _whole_links(cut_lines: list[str]) -> list[str]:
    """The cut lines up to (not including) the last link line of the chain, or [] without one."""
    links = [i for i, line in enumerate(cut_lines) if line in _LINKS]
    return cut_lines[: links[-1]] if links else []


def _ends_the_log(lines: list[str], last: int) -> bool:
    """Nothing but blank lines follows the traceback's last line, and the region is shorter than
    its trigger's block (so the file ended there, not the block)."""
    return len(lines) <= TRIGGERS[0].block and not any(line.strip() for line in lines[last + 1 :])


def to_dict(tb: PyTraceback) -> dict[str, object]:
    return {
        "exception": {"type": tb.exception.type, "message": tb.exception.message},
        "frames": [frame_data(f, PYTHON_FRAME_KEYS) for f in tb.frames],
        "chained": [to_dict(c) for c in tb.chained],
        "chain_kind": tb.chain_kind,
    }


PARSER = GrammarParser(
    "python_traceback",
    (SourceKind.TRAINING_LOG,),
    tuple(TRIGGERS),
    parse_region,
    lambda text, file: {"tracebacks": [to_dict(tb) for tb in parse_text(text)]},
)
