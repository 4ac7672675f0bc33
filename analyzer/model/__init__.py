"""The data model shared by every stage: frozen dataclasses and closed vocabularies.

This package imports nothing else from the project.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Category(StrEnum):
    """The categories of signatures/taxonomy.yaml, in its order (written by
    `python -m tests.golden --update`; a test holds it to the taxonomy)."""

    # BEGIN taxonomy categories
    SHM = "shm"
    P2P = "p2p"
    OOM_CASCADE = "oom_cascade"
    VERSION_MISMATCH = "version_mismatch"
    HARDWARE_XID = "hardware_xid"
    NETWORK = "network"
    HANG = "hang"
    STORAGE = "storage"
    USER_CODE = "user_code"
    SCHEDULER = "scheduler"
    UNKNOWN = "unknown"
    NONE = "none"
    # END taxonomy categories


MAIN_CATEGORIES = (
    Category.SHM,
    Category.P2P,
    Category.OOM_CASCADE,
    Category.VERSION_MISMATCH,
    Category.HARDWARE_XID,
)


class Role(StrEnum):
    ROOT_CAUSE = "root_cause"
    SYMPTOM = "symptom"
    CONTEXT = "context"


class Scope(StrEnum):
    LINE = "line"
    RANK = "rank"
    HOST = "host"
    JOB = "job"


class SourceKind(StrEnum):
    TRAINING_LOG = "training_log"
    NCCL_LOG = "nccl_log"
    KERNEL_LOG = "kernel_log"
    GDB_BACKTRACE = "gdb_backtrace"
    FAULTHANDLER = "faulthandler"
    ELASTIC_ERROR = "elastic_error"
    CORE_DUMP = "core_dump"
    FLIGHT_RECORDER = "flight_recorder"  # PyTorch's NCCL flight recorder dump (pickle or JSON)
    OTHER = "other"


class EventKind(StrEnum):
    """What a parsed event is. Signatures may select on it (field `kind`)."""

    LINE = "line"  # an interesting line with no finer structure
    UNPARSED = "unparsed"  # a block the grammars could not parse; text kept
    TRACEBACK = "traceback"  # a Python traceback (message = last exception line)
    ELASTIC_FAILURE = "elastic_failure"  # one row of a torchelastic ChildFailedError summary
    LAUNCHER_EXIT = "launcher_exit"  # torchrun / deepspeed launcher: a child exited with a code
    SIGNAL = "signal"  # a process received or died of a signal
    FAULTHANDLER = "faulthandler"  # a Python faulthandler dump
    NCCL = "nccl"  # a line of NCCL_DEBUG output
    WATCHDOG = "watchdog"  # ProcessGroupNCCL watchdog / collective timeout
    KERNEL = "kernel"  # a kernel log record
    XID = "xid"  # an NVRM Xid record
    OOM_KILL = "oom_kill"  # the kernel OOM killer killed a process
    OOPS = "oops"  # a kernel oops / BUG / call trace
    BACKTRACE = "backtrace"  # a gdb backtrace
    CORE = "core"  # what gdb found in a core dump
    VERSION = "version"  # a version banner (NCCL, CUDA, torch, driver)
    P2P_TEST = "p2p_test"  # a CUDA sample's check of GPU peer-to-peer transfers (p2pBandwidthLatencyTest, simpleP2P)


@dataclass(frozen=True, slots=True)
class Frame:
    """One stack frame; Python, gdb and kernel frames share this shape."""

    function: str | None = None
    file: str | None = None
    line: int | None = None
    library: str | None = None
    address: str | None = None
    index: int | None = None
    reliable: bool = True
    source: str | None = None  # the source text line shown under a Python frame


@dataclass(frozen=True, slots=True)
class PyException:
    type: str
    message: str


@dataclass(frozen=True, slots=True)
class PyTraceback:
    """A Python traceback. Frames are innermost first (as gdb and satyr order them)."""

    exception: PyException
    frames: tuple[Frame, ...]
    chained: tuple[PyTraceback, ...] = ()  # earlier tracebacks of the chain ("During handling...")
    chain_kind: str | None = None  # "cause" | "context" for the link to the previous one


@dataclass(frozen=True, slots=True)
class Thread:
    number: int | None
    lwp: int | None
    frames: tuple[Frame, ...]
    tid: str | None = None


@dataclass(frozen=True, slots=True)
class Backtrace:
    """A native backtrace (gdb text or a core read through gdb)."""

    threads: tuple[Thread, ...]
    crash_thread: int | None = None  # index into threads
    signal: str | None = None
    executable: str | None = None


@dataclass(frozen=True, slots=True)
class Location:
    """Where an event comes from: file relative to the run dir, 1-based line."""

    file: str
    line: int | None = None


class Fields(dict[str, Any]):
    """An event's kind-specific fields: filled when the event is made, read-only after (a new
    event, `dataclasses.replace(e, fields={**e.fields, ...})`, carries changed fields)."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("event fields are read-only once the event is made")

    __setitem__ = __delitem__ = _read_only
    update = setdefault = pop = popitem = clear = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[Fields], tuple[dict[str, Any]]]:
        return (Fields, (dict(self),))


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    loc: Location
    text: str  # the raw text (first line of a block), prefixes kept
    message: str = ""  # the text without rank/host/time prefixes
    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    time: float | None = None  # seconds since the epoch (UTC) when known
    time_text: str | None = None
    time_approx: bool = False
    fields: dict[str, Any] = field(default_factory=dict)  # kind-specific, read by signatures (model/fields.py)
    end_line: int | None = None  # last line of a block

    def __post_init__(self) -> None:
        if type(self.fields) is not Fields:
            object.__setattr__(self, "fields", Fields(self.fields))

    def derived(self, kind: EventKind, message: str, fields: dict[str, Any]) -> Event:
        """An event the correlate stage makes from this one (a version skew, collectives that
        differ): at its line, with its place (rank, host, pid, time), its source kind kept."""
        return Event(
            kind,
            self.loc,
            self.text,
            message,
            rank=self.rank,
            host=self.host,
            pid=self.pid,
            time=self.time,
            time_text=self.time_text,
            fields={**fields, "source_kind": self.fields.get("source_kind")},
        )

    def get(self, name: str) -> Any:
        """A field by name, as signatures see it."""
        if name in ("message", "text", "kind", "rank", "host", "pid"):
            value = getattr(self, name)
            return str(value) if name == "kind" else value
        if name == "file":
            return self.loc.file
        return self.fields.get(name)


@dataclass(frozen=True, slots=True)
class Finding:
    """A signature that matched an event."""

    signature: str
    title: str
    category: Category
    subcategory: str
    role: Role
    confidence: float
    summary: str
    event: Event
    remediation: tuple[str, ...] = ()
    scope: Scope = Scope.LINE  # what the finding is about: its line, its rank, its host, the job
    ambiguous: bool = False  # its signature's message alone names no cause (`ambiguous: true`)


class SourceStatus(StrEnum):
    """What became of one file of the run dir."""

    PENDING = "pending"  # found, not read yet (discovery only)
    PARSED = "parsed"
    SKIPPED = "skipped"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class SourceInfo:
    file: str
    kind: SourceKind
    bytes: int
    lines: int | None
    status: SourceStatus
    note: str = ""
    rank: int | None = None
    host: str | None = None


# what an approximate time is, where no stage said where it came from (Event.fields["time_from"])
TIME_PLACED = "placed by the lines around it"


@dataclass(frozen=True, slots=True)
class FirstFailure:
    rank: int | None = None
    host: str | None = None
    time: float | None = None
    file: str | None = None
    line: int | None = None
    time_approx: bool = False  # the time is borrowed (an earlier line of the stream, the launcher's record)
    pci_bus_id: str | None = None  # the GPU a hardware fault hit (domain:bus:device)
    gpu_index: int | None = None  # that GPU's index on its node, when an NCCL init line names the bus id
    rank_note: str | None = None  # where the rank comes from when no line names it (a one-process job)
    time_note: str | None = None  # where an approximate time comes from (TIME_PLACED where no stage said)


@dataclass(frozen=True, slots=True)
class Alternative:
    category: Category
    subcategory: str | None
    confidence: float


@dataclass(frozen=True, slots=True)
class CascadeEntry:
    ranks: tuple[int, ...]
    host: str | None
    time: float | None
    what: str
    caused_by: str
    count: int = 1


@dataclass(frozen=True, slots=True)
class Verdict:
    category: Category
    subcategory: str | None
    confidence: float
    title: str
    explanation: str
    first_failure: FirstFailure
    remediation: tuple[str, ...]
    signatures: tuple[str, ...]
    fingerprint: str


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    file: str
    line: int | None
    text: str
    signature: str | None
    role: Role
    rank: int | None
    host: str | None
    time: float | None
    time_approx: bool = False


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    time: float | None
    host: str | None
    rank: int | None
    kind: str
    summary: str
    file: str
    line: int | None


@dataclass(frozen=True, slots=True)
class Report:
    run_dir: str
    verdict: Verdict
    alternatives: tuple[Alternative, ...]
    cascade: tuple[CascadeEntry, ...]
    evidence: tuple[EvidenceItem, ...]
    timeline: tuple[TimelineEntry, ...]
    sources: tuple[SourceInfo, ...]
    missing_evidence: tuple[str, ...]
    warnings: tuple[str, ...]
    tool_version: str = "0"
