"""`analyze`: a run dir in, a Report out. The stages, in order:

sources (discover) -> ingest (read, scan, parse each file) -> events (normalise) ->
correlate (clocks, version skew, the job as a whole) -> signatures (find) -> classify (rules,
then the model) -> report (build) -> redact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from analyzer.classify.abstain import (
    candidates,
    demote_caught,
    failed,
    failure_evidence,
    finished,
    last_words,
    mark_error_chains,
    mark_init_incomplete,
    mark_last_error_records,
    mark_logged,
)
from analyzer.classify.combine import combine
from analyzer.classify.cues import CueLead, cue_lead
from analyzer.classify.features import case_features
from analyzer.classify.model import Model, shipped_model
from analyzer.classify.rules import Decision, core_context, decide
from analyzer.correlate import correlate
from analyzer.correlate.jobs import several_jobs
from analyzer.correlate.order import finding_key
from analyzer.events.ingest import Limits, build_scanner, ingest
from analyzer.events.normalize import normalize
from analyzer.model import Category, Event, Finding, Report, SourceInfo
from analyzer.redact import redact, redact_text, redact_together
from analyzer.report.build import build_report, fingerprint, first_rank, normalize_text
from analyzer.signatures.cues import scan_patterns as cue_patterns
from analyzer.signatures.loader import Signature, database, line_patterns
from analyzer.signatures.matcher import find
from analyzer.signatures.xid import xid_findings
from analyzer.sources.discover import discover

__all__ = ["Analysis", "Options", "analyze", "collect", "first_rank", "fingerprint", "normalize_text"]


@dataclass(frozen=True)
class Options:
    follow_symlinks: bool = False
    core_timeout: float = 60.0
    redact: bool = True
    max_evidence: int = 40
    limits: Limits = field(default_factory=Limits)  # sizes read and time spent (see events.ingest)
    workers: int | None = None  # processes that scan text files (None: the CPUs, when worth it; 1: one)


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
    single_process: bool
    failed: bool = True  # some event or finding shows a failure (classify/abstain.py)
    finished: bool = False  # a launcher said the job finished well
    supported: frozenset[Category] = frozenset()  # the categories evidence supports
    lead: CueLead | None = None  # the cause the words of the failure lines no finding names point to

    def features(self) -> tuple[dict[str, float], Counter[str]]:
        return case_features(
            self.findings, self.events, self.rule.category.value if self.rule.root else None, self.rule.confidence
        )


def collect(run_dir: Path, options: Options | None = None, signatures: list[Signature] | None = None) -> Analysis:
    """The stages up to the rules' decision."""
    opts = options or Options()
    sigs = list(signatures if signatures is not None else database())
    sources = discover(run_dir, follow_symlinks=opts.follow_symlinks)
    ingested = ingest(
        sources,
        build_scanner(line_patterns(sigs), cue_patterns()),
        core_timeout=opts.core_timeout,
        limits=opts.limits,
        workers=opts.workers,
    )
    normalized, rank_notes = normalize(
        ingested.events,
        {s.file: s.host for s in ingested.sources},
        max((s.mtime for s in sources if s.mtime is not None), default=None),
    )
    job = correlate(mark_init_incomplete(mark_error_chains(mark_logged(normalized))))
    findings = sorted(find(sigs, job.events) + xid_findings(job.events), key=finding_key)
    findings = last_words(demote_caught(findings), {s.id for s in sigs if s.last_words}, ingested.sources)
    standalone = {s.id for s in sigs if s.standalone}
    rule = decide(findings, standalone, core_context(findings), set(job.launcher_roots))
    # what failed: whether the job failed at all, and what memory-pressure context is ordered against
    events = mark_last_error_records(job.events, findings, ingested.sources)
    evidence = failure_evidence(events, findings)
    several = several_jobs(ingested.sources, job.events)
    warnings = ingested.warnings + rank_notes + job.notes + ([several] if several else [])
    return Analysis(
        run_dir,
        ingested.sources,
        events,
        findings,
        rule,
        warnings,
        sigs,
        job.single_process,
        failed(evidence, ingested.sources),
        finished(job.events),
        frozenset(candidates(findings, standalone, {s.id for s in sigs if s.supports}, evidence)),
        cue_lead(evidence, findings),
    )


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
    decision = combine(a.rule, a.findings, chosen, structured, tokens, a.failed, a.finished, set(a.supported), a.lead)
    if opts.redact:  # the redaction stage: before anything is cut or rendered
        a, decision = redact_stage(a, decision)
    report = build_report(a.run_dir, a.sources, a.events, a.findings, a.warnings, decision, a.single_process, opts.max_evidence)
    return redact(report) if opts.redact else report


def redact_stage(a: Analysis, decision: Decision) -> tuple[Analysis, Decision]:
    """Every string the report is built from (event texts and messages, finding summaries, file
    names, notes) with its secrets redacted, whole, before any of it is cut."""
    events, findings, sources, warnings, rule, new = redact_together(
        a.events, a.findings, a.sources, a.warnings, a.rule, decision
    )
    run_dir = Path(redact_text(str(a.run_dir)))
    return replace(a, run_dir=run_dir, events=events, findings=findings, sources=sources, warnings=warnings, rule=rule), new
