"""`analyze`: a run dir in, a Report out. sources -> scan -> parse -> events -> correlate ->
signatures -> classify -> report object."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from analyzer import __version__
from analyzer.classify.combine import combine
from analyzer.classify.features import case_features
from analyzer.classify.features import normalize as normalize_words
from analyzer.classify.model import Model, shipped_model
from analyzer.classify.rules import Decision, decide
from analyzer.correlate.blame import blamed_rank
from analyzer.correlate.clocks import align_clocks
from analyzer.correlate.order import cascade, finding_key, timeline
from analyzer.correlate.versions import version_skew_events
from analyzer.events.ingest import Limits, build_scanner, ingest
from analyzer.events.normalize import normalize
from analyzer.model import (
    Alternative,
    Category,
    Event,
    EventKind,
    EvidenceItem,
    Finding,
    FirstFailure,
    Report,
    Role,
    SourceInfo,
    SourceKind,
    Verdict,
)
from analyzer.redact import redact, redact_text, redact_together
from analyzer.signatures.loader import Signature, category_titles, database
from analyzer.signatures.matcher import find
from analyzer.signatures.xid import xid_findings
from analyzer.sources.discover import discover


@dataclass(frozen=True)
class Options:
    follow_symlinks: bool = False
    core_timeout: float = 60.0
    redact: bool = True
    max_evidence: int = 40
    limits: Limits = field(default_factory=Limits)  # sizes read and time spent (see events.ingest)
    workers: int | None = None  # processes that scan text files (None: the CPUs, when worth it; 1: one)


def normalize_text(text: str) -> str:
    """The words of a line with numbers, hex, paths and source files masked (as the classifier sees them)."""
    return " ".join(normalize_words(text))[:200]


def fingerprint(category: str, subcategory: str | None, findings: list[Finding]) -> str:
    sigs = sorted({f.signature for f in findings})
    texts = sorted({normalize_text(f.event.message) for f in findings})[:3]
    raw = "|".join([category, subcategory or "", *sigs, *texts])
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]


@dataclass
class Analysis:
    """Everything the stages found in one run dir, before the final decision."""

    run_dir: Path
    sources: list[SourceInfo]
    events: list[Event]
    findings: list[Finding]
    rule: Decision
    warnings: list[str]
    signatures: list[Signature]

    def features(self) -> tuple[dict[str, float], Counter[str]]:
        return case_features(
            self.findings, self.events, self.rule.category.value if self.rule.root else None, self.rule.confidence
        )


def collect(run_dir: Path, options: Options | None = None, signatures: list[Signature] | None = None) -> Analysis:
    opts = options or Options()
    sigs = list(signatures if signatures is not None else database())
    sources = discover(run_dir, follow_symlinks=opts.follow_symlinks)
    scanner = build_scanner(sigs)
    ingested = ingest(sources, scanner, core_timeout=opts.core_timeout, limits=opts.limits, workers=opts.workers)
    events, clock_notes = align_clocks(normalize(ingested.events))
    events += version_skew_events(events)
    findings = sorted(find(sigs, events) + xid_findings(events), key=finding_key)
    standalone = {s.id for s in sigs if s.extra.get("standalone")}
    launcher_roots = {
        e.rank for e in events if e.kind is EventKind.ELASTIC_FAILURE and e.fields.get("root_cause") and e.rank is not None
    }
    rule = decide(findings, standalone, _context(findings), launcher_roots)
    return Analysis(run_dir, ingested.sources, events, findings, rule, ingested.warnings + clock_notes, sigs)


_SHIPPED = object()


def analyze(
    run_dir: Path,
    options: Options | None = None,
    signatures: list[Signature] | None = None,
    model: Model | None | object = _SHIPPED,
) -> Report:
    opts = options or Options()
    a = collect(run_dir, opts, signatures)
    chosen = shipped_model() if model is _SHIPPED else model
    assert chosen is None or isinstance(chosen, Model)
    structured, tokens = a.features()
    decision = combine(a.rule, a.findings, chosen, structured, tokens)
    if opts.redact:  # the redaction stage: before anything is cut or rendered
        a, decision = redact_stage(a, decision)
    return build_report(a, decision, opts)


def redact_stage(a: Analysis, decision: Decision) -> tuple[Analysis, Decision]:
    """Every string the report is built from (event texts and messages, finding summaries, file
    names, notes) with its secrets redacted, whole, before any of it is cut."""
    events, findings, sources, warnings, rule, new = redact_together(
        a.events, a.findings, a.sources, a.warnings, a.rule, decision
    )
    run_dir = Path(redact_text(str(a.run_dir)))
    return replace(a, run_dir=run_dir, events=events, findings=findings, sources=sources, warnings=warnings, rule=rule), new


def build_report(a: Analysis, decision: Decision, opts: Options) -> Report:
    run_dir, findings, events = a.run_dir, a.findings, a.events
    taxonomy_titles = category_titles()

    root = decision.root
    if root is not None and decision.category is not Category.UNKNOWN:
        rank, host = first_rank(decision, _single_process(events))
        first = FirstFailure(rank, host, root.event.time, root.event.loc.file, root.event.loc.line)
        remediation = _remediation(decision.root_findings)
        chain = cascade(root, findings, decision.category.value)
        title = f"{taxonomy_titles.get(decision.category.value, decision.category.value)}: {root.title}"
        explanation = _explain(root, decision.root_findings, chain, decision.notes)
    else:
        first = FirstFailure()
        remediation = ()
        chain = []
        if decision.category is Category.UNKNOWN:
            title = "Root cause unknown"
        else:  # the classifier's call from the whole picture, with no line that names the cause
            title = f"{taxonomy_titles.get(decision.category.value, decision.category.value)} (no signature names the cause)"
        explanation = "; ".join(decision.notes) or "no signature explains this failure"
    fp = fingerprint(decision.category.value, decision.subcategory, decision.root_findings[:5])
    verdict = Verdict(
        category=decision.category,
        subcategory=decision.subcategory,
        confidence=decision.confidence,
        title=title,
        explanation=explanation,
        first_failure=first,
        remediation=remediation,
        signatures=tuple(sorted({f.signature for f in decision.root_findings})),
        fingerprint=fp,
    )
    evidence = _evidence(findings, decision.root_findings, opts.max_evidence)
    report = Report(
        run_dir=str(run_dir),
        verdict=verdict,
        alternatives=tuple(Alternative(c, s, conf) for c, s, conf in decision.alternatives),
        cascade=tuple(chain),
        evidence=tuple(evidence),
        timeline=tuple(timeline(events, findings)),
        sources=tuple(a.sources),
        missing_evidence=tuple(_missing(a.sources, events, findings, decision.category)),
        warnings=tuple(a.warnings),
        tool_version=__version__,
    )
    return redact(report) if opts.redact else report


def first_rank(decision: Decision, single_process: bool) -> tuple[int | None, str | None]:
    """The first failing rank and host of a decision: the root event's, else one that another
    line of the same cause names (the launcher's view of the death), else 0 for a job that was
    one process."""
    root = decision.root
    if root is None:
        return None, None
    rank, host = root.event.rank, root.event.host
    if decision.category is Category.HANG:
        blamed = blamed_rank(decision.root_findings)
        if blamed is not None:
            return blamed, None if blamed != rank else host
    if rank is None:
        named = next((f.event for f in decision.root_findings if f.event.rank is not None), None)
        if named is not None:
            rank, host = named.rank, host or named.host
    if rank is None and single_process:
        rank = 0
    return rank, host


def _single_process(events: list[Event]) -> bool:
    """No event names a rank, a world size above one, or a launcher's per-rank failure."""
    for e in events:
        if e.rank is not None or e.kind in (EventKind.ELASTIC_FAILURE, EventKind.WATCHDOG):
            return False
        nranks = e.fields.get("nranks")
        if isinstance(nranks, int) and nranks > 1:
            return False
        if e.fields.get("local_rank") is not None:
            return False
    return True


def _context(findings: list[Finding]) -> dict[str, bool]:
    ctx = {"core_regular_file": False, "core_dev_shm": False}
    for f in findings:
        if f.event.kind is EventKind.CORE:
            ctx["core_regular_file"] |= bool(f.event.fields.get("fault_in_regular_file"))
            ctx["core_dev_shm"] |= bool(f.event.fields.get("fault_in_dev_shm"))
    return ctx


def _remediation(roots: list[Finding]) -> tuple[str, ...]:
    out: list[str] = []
    for f in roots:
        for r in f.remediation:
            if r not in out:
                out.append(r)
    return tuple(out[:8])


def _explain(root: Finding, roots: list[Finding], chain: Sequence[object], notes: list[str]) -> str:
    where = f"{root.event.loc.file}:{root.event.loc.line}"
    who = f"rank {root.event.rank}" if root.event.rank is not None else "the job"
    if root.event.host:
        who += f" on {root.event.host}"
    parts = [f"{root.summary} ({who}, {where})."]
    others = len({(f.event.loc.file, f.event.loc.line) for f in roots}) - 1
    if others > 0:
        parts.append(f"{others} more line(s) point the same way.")
    if chain:
        parts.append(f"{len(chain)} kind(s) of error on other ranks or later follow from it.")
    parts.extend(n[0].upper() + n[1:] + "." for n in notes[:3])
    return " ".join(parts)


def _evidence(findings: list[Finding], roots: list[Finding], limit: int) -> list[EvidenceItem]:
    root_ids = {id(f) for f in roots}
    chosen: list[tuple[int, Finding]] = []
    per_sig: dict[str, int] = {}
    for f in findings:
        role = Role.ROOT_CAUSE if id(f) in root_ids else (Role.CONTEXT if f.role is Role.CONTEXT else Role.SYMPTOM)
        per_sig[f.signature] = per_sig.get(f.signature, 0) + 1
        if role is not Role.ROOT_CAUSE and per_sig[f.signature] > 3:
            continue
        chosen.append((0 if role is Role.ROOT_CAUSE else 1 if role is Role.CONTEXT else 2, f))
    chosen.sort(key=lambda rf: (rf[0], finding_key(rf[1])))
    out = []
    for rank_order, f in chosen[:limit]:
        role = (Role.ROOT_CAUSE, Role.CONTEXT, Role.SYMPTOM)[rank_order]
        e = f.event
        out.append(EvidenceItem(e.loc.file, e.loc.line, e.text.strip()[:500], f.signature, role, e.rank, e.host, e.time))
    return out


def _missing(sources: list, events: list, findings: list[Finding], category: Category) -> list[str]:
    kinds = {s.kind for s in sources if s.status == "parsed"}
    out: list[str] = []
    if not sources:
        out.append("the run dir holds no files: point postmortem at the directory the job wrote its logs to")
        return out
    if SourceKind.KERNEL_LOG not in kinds:
        hosts = sorted({s.host for s in sources if s.host})
        where = f" from host(s) {', '.join(hosts[:8])}" if hosts else ""
        out.append(
            f"no kernel log{where}: save `dmesg -T` (or `journalctl -k`) of every node after a failure; it shows OOM kills, Xid and PCIe errors"
        )
    has_nccl = any(e.kind in (EventKind.NCCL, EventKind.VERSION) or "NCCL INFO" in e.text for e in events)
    if not has_nccl:
        out.append(
            "no NCCL debug output: run with NCCL_DEBUG=INFO (and NCCL_DEBUG_FILE=nccl.%h.%p.log) to see transports, versions and bus ids"
        )
    sigs = {f.signature for f in findings}
    if any("sigbus" in s or "bus_error" in s for s in sigs) and SourceKind.CORE_DUMP not in kinds:
        out.append(
            "a Bus error without a core: record `df -h /dev/shm` and keep the core (`ulimit -c unlimited`) to tie the SIGBUS to the file it hit"
        )
    if any("sigkill" in s for s in sigs) and SourceKind.KERNEL_LOG not in kinds:
        out.append("a rank died of SIGKILL: the kernel log would say whether the OOM killer did it")
    if not any(e.kind is EventKind.TRACEBACK for e in events) and category in (Category.UNKNOWN, Category.USER_CODE):
        out.append(
            "no Python traceback from the failing rank: decorate the entry point with torch.distributed.elastic.multiprocessing.errors.record"
        )
    if not any(e.kind is EventKind.ELASTIC_FAILURE for e in events) and category is Category.UNKNOWN:
        out.append("no launcher summary: keep torchrun's output (--log-dir, --tee 3) so the first failing rank is known")
    return out
