"""The report object of one analysis: verdict, evidence, cascade, timeline, missing evidence.

Built from what the stages found (sources, events, findings) and the classifier's decision;
the renderers in this package turn it into text, JSON, Markdown or HTML.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from analyzer import __version__
from analyzer.classify.features import normalize as normalize_words
from analyzer.classify.rules import Decision
from analyzer.correlate.blame import blamed_rank
from analyzer.correlate.order import cascade, finding_key, timeline
from analyzer.model import (
    Alternative,
    Category,
    Event,
    EvidenceItem,
    Finding,
    FirstFailure,
    Report,
    Role,
    Scope,
    SourceInfo,
    SourceStatus,
    Verdict,
)
from analyzer.report.fingerprint import fingerprint
from analyzer.signatures.loader import category_titles
from analyzer.signatures.taxonomy import missing_evidence_hints


def normalize_text(text: str) -> str:
    """The words of a line with numbers, hex, paths and source files masked (as the classifier sees them)."""
    return " ".join(normalize_words(text))[:200]


def build_report(
    run_dir: Path | str,
    sources: Sequence[SourceInfo],
    events: list[Event],
    findings: list[Finding],
    warnings: Sequence[str],
    decision: Decision,
    single_process: bool,
    max_evidence: int = 40,
) -> Report:
    """The report of one analysis, unredacted (redaction is the pipeline's last stage)."""
    taxonomy_titles = category_titles()

    root = decision.root
    if root is not None and decision.category is not Category.UNKNOWN:
        rank, host = first_rank(decision, single_process)
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
    hosts = {e.host for e in events if e.host} | {s.host for s in sources if s.host}
    fp = fingerprint(decision.category.value, decision.subcategory, decision.root, hosts)
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
    evidence = _evidence(findings, decision.root_findings, max_evidence)
    report = Report(
        run_dir=str(run_dir),
        verdict=verdict,
        alternatives=tuple(Alternative(c, s, conf) for c, s, conf in decision.alternatives),
        cascade=tuple(chain),
        evidence=tuple(evidence),
        timeline=tuple(timeline(events, findings)),
        sources=tuple(sources),
        missing_evidence=tuple(_missing(sources, events, findings, decision.category)),
        warnings=tuple(warnings),
        tool_version=__version__,
    )
    return report


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
    """The evidence rows: every root-cause finding, then context and symptoms, at most three
    rows per signature and, by the signature's scope, one per rank, per host or per job."""
    root_ids = {id(f) for f in roots}
    chosen: list[tuple[int, Finding]] = []
    per_sig: dict[str, int] = {}
    places: set[tuple[str, object]] = set()
    for f in findings:
        role = Role.ROOT_CAUSE if id(f) in root_ids else (Role.CONTEXT if f.role is Role.CONTEXT else Role.SYMPTOM)
        if role is not Role.ROOT_CAUSE and f.scope is not Scope.LINE:
            place = (f.signature, _place(f))
            if place in places:
                continue  # the same claim about the same rank, host or job
            places.add(place)
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


def _place(f: Finding) -> object:
    """What a finding of rank, host or job scope is about."""
    e = f.event
    if f.scope is Scope.JOB:
        return "job"
    if f.scope is Scope.HOST:
        return e.host or e.loc.file
    return (e.host, e.rank) if e.rank is not None else (e.host, e.loc.file)


def _missing(sources: Sequence[SourceInfo], events: list[Event], findings: list[Finding], category: Category) -> list[str]:
    """The taxonomy's missing-evidence hints whose conditions hold, in its order."""
    kinds = {str(s.kind) for s in sources if s.status is SourceStatus.PARSED}
    event_kinds = {str(e.kind) for e in events}
    sigs = {f.signature for f in findings}
    out: list[str] = []
    for h in missing_evidence_hints():
        if h.no_files:
            if not sources:
                out.append(h.hint)
                return out
            continue
        if h.missing_source is not None and h.missing_source in kinds:
            continue
        if h.missing_event and event_kinds & set(h.missing_event):
            continue
        if h.missing_text is not None and any(h.missing_text in e.text for e in events):
            continue
        if h.signatures and not any(fnmatch.fnmatchcase(s, g) for s in sigs for g in h.signatures):
            continue
        if h.categories and category.value not in h.categories:
            continue
        hosts = sorted({s.host for s in sources if s.host})
        out.append(h.hint.replace("{hosts}", f" from host(s) {', '.join(hosts[:8])}" if hosts else ""))
    return out
