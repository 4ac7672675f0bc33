"""Multi-line kernel records: the OOM-killer report and the oops (WARNING / BUG / Oops / panic /
lockdep report with its call trace and module list), assembled from line records.

A block is a run of line records. `group` walks the records once and says where each block
starts and ends; the caller turns each block into one event. The rules that end a block are
written down next to the code that applies them, because a kernel log has no closing marker
for most of its reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.parse._dmesg_lines import KernelFrame, LineRecord, parse_line

OOM_MAX_LINES = 1500  # an OOM report lists every task of the host or cgroup
OOPS_MAX_LINES = 300

# records that are never part of an oops or OOM report: they end the block before them
_STANDALONE = frozenset({"xid", "nvrm_gpu", "segfault", "trap", "aer", "oom_invoked"})

# The kernel's WARNING header, in the shapes the kernel prints it: __warn() ("WARNING: CPU: 3 PID: 42
# at <file>:<line> <func>", "WARNING: <file>:<line> at <func>, CPU#3: <comm>/42", before 4.x "WARNING:
# at <file>:<line> <func>()") and lockdep ("WARNING: possible circular locking dependency detected",
# "WARNING: suspicious RCU usage", ...). Programs print "WARNING: <sentence>" too (Open MPI's help
# texts, installers): those are not kernel warnings.
KERNEL_WARNING = (
    r"WARNING: (?:CPU: ?\d+ PID: ?\d+ |at \S+:\d+|at [\w.]+\+0x|\S+:\d+ at |possible |suspicious |inconsistent "
    r"|bad unlock |lock held |held lock |Nested lock |HARDIRQ|SOFTIRQ|chain_key |\S+/\d+ still has locks held)"
)

_OOPS_HEADER = re.compile(
    r"^(?:\[ ?)?(?:" + KERNEL_WARNING + r"|BUG[: ]|kernel BUG at|Oops[:\s]|Internal error: Oops|general protection fault"
    r"|Unable to handle kernel|Kernel panic - not syncing|(?:NMI )?watchdog: BUG: soft lockup"
    r"|INFO: (?:task .+ blocked for more than|rcu_\w+ (?:self-)?detected stall|possible|suspicious|inconsistent)"
    r"|divide error:|invalid opcode:|BUG: unable to handle)"
)
_OOPS_SEPARATOR = re.compile(r"^(?:={20,}|-+\[ cut here \]-+)\s*$")
_OOPS_END = re.compile(r"^-+\[ end (?:trace|Kernel panic)")
_TRACE_START = re.compile(r"^(?:Call Trace:|Backtrace:|stack backtrace:|Call trace:)")
# after these, frame-looking lines are not call-trace frames any more
_FRAMES_CLOSED = re.compile(r"^(?:Last Breaking-Event-Address:|RIP  \[<|Instruction dump:|Code:)")
# lines that an oops has after its first frame and that do not end it
_OOPS_BODY = re.compile(
    r"^(?:Call Trace|Backtrace|stack backtrace|Call trace|Stack|Code|RIP|RSP|EIP|ESP|PC is|LR is|pc :|lr :|sp :"
    r"|[xrR]\d+\b|[A-Z][A-Z0-9]{1,4}:|Instruction dump|Last Breaking|Krnl|Kernel Offset|Modules linked|"
    r"Hardware name|CPU|Pid|Process|task|---\[|</?(?:TASK|IRQ|NMI|EOI|SOFTIRQ)>|\? |\(|Exception stack|Mem abort"
    r"|Kernel panic|NIP|LR|MSR|GPR|SOFTE|CFAR|REGS|irq event stamp|hardirqs|softirqs|[0-9a-f]{8,16}(?:\s|$)"
    r"|#\d|\d+ locks? held|other info|INFO:|Dumping|Current process|Running on|current=|regs and|Stacktrace"
    r"|PC:|CPSR|No MM|ESR|FAR|Data abort|SError|Workqueue|$)"
)
_TASK = re.compile(r"CPU: ?\d+ PID: (\d+) Comm: (\S+)|Pid: (\d+), comm: (\S+)")
_TAINT = re.compile(r"(Not tainted|Tainted: [A-Z ]*?) +(\d[\w.+-]*) #")


@dataclass
class Oops:
    """A kernel oops / BUG / WARNING / lockdep report as one record."""

    start: int  # index of its first line record
    end: int  # index of its last line record
    title: str
    kind: str
    frames: list[KernelFrame] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    pid: int | None = None
    process: str | None = None
    tainted: str | None = None
    kernel: str | None = None


_KINDS = (
    ("soft lockup", "soft_lockup"),
    ("blocked for more than", "hung_task"),
    ("detected stall", "rcu_stall"),
    ("kernel panic", "panic"),
    ("general protection", "general_protection"),
    ("[ info:", "lockdep"),
    ("[ bug:", "lockdep"),
    ("info: ", "lockdep"),
    ("warning:", "warning"),
    ("kernel bug", "bug"),
    ("bug", "bug"),
    ("oops", "oops"),
    ("internal error", "oops"),
    ("unable to handle", "oops"),
)


def oops_kind(title: str) -> str:
    """warning | bug | oops | panic | lockdep | soft_lockup | hung_task | rcu_stall | general_protection."""
    lowered = title.lower()
    prefix = next((kind for key, kind in _KINDS if lowered.startswith(key)), None)
    return prefix or next((kind for key, kind in _KINDS if key in lowered), "oops")


def starts_oops(rec: LineRecord) -> bool:
    return rec.kind == "plain" and bool(
        _OOPS_HEADER.match(rec.message) or _OOPS_SEPARATOR.match(rec.message) or _TRACE_START.match(rec.message)
    )


def collect_oops(records: Sequence[LineRecord], lines: Sequence[str], start: int) -> Oops:
    """The oops that starts at records[start]; `lines` are the raw lines (for module continuations)."""
    oops = Oops(start, start, "", "oops")
    seen_trace = frames_closed = False
    title_found = False
    i = start
    while i < len(records) and i - start < OOPS_MAX_LINES:
        rec = records[i]
        msg = rec.message
        if i > start:
            if rec.kind in _STANDALONE or rec.kind == "killed" or rec.kind == "oom_kill":
                break
            is_header = rec.kind == "plain" and bool(_OOPS_HEADER.match(msg) or _OOPS_SEPARATOR.match(msg))
            # a new report starts a new block once this one has its trace; before, it is the same report
            # (BUG: ... then Oops: ..., or a separator line then the header)
            if is_header and (oops.frames or seen_trace and title_found):
                break
            # after its call trace, a line that no oops has ends it (lockdep reports have free text between
            # their lock-chain frames, so only lines after the trace marker count)
            if seen_trace and oops.frames and rec.kind == "plain" and not _OOPS_BODY.match(msg) and not _indented(lines[i], rec):
                break
        oops.end = i
        if not title_found and rec.kind == "plain" and _OOPS_HEADER.match(msg):
            oops.title, oops.kind, title_found = msg.strip(), oops_kind(msg), True
        if _TRACE_START.match(msg):
            if not seen_trace:
                oops.frames.clear()  # frames before the first trace marker are lock sites, not the stack
            seen_trace, frames_closed = True, False
        elif _FRAMES_CLOSED.match(msg):
            frames_closed = True
        if rec.kind == "frame" and rec.frame is not None and not frames_closed:
            oops.frames.append(rec.frame)
        elif rec.kind == "modules":
            oops.modules.extend(rec.modules)
            i = _module_continuation(records, lines, i, oops)
        _task_info(oops, msg)
        if _OOPS_END.match(msg):
            break
        i += 1
    if not title_found:
        oops.title = next(
            (r.message for r in records[start : oops.end + 1] if r.message and not _OOPS_SEPARATOR.match(r.message)), "Call Trace"
        )
        oops.kind = oops_kind(oops.title) if _OOPS_HEADER.match(oops.title) else "call_trace"
    return oops


def _indented(raw: str, rec: LineRecord) -> bool:
    return raw[rec.stamps.end : rec.stamps.end + 1].isspace()


def _module_continuation(records: Sequence[LineRecord], lines: Sequence[str], i: int, oops: Oops) -> int:
    """A long module list is cut into a second line that has no clock prefix of its own."""
    raw = lines[i]
    if i + 1 >= len(records) or len(raw) < 400 or "[last unloaded:" in raw:
        return i
    nxt = lines[i + 1]
    if not (raw.endswith((" ", "\t")) or nxt[:1].isspace()):
        return i
    cont = parse_line(nxt, start="modules_cont_line")
    if cont.kind != "modules_cont" or (records[i].stamps.end and cont.stamps.end):
        return i
    oops.modules.extend(cont.modules)
    oops.end = i + 1
    return i + 1


def _task_info(oops: Oops, msg: str) -> None:
    if oops.pid is None:
        m = _TASK.search(msg)
        if m:
            oops.pid = int(m.group(1) or m.group(3))
            oops.process = m.group(2) or m.group(4)
    if oops.kernel is None:
        m = _TAINT.search(msg)
        if m:
            oops.tainted, oops.kernel = m.group(1), m.group(2)


def collect_oom(records: Sequence[LineRecord], start: int) -> tuple[int, dict[str, object]]:
    """The OOM-killer report that starts at records[start] (an `invoked oom-killer` or `oom-kill:`
    line, or a lone `Kill process` line): its last index and the fields of its kill."""
    fields: dict[str, object] = {}
    end = start
    i = start
    while i < len(records) and i - start < OOM_MAX_LINES:
        rec = records[i]
        if i > start and (rec.kind in _STANDALONE or (rec.kind == "plain" and _OOPS_HEADER.match(rec.message))):
            break
        end = i
        if rec.kind in ("oom_invoked", "oom_kill", "killed"):
            for key, value in rec.fields.items():
                if value is not None and (key not in fields or rec.kind == "killed"):
                    fields[key] = value
            if rec.kind == "killed" and rec.fields.get("kill_verb") == "Killed":
                fields["killed_line_index"] = i
                break
        elif rec.kind == "plain" and rec.message.startswith("memory: usage"):
            m = re.match(r"memory: usage (\d+)kB, limit (\d+)kB", rec.message)
            if m:
                fields["memcg_usage_kb"], fields["memcg_limit_kb"] = int(m.group(1)), int(m.group(2))
        i += 1
    if "killed_line_index" not in fields:
        # no kill line: the report ends where its own lines end, not at the next unrelated line
        end = max((j for j in range(start, end + 1) if records[j].kind in ("oom_invoked", "oom_kill", "killed")), default=start)
    return end, fields
