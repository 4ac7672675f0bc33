"""A cause named in words, for a failure that no signature names (the cue table, signatures/cues.yaml).

The signatures know what the emitters they were read from print; a failure in another program's
wording would leave the verdict `unknown`. Cues are the vocabulary of the causes ("No space left
on device", "shared memory", "peer access", "undefined symbol"), which every emitter shares. They
are read only where evidence shows a failure that no finding names:

* `reports_failure(message, text)`: a line whose words by themselves report a failure (a cue that
  `says_failure`) is failure evidence, unless it is an INFO, DEBUG or warning-level record, a
  retry, a line that says the program goes on or that the failure is expected, or one of the
  closed vocabularies (`cueable`);
* `cue_lead(evidence, findings)`: over the failure evidence that no finding names (or only a
  generic one does), the strongest cue (ties: the cue listed first, then the earliest line) names
  the category. `combine` takes it when no finding supports any category, or only generic ones
  on its line or after it, at a capped confidence; the verdict's title says that no signature
  names the cause, and its root-cause row is the line with the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.correlate.order import sort_key
from analyzer.model import Category, Event, EventKind, Finding, Role, Scope
from analyzer.signatures.cues import Cue, says_failure, strongest

# the id a cue's finding carries (`cue:<id>`), to tell it from a signature's
CUE_PREFIX = "cue:"
# a retry, which says the failure was not the end
_RETRY = r"\b[Rr]etry(?:ing)?\b|\bretries\b|[Tt]rying again|will retry"
# a record of a level that does not report a failure (NCCL's WARN is its error level and is
# kept): Python logging's and glog's INFO/DEBUG/WARNING, `[W ...]`, c10d's `[c10d - debug]`,
# `UserWarning`, `warning:`; and a retry
_NOT_FAILURE_LEVEL = re.compile(
    r"\b(?:INFO|DEBUG|TRACE|NOTICE)\b|\b[Ii]nfo\s+:|^\[?[IDW]\d{4} |\[[IDW] |\[[IDW]\d{4} |\w*Warning\b|\bWARNING\b|\b[Ww]arning:"
    rf"|\b[Dd]ebug\]|- debug\b|{_RETRY}"
)
# a line that says the program goes on despite what it reports, or that it is expected
_GOES_ON = re.compile(
    r"\b(?:accepting|ignor(?:e|ed|ing)|continuing|falling back|fall(?:s)? back|proceeding|skipping|will be skipped)\b"
    r"|[Tt]his is (?:normal|expected)|[Ii]t is expected|is expected if|can be (?:safely )?ignored"
)
# the same, or a retry: whatever the record's level
_GOES_ON_OR_RETRIES = re.compile(f"{_GOES_ON.pattern}|{_RETRY}")
# a help text that lists what may have caused the failure: its words are guesses, not the cause
_HEDGED = re.compile(r"\b(?:[Uu]sually|[Pp]ossibly|[Oo]ften|may be|might be|could be|can be) (?:due to|caused by)\b")
# closed vocabularies: the CUDA runtime's and driver's error strings, NCCL's results, the CUDA
# libraries' statuses, the kernel's machine-check, memory-failure and segfault reports, the
# driver's Xid lines (signatures/xid.yaml judges each number). Every member was read from its
# emitter and judged (signatures name the codes that say why; `unknown.*` and the catalogs keep
# the others undecidable): a cue must not second-guess that
_CLOSED_VOCABULARY = re.compile(
    r"CUDA error|cudaError|CUDA_ERROR_|CUresult|Check failed: error == cudaSuccess|NCCL error|\bnccl[A-Z]\w*Error\b"
    r"|unhandled (?:cuda|system) error|internal error - please report|CUDNN_STATUS_|CUBLAS_STATUS_|CUSOLVER_STATUS_"
    r"|CUFFT_|CUSPARSE_STATUS_|CURAND_STATUS_|NVRTC_ERROR|NVJPEG_STATUS|\bmce:|Machine Check|\[Hardware Error\]"
    r"|Memory failure:|\bsegfault at\b|general protection(?: fault)?\b|\btraps: |NVRM: Xid|\bSXid\b"
)


def cueable(message: str) -> bool:
    """A failure line whose words a cue may read: not one of the closed vocabularies, not a help
    text's list of possible causes, and not a line that says the program goes on."""
    return not (_CLOSED_VOCABULARY.search(message) or _HEDGED.search(message) or _GOES_ON.search(message))


def reports_failure(message: str, text: str = "") -> bool:
    """The line's words report a failure by themselves (`message`), the line as written (`text`,
    with its prefixes) is no INFO/DEBUG/warning record and no retry, and a cue may read it."""
    return says_failure(message) is not None and not _NOT_FAILURE_LEVEL.search(text or message) and cueable(message)


def goes_on(message: str) -> bool:
    """The line's words say the program goes on (or retries), whatever the record's level."""
    return bool(_GOES_ON_OR_RETRIES.search(message))


def carries_on(message: str, text: str = "") -> bool:
    """The line is an INFO/DEBUG/warning record or a retry, or says the program goes on."""
    return bool(_NOT_FAILURE_LEVEL.search(text or message) or _GOES_ON.search(message))


@dataclass(frozen=True, slots=True)
class CueLead:
    cue: Cue
    event: Event
    words: str  # what the cue matched, as the line has it

    def finding(self) -> Finding:
        """The lead as the root-cause row of the report."""
        return Finding(
            signature=f"{CUE_PREFIX}{self.cue.id}",
            title=f"the failing line says {self.words!r} (no signature names the cause)",
            category=self.cue.category,
            subcategory="",
            role=Role.ROOT_CAUSE,
            confidence=self.cue.weight,
            summary=f"a failure no signature names; its words ({self.words!r}) point to {self.cue.category}",
            event=self.event,
            remediation=self.cue.remediation,
            scope=Scope.LINE,
        )


FRAMES_READ = 2  # a traceback's innermost frames that a `frames` cue reads


def _frame_cue(e: Event) -> tuple[Cue, re.Match[str]] | None:
    """The strongest `frames` cue of a traceback's (or a faulthandler dump's) innermost frames."""
    frames = e.fields.get("frames") if e.kind in (EventKind.TRACEBACK, EventKind.FAULTHANDLER) else None
    if not isinstance(frames, list) or not frames:
        return None
    return strongest(" ".join(str(f) for f in frames[:FRAMES_READ]), "frames")


# a finding below this confidence is a generic one (a Python exception, a bare signal): its line's
# words may still name the cause (combine decides whether they do)
WEAK_FINDING = 0.45


def cue_lead(evidence: list[Event], findings: list[Finding]) -> CueLead | None:
    """The strongest cue over the failure evidence that no finding names, or only generic root
    causes (confidence below WEAK_FINDING) do (None: no such words). A line a symptom or an
    `unknown.*` finding names was judged (a consequence, or undecidable): its words are not read."""
    strong = [
        f for f in findings if f.confidence >= WEAK_FINDING or f.category is Category.UNKNOWN or f.role is not Role.ROOT_CAUSE
    ]
    named = {id(f.event) for f in strong} | {(f.event.loc.file, f.event.loc.line) for f in strong}
    best: tuple[tuple[float, int, tuple[float, int, str, str, int]], CueLead] | None = None
    for e in evidence:
        if id(e) in named or (e.loc.file, e.loc.line) in named:
            continue
        if e.kind is EventKind.UNPARSED and e.fields.get("cut_traceback"):
            continue  # its line is the traceback's first (a frame's function names are no failure's words)
        text = e.message or e.text
        if not cueable(text):
            continue
        for found in (strongest(text), _frame_cue(e)):
            if found is None:
                continue
            cue, m = found
            key = (-cue.weight, cue.order, sort_key(e))
            if best is None or key < best[0]:
                best = (key, CueLead(cue, e, m.group(0)))
    return best[1] if best else None
