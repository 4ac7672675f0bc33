"""Whether a run dir shows a failure at all, and which categories its evidence can support.

A verdict names a category only on evidence for it. Failure evidence is what a dying job leaves:
a signature that fired as a root cause or a symptom, a Python traceback that was not caught and
logged, a launcher's report of a failed child or a non-zero exit, a fatal signal, a kernel OOM
kill, oops or Xid, a core or a native backtrace, a collective timeout, a chain of NCCL's error
returns, an NCCL WARN line or a CUDA error report that says something failed. Routine chatter
(other NCCL INFO lines, warnings, a corrected PCIe error, lines that merely contain the word
"error") is not.

Without failure evidence the verdict is `none`. With failure evidence, the classifier may only
choose among the categories that some finding supports (its `candidates`); with none of those,
the verdict is `unknown`. A context line of a `supports` signature (memory pressure the program
survived) is never failure evidence, but it makes its category a candidate for a failure that
came after it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from analyzer.classify.cues import carries_on, goes_on, reports_failure
from analyzer.correlate.versions import version_key
from analyzer.events.placement import EXCEPTION_NAME, TF1_SUFFIX
from analyzer.model import Category, Event, EventKind, Finding, Role, SourceInfo, SourceKind, SourceStatus
from analyzer.signatures.xid import classify_xid

# kinds of event that are a failure by themselves
_FAILURE_KINDS = frozenset(
    {
        EventKind.ELASTIC_FAILURE,
        EventKind.SIGNAL,
        EventKind.FAULTHANDLER,
        EventKind.WATCHDOG,
        EventKind.OOM_KILL,
        EventKind.OOPS,
        EventKind.BACKTRACE,
        EventKind.CORE,
        EventKind.XID,
    }
)
# signals the kernel reports as it kills a process for a fault (arch/x86/mm/fault.c, kernel/traps.c)
_FATAL_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})
# a logging record that introduces a traceback it caught (`logger.exception(...)`): the traceback
# was handled, the process went on
_LOGGED = re.compile(r"^(?:ERROR|CRITICAL|EXCEPTION):[\w.]*:|[\s|\[-](?:ERROR|CRITICAL|EXCEPTION)\s*[\]|:-]")


_SAYS_FAILURE = re.compile(
    r"\b(?:[Ff]ailure|FAILURE|FAILED|[Ff]atal|FATAL|[Ss]egmentation fault|[Bb]us error|[Cc]ore dumped|Aborted)\b"
    # what a program prints as it dies, also when the traceback's header was not kept: Python's
    # exception line (`RuntimeError: ...`, `torch.distributed.DistBackendError: ...`), a C
    # assert or glog CHECK, a C++ exception that reached std::terminate
    rf"|^{EXCEPTION_NAME}{TF1_SUFFIX}(?::\s|$)"
    r"|Assertion [`'].*[`'] failed|\bCheck failed\b|terminate called after throwing|^what\(\):"
    # a framework's report that an exception ended a thread, a process or one of its components
    # (RETURNN's "Unhandled exception <class 'RuntimeError'> in thread ...", sglang's "Scheduler hit
    # an exception: ...", Node's and Java's "Uncaught exception")
    r"|\b[Uu]nhandled exception\b|\b[Uu]ncaught exception\b|\bhit an exception\b"
    # a process reported as crashed (`Subprocess crashed, retrying...`); PaddlePaddle's crash
    # report (`C++ Traceback (most recent call last):`, framework/.../enforce and signal handler);
    # CTest's result of a failed test (`***Failed`, `***Exception: SegFault`, `***Timeout`);
    # OpenSSH's word that the remote command was killed (clientloop.c: `Killed by signal %d.`)
    r"|\b[Cc]rashed\b|^C\+\+ Traceback \(most recent call last\)|\*\*\*(?:Failed|Exception|Timeout)\b"
    r"|^Killed by signal \d+\."
    # a run console's or container tool's word that a process ended with a non-zero code or a
    # signal: JetBrains IDEs' "Process finished with exit code 139 (interrupted by signal 11:
    # SIGSEGV)" (ExecutionBundle's process.finished.with.exit.code), docker compose's
    # "<service> exited with code 137" (its log printer)
    r"|\bProcess finished with exit code [1-9]\d*\b|\binterrupted by signal \d+: SIG[A-Z]+\b"
    r"|^[\w.-]+ exited with code [1-9]\d*$"
    # NCCL's result strings (ncclGetErrorString, src/init.cc 2.3-2.30), quoted by whatever called
    # NCCL (c10d, Horovod, XLA, TensorFlow) when a call returned that error; the generic "internal
    # error" and "invalid argument" are left out
    r"|\bunhandled (?:cuda|system) error\b|remote process exited or there was a network error"
    r"|internal error - please report this issue to the NCCL developers"
    # a CUDA library's status other than success, as its callers and its own error log print it
    # (cuDNN's `E! ... Error: CUDNN_STATUS_EXECUTION_FAILED; Reason: ...`, cuBLAS's, ...)
    r"|\b(?:CUDNN|CUBLAS|CUSOLVER|CUSPARSE|CURAND|NVJPEG)_STATUS_(?!SUCCESS\b)[A-Z_]+\b"
)


# NCCL's WARN is its error level (src/include/debug.h): a WARN line in words that say something
# failed (`Cuda failure 217 '...'`, `Call to ibv_modify_qp failed`, `Got completion ... with error
# 12`, `Error while creating shared memory segment`, `Mismatched collective detected`) is a failure
# whatever its cause. Not the WARN lines NCCL prints and goes on after (a setting it ignores, a
# path it falls back from, a retry: `goes_on`), an InfiniBand event it calls non-fatal, or an optional
# library it probes for and does without (`Failed to open libibverbs.so[.1]` on a node with no IB)
# NCCL's WARN lines that say it could not do what was asked (`Could not find NET with id 0`,
# `Cannot create device communicator`, `Invalid rank requested`, `No transport found for rank`,
# `Unknown netDevs policy`, `Message truncated`: src/graph, init.cc, transport.cc, 2.3 to today)
# return an error to the caller after them, as the ones that name a failure do; NCCL's fallbacks
# (`Cannot initialize CollNet, using point-to-point network instead`, `Unable to open
# /tmp/topo.xml, not dumping topology`) say so
_NCCL_WARN_FAILED = re.compile(
    r"\b(?:[Ff]ailed|[Ff]ailure|[Ee]rror|ERROR|[Mm]ismatched)\b"
    r"|\b(?:[Cc]ould not|[Cc]annot|[Cc]an't|[Uu]nable to|[Ii]nvalid|[Uu]nknown|[Nn]ot enough|truncated)\b"
    r"|\b(?:not|[Nn]o \w+(?: \w+)?) found\b"
)
_NCCL_WARN_GOES_ON = re.compile(r"\bnon-fatal\b|\bFailed to open lib[\w.+-]*\.so\b|\busing [\w -]+ instead\b|, not \w+ing\b")
# a CUDA call's error as its callers report it (`CUDA error 217 at ggml-cuda.cu:6292: ...`,
# `Failed: Cuda error file.cuh:307 '...'`, `cuda runtime error (77) : ...`, `THCudaCheck FAIL`,
# `hipErrorNoBinaryForGpu: ...`): a failure whatever the code, unless the line is a lower-level
# record or a retry; which code it is, the signatures and the closed vocabulary judge
_CUDA_ERROR_REPORT = re.compile(
    r"\b(?:CUDA|Cuda|cuda) (?:runtime )?error\b(?!s)|\bCuda failure\b|\bTHCudaCheck FAIL\b"
    r"|\bcudaError[A-Z]\w+\b|\bCUDA_ERROR_[A-Z_]{3,}\b|\bhipError[A-Z]\w+\b"
)


def nccl_warn_failed(message: str) -> bool:
    """An NCCL WARN line whose words say that something failed, and not that NCCL went on (its
    level is WARN whatever else the line names: `NCCL_DEBUG=INFO` in a hint is no INFO record)."""
    return bool(_NCCL_WARN_FAILED.search(message)) and not (_NCCL_WARN_GOES_ON.search(message) or goes_on(message))


def cuda_error_report(message: str, text: str = "") -> bool:
    """A line that reports a CUDA (or HIP) call's error, not as a lower-level record or a retry."""
    return bool(_CUDA_ERROR_REPORT.search(message)) and not carries_on(message, text)


def finished(events: list[Event]) -> bool:
    """A launcher said that the job (or this node's worker group) finished well."""
    return any(e.fields.get("outcome") == "succeeded" for e in events)


def is_failure_event(e: Event, named: bool = False) -> bool:
    """An event that says by itself that something failed (whatever the cause). `named`: some
    signature made a finding of this line (else a line only a signature's prefilter caught is
    read like any other line that no signature names)."""
    if e.kind is EventKind.XID and isinstance(e.fields.get("xid"), int):
        # an Xid the table calls harmless alone (corrected errors, a firmware watchdog) is context
        return not classify_xid(int(e.fields["xid"])).context_only
    if e.kind in _FAILURE_KINDS:
        return True
    if e.kind is EventKind.LAUNCHER_EXIT:
        code = e.fields.get("exitcode")
        return not (isinstance(code, int) and code == 0)
    if e.kind is EventKind.TRACEBACK:
        return not e.fields.get("caught")
    if e.kind is EventKind.UNPARSED and e.fields.get("cut_traceback"):
        return True  # the log ends inside a traceback: an exception was on its way out
    if e.kind is EventKind.KERNEL and e.fields.get("signal") in _FATAL_SIGNALS:
        # the kernel's report of a process it killed for a fault (`python[123]: segfault at ...`,
        # `traps: python[123] trap invalid opcode ...`): printed only for a signal nothing handled
        return True
    if e.kind is EventKind.NCCL and e.fields.get("nccl_error"):
        return True  # NCCL returned an error code to its caller (`NCCL error in: ...`)
    if e.kind is EventKind.NCCL and e.fields.get("error_code") and not {"nccl_level", "result"} & e.fields.keys():
        return True  # the caller's line naming the code it got (`ncclSystemError: System call ...`)
    if e.kind is EventKind.LINE and e.fields.get("last_error_record"):
        return True  # an error record that ends its log (mark_last_error_records)
    if e.kind is EventKind.LINE and (e.fields.get("generic") or not (named or e.fields.get("bookkeeping"))):
        # a line no signature names that still says a failure happened: the verdict is at least
        # `unknown` (a mere "error" or "failed" is too common in healthy chatter to count), or
        # whose words report one by themselves ("No space left on device": classify/cues.py)
        return _words_say_failure(e)
    if e.kind is EventKind.NCCL and e.fields.get("unparsed") and not (named or e.fields.get("nccl_level")):
        # a caller's line about NCCL that the grammar could not read (cut or reworded where the
        # log was copied: `NCCL error in: ..., unhandled system error, NCCL n 2.7.8`) is judged by
        # its words, as any line no signature names; NCCL's own records by their level, below
        return _words_say_failure(e)
    if e.kind is EventKind.NCCL and e.fields.get("nccl_level") == "WARN" and not named:
        # NCCL's error level, in words that report a failure
        return reports_failure(e.message, e.text) or nccl_warn_failed(e.message)
    return False


def _words_say_failure(e: Event) -> bool:
    """A line whose words say by themselves that something failed (as it dies, a failure cue, a
    CUDA call's error report)."""
    return bool(_SAYS_FAILURE.search(e.message)) or reports_failure(e.message, e.text) or cuda_error_report(e.message, e.text)


def failure_evidence(events: list[Event], findings: list[Finding]) -> list[Event]:
    """The events that show a failure: findings that are not mere context, and failure kinds.
    A line inside a parsed traceback (its exception line) is left to that traceback, which knows
    whether the program caught it."""
    out: dict[int, Event] = {}
    named = {(f.event.loc.file, f.event.loc.line) for f in findings}
    for f in findings:
        if _shows_failure(f):
            out[id(f.event)] = f.event
    spans: dict[str, list[tuple[int, int]]] = {}
    for e in events:
        if e.kind is EventKind.TRACEBACK and e.loc.line:
            spans.setdefault(e.loc.file, []).append((e.loc.line, e.end_line or e.loc.line))
    for e in events:
        line = e.loc.line or 0
        if e.kind is EventKind.LINE and any(a <= line <= b for a, b in spans.get(e.loc.file, ())):
            continue
        if is_failure_event(e, (e.loc.file, e.loc.line) in named):
            out[id(e)] = e
    for chain in error_chains(events):
        for e in chain:
            out.setdefault(id(e), e)
    return list(out.values())


# NCCL's checks (`NCCLCHECK` and kin, src/include/checks.h, 2.3 to today) print `<file>:<line> -> <result>`
# at INFO each time a call returns an error to its caller, so a failure leaves a chain of them up
# the call stack; one alone can be a connection that a finishing peer closed
ERROR_RETURN_CHAIN = 2


def mark_error_chains(events: list[Event]) -> list[Event]:
    """The events, the first line of each chain of NCCL error returns (its deepest frame, where
    the error began: NCCL prints the frames as they return) marked with the file it names
    (`error_chain_origin`) and the chain's length, for signatures to tell the subsystem that failed."""
    lengths = {id(chain[0]): len(chain) for chain in error_chains(events)}
    out = []
    for e in events:
        n = lengths.get(id(e))
        if n is not None:
            e = replace(e, fields={**e.fields, "error_chain_origin": e.fields.get("src_file"), "error_chain_length": n})
        out.append(e)
    return out


# NCCL prints `comm ... - Init COMPLETE` (src/init.cc, 2.4 to today) when a communicator is made;
# a file whose NCCL output has none never finished making one
_INIT_COMPLETE_SINCE = (2, 4)


def mark_init_incomplete(events: list[Event]) -> list[Event]:
    """The events, each NCCL INFO line of a file that never said `Init COMPLETE` marked
    (`init_incomplete: true`): where such lines end the log (a `last_words` signature), the
    processes stopped while making their communicator. Only a file whose NCCL banner (`NCCL
    version 2.x`) shows that its NCCL prints that line, and so that the file holds NCCL's output
    from its start, is marked; one that printed it for any communicator is not."""
    complete: set[str] = set()
    banner: set[str] = set()
    for e in events:
        if e.kind is EventKind.NCCL and e.fields.get("init") == "COMPLETE":
            complete.add(e.loc.file)
        elif e.kind is EventKind.VERSION and version_key(str(e.fields.get("nccl_version") or "")) >= _INIT_COMPLETE_SINCE:
            banner.add(e.loc.file)
    stalled = banner - complete
    if not stalled:
        return events
    return [
        replace(e, fields={**e.fields, "init_incomplete": True})
        if e.loc.file in stalled and e.kind is EventKind.NCCL and e.fields.get("nccl_level") == "INFO"
        else e
        for e in events
    ]


def error_chains(events: list[Event]) -> list[list[Event]]:
    """Per process (file and pid), its NCCL error-return lines (a non-zero ncclResult_t passed
    up) in order, where it printed at least ERROR_RETURN_CHAIN of them."""
    by_process: dict[tuple[str, int | None], list[Event]] = {}
    for e in events:
        result = e.fields.get("result") if e.kind is EventKind.NCCL else None
        if isinstance(result, int) and not isinstance(result, bool) and result != 0:
            by_process.setdefault((e.loc.file, e.pid), []).append(e)
    return [chain for chain in by_process.values() if len(chain) >= ERROR_RETURN_CHAIN]


def _shows_failure(f: Finding) -> bool:
    """A finding that is failure evidence: not context, not a traceback the program caught, not
    a symptom read from an NCCL INFO line (NCCL reports its failures at WARN; at INFO it only
    narrates, e.g. its service thread's connection closing at a normal teardown), unless that
    line is where the processes stopped while making their communicator."""
    if f.role is Role.CONTEXT or f.event.fields.get("caught"):
        return False
    if f.event.fields.get("init_incomplete"):
        return True  # an INFO line that ends the log while no communicator was made: a stall
    return not (f.role is Role.SYMPTOM and f.event.fields.get("nccl_level") == "INFO")


def candidates(
    findings: list[Finding],
    standalone_ids: set[str] | frozenset[str] = frozenset(),
    supporting_ids: set[str] | frozenset[str] = frozenset(),
    evidence: list[Event] | None = None,
) -> set[Category]:
    """The categories that evidence supports: those of root-cause findings and of symptoms that
    may stand alone (a collective timeout). A symptom that only follows a failure (the
    launcher's teardown SIGTERM, a child-failed banner) supports no category. A context line of
    a `supports` signature (`supporting_ids`: memory pressure the program survived) supports its
    category when a failure (`evidence`, abstain.failure_evidence) came after it in time or in
    the same file: the pressure may be why the job died, though nothing says so."""
    out: set[Category] = {
        f.category
        for f in findings
        if _shows_failure(f)
        and (f.role is Role.ROOT_CAUSE or f.signature in standalone_ids)
        and f.category not in (Category.UNKNOWN, Category.NONE)
    }
    if supporting_ids and evidence:
        out |= {
            f.category
            for f in findings
            if f.signature in supporting_ids and any(_after(e, f.event) for e in evidence if e is not f.event)
        }
    return out


def _after(e: Event, before: Event) -> bool:
    """`e` may have come after `before`: later in time where both are dated, else later in the
    same file; from another file with no dates to order them, the failure (which ended the
    job) is taken to be the later."""
    if e.time is not None and before.time is not None:
        return e.time >= before.time
    if e.loc.file == before.loc.file:
        return (e.loc.line or 0) > (before.loc.line or 0)
    return True


def logged_before(previous_line: str) -> bool:
    """The line just before a traceback is a logging record: the traceback was caught and logged."""
    return bool(_LOGGED.search(previous_line))


def mark_logged(events: list[Event]) -> list[Event]:
    """Mark (`caught: true`) every traceback that a logging record of level ERROR introduces on the
    line before it (`logger.exception(...)`): the program caught it and went on."""
    previous = {(e.loc.file, e.loc.line): e.message for e in events if e.loc.line}
    out = []
    for e in events:
        if e.kind is EventKind.TRACEBACK and e.loc.line and logged_before(previous.get((e.loc.file, e.loc.line - 1), "")):
            e = replace(e, fields={**e.fields, "caught": True})
        out.append(e)
    return out


# how near the end of its file a `last_words` signature's line must be (a trailing blank line or
# two, and a second waiting rank's line, may follow it)
LAST_WORDS = 3


def last_words(findings: list[Finding], ids: set[str], sources: list[SourceInfo]) -> list[Finding]:
    """The findings, less those of `last_words` signatures (`ids`: a process waiting or retrying)
    whose line is not among the last LAST_WORDS lines of its file: a wait that something
    followed was over, one that ends the log is where the process stayed."""
    if not ids:
        return findings
    ends = {s.file: s.lines for s in sources if s.lines}
    out = []
    for f in findings:
        if f.signature in ids:
            total = ends.get(f.event.loc.file)
            if total is None or (f.event.loc.line or 0) <= total - LAST_WORDS:
                continue
        out.append(f)
    return out


# a logging record at an error level (Python logging's ERROR/CRITICAL/FATAL, wherever its
# formatter puts the level; glog's E/F prefix) whose message says something failed
_ERROR_RECORD = re.compile(r"(?:^|[\s\[|:(-])(?:ERROR|CRITICAL|FATAL)(?=[\s\]|:)-]|$)|^\[?[EF]\d{4} ")
_FAILED_WORDS = re.compile(
    r"\b(?:[Ff]ail(?:ed|ure|s)?|[Ee]rrors?|[Ee]xception|[Aa]bort(?:ed|ing)?|[Cc]rash(?:ed)?|[Cc]annot|[Cc]an.t|[Uu]nable"
    r"|[Rr]efused|[Dd]ied|[Dd]ead|[Kk]illed|[Tt]imed out|[Ii]nvalid|not found)\b"
)


def mark_last_error_records(events: list[Event], findings: list[Finding], sources: list[SourceInfo]) -> list[Event]:
    """The events, each error-level record that no signature names, that says something failed
    and that is among the last LAST_WORDS lines of its file marked (`last_error_record: true`):
    where a log's last words are such a record, that is where the job failed (one that the log
    goes on after is a failure the program survived)."""
    ends = {s.file: s.lines for s in sources if s.lines}
    named = {(f.event.loc.file, f.event.loc.line) for f in findings}
    out = []
    for e in events:
        total = ends.get(e.loc.file)
        if (
            e.kind is EventKind.LINE
            and total is not None
            and (e.loc.line or 0) > total - LAST_WORDS
            and (e.loc.file, e.loc.line) not in named
            and _ERROR_RECORD.search(e.text)
            and _FAILED_WORDS.search(e.message)
            and not carries_on(e.message)
        ):
            e = replace(e, fields={**e.fields, "last_error_record": True})
        out.append(e)
    return out


def demote_caught(findings: list[Finding]) -> list[Finding]:
    """A traceback the program caught (logged, or its process went on) explains nothing: context at most."""
    return [replace(f, role=Role.CONTEXT) if f.event.fields.get("caught") else f for f in findings]


def failed(evidence: list[Event], sources: list[SourceInfo]) -> bool:
    """Some event or finding shows a failure (`evidence`: failure_evidence); with no log read at
    all there is nothing to say "no failure" about, so that counts as failed too (the verdict then
    stays unknown)."""
    read_any = any(s.status is SourceStatus.PARSED and s.kind is not SourceKind.OTHER and s.lines != 0 for s in sources)
    return bool(evidence) or not read_any
