"""What a line's place in its file tells about it: the scan patterns that are not signatures
(failure-sounding context, a launcher's "finished", who-is-who env dumps, versions), the fields
they give, and for a parsed event its local rank, the line it quotes and whether its process went
on after a traceback (the exception was caught)."""

from __future__ import annotations

import re
from dataclasses import replace

from analyzer.model import Event, EventKind
from analyzer.parse.prefix import Prefix, split_prefix
from analyzer.scan.scanner import Hit

SIGNATURE_OWNER = "signatures"
CONTEXT_OWNER = "context"
# words that report a failure by themselves (signatures/cues.yaml), kept like the context lines
CUE_OWNER = "cues"
# TensorFlow 1.x prints a session's error as `InvalidArgumentError (see above for traceback): ...`
TF1_SUFFIX = r"(?: \(see above for traceback\))?"
# lines that sound like a failure although no signature names them: they feed the classifier's
# text features and the timeline, at most CONTEXT_CAP per file
CONTEXT_PATTERN = (
    r"\b(?:[Ee]rror|ERROR|[Ff]ail(?:ed|ure)?|FAIL(?:ED)?|[Ff]atal|FATAL|[Ee]xception|[Kk]illed|[Aa]bort(?:ed|ing)?|"
    r"[Tt]erminat(?:ed|ing)|[Tt]imed out|[Tt]imeout|[Ss]egmentation fault|[Bb]us error|[Cc]ore dumped|Xid|NVRM|WARN)\b"
    # an exception's own line (`ImportError: ...`, `OSError: ...`, `EOFError: ...`), which
    # `\bError` does not see; a C++ one
    rf"|[A-Za-z](?:Error|Exception){TF1_SUFFIX}: |terminate called after throwing"
    # an exception raised without a message prints its name alone (`...api.SignalException`)
    # (spaces as `[ \t]`: a `\s` would let the whole pattern match across lines, scanner.py)
    r"|^[ \t]*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*[a-z](?:Error|Exception)[ \t]*$"
    # a process reported as crashed, PaddlePaddle's C++ crash report
    r"|\b[Cc]rashed\b|^C\+\+ Traceback \(most recent call last\)"
    # a run console's or container tool's word that a process ended with a non-zero code
    # (JetBrains IDEs, docker compose: classify/abstain.py)
    r"|\bexit(?:ed with)? code [1-9]\d*\b|\binterrupted by signal \d+\b"
)
CONTEXT_CAP = 400
# the name of a Python exception, `RuntimeError`, `torch.distributed.DistBackendError`,
# `torch._C._LinAlgError`, the base `Exception` itself (`raise Exception("...")`), Ray's wrapper
# with its cause (`RayTaskError(DistBackendError)`), and its last line when uncaught: `RuntimeError: ...`
EXCEPTION_NAME = r"(?:[A-Za-z_]\w*\.)*(?:_?[A-Z]\w*(?:Error|Exception)|Exception)(?:\([A-Za-z_][\w.]*\))?"
EXCEPTION_LINE = re.compile(rf"^({EXCEPTION_NAME}){TF1_SUFFIX}: (.*)$")
IDENTITY_OWNER = "identity"
# a worker's environment dump (`RANK=21`, `'LOCAL_RANK': '5'`): ties its local rank to the global one
IDENTITY_PATTERN = r"\b(?:RANK|LOCAL_RANK|GROUP_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)['\"]?\s*[=:]\s*['\"]?\d+"
IDENTITY_RE = re.compile(r"\b(RANK|LOCAL_RANK|GROUP_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)['\"]?\s*[=:]\s*['\"]?(\d+)")
IDENTITY_CAP = 2000
VERSIONS_OWNER = "versions"
# the versions an environment report prints (nvidia-smi's header, collect_env, ds_report, pip):
# what CUDA the driver supports and what CUDA torch was built for
VERSIONS_PATTERN = (
    r"CUDA Version: \d+\.\d+|Nvidia driver version: \d|"
    r"torch version \.+ \d|torch cuda version \.+ \d|PyTorch version: \d|CUDA used to build PyTorch: \d|"
    r"^torch(?:==|\s+)\d+\.\d+\S*\+cu\d+"
)
_VERSION_FIELDS = (
    (re.compile(r"CUDA Version: (\d+\.\d+)"), "driver_cuda"),
    (re.compile(r"Driver Version: (\d+(?:\.\d+)+)"), "driver_release"),
    (re.compile(r"Nvidia driver version: (\d+(?:\.\d+)+)"), "driver_release"),
    (re.compile(r"(?:torch version \.+|PyTorch version:|^torch==|^torch\s+)\s*(\d+\.\d+\S*)"), "torch_build"),
    (re.compile(r"(?:torch cuda version \.+|CUDA used to build PyTorch:)\s*(\d+\.\d+)"), "torch_cuda"),
)
OUTCOME_OWNER = "outcome"
# a launcher's own words for a job (or a node's worker group) that ended well: the event gets
# `outcome: succeeded`, which tells a finished job from one whose log merely stops
OUTCOME_PATTERN = (
    r"worker group successfully finished"  # torch.distributed.elastic agent (api.py, _invoke_run)
    r"|Process \d+ exits successfully"  # deepspeed/launcher/launch.py
)


def placed(ev: Event, hit: Hit, file_rank: int | None) -> Event:
    """The event with what its place in the file tells: torchrun's local rank (`tee_rank`, and
    PyTorch's `[rankN]:` stacked after it), the line it cites when that is a later line of its
    block (`quote`), and whether its process went on after a traceback (`caught`)."""
    extra: dict[str, object] = {}
    p = split_prefix(ev.text)
    if p.local_rank is not None:  # the global rank is found later (events/identity.py)
        extra["tee_rank"] = p.local_rank
        if p.rank is not None:
            extra["prefix_rank"] = p.rank
    if (
        ev.kind is EventKind.TRACEBACK
        and ev.end_line
        and not _feeder_thread(ev)
        and not _ends_process(ev)
        and _went_on(hit, ev.end_line, file_rank)
    ):
        extra["caught"] = True  # its process printed on as before: the exception was handled
    at = (ev.loc.line or 0) - hit.line_no
    if 0 < at < len(hit.lines) and "quote" not in ev.fields:
        extra["quote"] = hit.lines[at]
    return replace(ev, fields={**ev.fields, **extra}) if extra else ev


# what a dying process or its launcher prints after a traceback (teardown: NCCL closing its
# connections, warnings, the launcher's records); any other line of the same process means the
# process went on
_NOT_GOING_ON = re.compile(
    CONTEXT_PATTERN + r"|Traceback|During handling|The above exception|^\s|^\^|torch[./]distributed|ChildFailedError|"
    r"(?:Error|Exception|Interrupt|Exit)\b|[Kk]ill|[Ss]ignal|[Ss]hutting|[Ee]xit|[Aa]bort|[Tt]erminat|"
    r"NCCL |[Ww]arning|^[IWEF]\d{4} |^\[[IWEF][\d ]|^=+$|^-+$|"
    # Weights & Biases' exit hook (its run summary), glibc's heap-corruption aborts
    # (malloc/malloc.c: `double free or corruption (!prev)`, `free(): invalid pointer`)
    r"^wandb: |double free|corrupt|^(?:malloc|free|realloc|munmap_chunk)\(\):"
)


def version_fields(message: str) -> dict[str, str]:
    """The versions a line of an environment report gives (torch's CUDA also from `+cu128`)."""
    out: dict[str, str] = {}
    for rx, name in _VERSION_FIELDS:
        m = rx.search(message.strip())
        if m:
            out.setdefault(name, m.group(1))
    build = out.get("torch_build", "")
    cu = re.search(r"\+cu(\d+)(\d)$", build)
    if cu and "torch_cuda" not in out:
        out["torch_cuda"] = f"{cu.group(1)}.{cu.group(2)}"
    return out


def _stream(p: Prefix, file_rank: int | None) -> tuple[str, int] | None:
    """Which process a line comes from, as far as its prefix (or its file) says."""
    if p.local_rank is not None:
        return ("local", p.local_rank)
    rank = p.rank if p.rank is not None else file_rank
    return None if rank is None else ("rank", rank)


# what a shell prints after the process is gone, not the process: a bare path or path list (an
# `echo $LD_LIBRARY_PATH`), a prompt (`user@host:~$ ...`)
_SHELL_LINE = re.compile(r"^(?:[/~][^\s]*|\S*@\S*[$#](?:\s.*)?)$")


def _feeder_thread(ev: Event) -> bool:
    """A traceback that a multiprocessing queue's feeder thread printed (CPython's
    multiprocessing/queues.py `_feed`, 2.7 to today, prints what it failed to pickle or send and
    drops the object): the process goes on, but what it sent is lost and the reader waits for it,
    so the log going on afterwards is no sign that anything handled it."""
    frames = ev.fields.get("frames")
    if not isinstance(frames, list) or not frames:
        return False
    outermost = str(frames[-1])
    return "multiprocessing/queues.py:" in outermost.replace("\\", "/") and outermost.endswith(" _feed")


# exceptions that their emitter raises to end the process, and that every handler of its own
# re-raises: torchelastic's SignalException (agent/server/api.py `run` shuts the workers down and
# re-raises it, launcher/api.py `launch_agent` re-raises it, torch 1.9 to 2.x) and ChildFailedError
# (raised by launch_agent when a worker failed), submitit's UncompletedJobError (raised by
# core/job_environment.py for a signalled job that is not requeued; core/submission.py
# `process_job` saves it as the job's result and re-raises it, 1.0 to 1.5). Lines after such a
# traceback are another process's or were pasted from elsewhere: the process did not go on.
_ENDS_PROCESS = frozenset({"SignalException", "ChildFailedError", "UncompletedJobError"})


# CUDA's sticky errors: by the runtime's own words for each (driver_types.h, cudaError 700, 710,
# 714 to 719, CUDA 10 to 13) they leave the process in an inconsistent state, every later CUDA
# call returns the same error, and to use CUDA again the process must be relaunched (710: the
# context cannot be used any more). A process that printed on after one did not go on training.
# Their cudaGetErrorString texts, cudaError_t names and CUresult names:
_STICKY_CUDA = re.compile(
    r"an illegal memory access was encountered|device-side assert triggered|hardware stack error"
    r"|an illegal instruction was encountered|misaligned address|operation not supported on global/shared address space"
    r"|invalid program counter|unspecified launch failure"
    r"|cudaError(?:IllegalAddress|Assert|HardwareStackError|IllegalInstruction|MisalignedAddress|InvalidAddressSpace|InvalidPc|LaunchFailure)\b"
    r"|CUDA_ERROR_(?:ILLEGAL_ADDRESS|ASSERT|HARDWARE_STACK_ERROR|ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|INVALID_ADDRESS_SPACE|INVALID_PC|LAUNCH_FAILED)\b"
)


def _ends_process(ev: Event) -> bool:
    """The traceback's exception is one the process cannot go on after: raised to end it, or a
    sticky CUDA error."""
    name = ev.fields.get("exception_type")
    if isinstance(name, str) and name.rsplit(".", 1)[-1] in _ENDS_PROCESS:
        return True
    message = ev.fields.get("exception_message")
    return isinstance(message, str) and _STICKY_CUDA.search(message[:2000]) is not None


def _went_on(hit: Hit, end_line: int, file_rank: int | None) -> bool:
    """The first line after a traceback (within its scanned block) from the same process is an
    ordinary line of output, and it is not that process's last line before the log ends (one
    last line, "Done." or the rest of a message, then nothing: the process did not go on): the
    process survived the exception."""
    lines = hit.lines
    start = end_line - hit.line_no + 1
    if start <= 0 or start >= len(lines):
        return False
    key = _stream(split_prefix(lines[0]), file_rank)
    seen = 0
    for line in lines[start:]:
        p = split_prefix(line)
        if key is not None and _stream(p, file_rank) != key:
            continue  # another process's line
        message = p.message.rstrip()
        if not message or _SHELL_LINE.match(message):
            continue
        if seen:
            return True  # a second line of output
        if _NOT_GOING_ON.search(message):
            return False
        seen += 1
    # one ordinary line: the process went on unless the log ends right after it (the block was
    # not filled: its file ended)
    return bool(seen) and hit.want == 0
