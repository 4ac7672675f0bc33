"""The report object of one analysis: verdict, evidence, cascade, timeline, missing evidence.

Built from what the stages found (sources, events, findings) and the classifier's decision;
the renderers in this package turn it into text, JSON, Markdown or HTML.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from analyzer import __version__
from analyzer.classify.abstain import failure_evidence
from analyzer.classify.features import normalize as normalize_words
from analyzer.classify.rules import Decision
from analyzer.correlate.blame import blamed_rank, stalled_rank
from analyzer.correlate.gpu import gpu_of
from analyzer.correlate.order import cascade, finding_key, sort_key, timeline
from analyzer.model import (
    TIME_PLACED,
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
from analyzer.report.distribution import as_distribution
from analyzer.report.fingerprint import fingerprint
from analyzer.signatures.loader import category_titles
from analyzer.signatures.taxonomy import missing_evidence_hints

_NOT_A_HOST = (None, "", "localhost", "127.0.0.1")


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
    shown: list[Event] = []  # the lines that show a failure no signature names (no root cause)
    if root is not None and decision.category is not Category.NONE:
        # an `unknown` with a root (an error that names no cause, a guess below the threshold):
        # the root's line is still where the failure showed first, and its remediation says how
        # to tell the causes apart
        rank, host = first_rank(decision, single_process, events, findings)
        pci, gpu_index = gpu_of([root.event, *(f.event for f in decision.root_findings)], events)
        named, _ = first_rank(decision, False, events, findings)
        note = ONE_PROCESS if rank is not None and named is None else None
        first = FirstFailure(
            rank,
            host,
            root.event.time,
            root.event.loc.file,
            root.event.loc.line,
            time_approx=root.event.time_approx and root.event.time is not None,
            pci_bus_id=pci,
            gpu_index=gpu_index,
            rank_note=note,
            time_note=time_note(root.event),
        )
        remediation = _remediation(decision.root_findings)
        if decision.category is Category.UNKNOWN:  # no cause named: nothing follows from one
            chain = []
            title = f"Root cause unknown: {root.title}"
        else:
            chain = cascade(root, findings, decision.category.value)
            title = f"{taxonomy_titles.get(decision.category.value, decision.category.value)}: {root.title}"
        explanation = _explain(root, decision.root_findings, chain, decision.notes)
    else:
        first = FirstFailure()
        remediation = ()
        chain = []
        if decision.category is Category.NONE:
            title = taxonomy_titles.get(Category.NONE.value, "No failure found")
        else:
            # the cause is not known, the failure is: its earliest line is the first failure
            shown = sorted(failure_evidence(events, findings), key=sort_key)
            if shown:
                e = shown[0]
                first = FirstFailure(
                    e.rank,
                    e.host,
                    e.time,
                    e.loc.file,
                    e.loc.line,
                    time_approx=e.time_approx and e.time is not None,
                    time_note=time_note(e),
                )
            if decision.category is Category.UNKNOWN:
                title = "Root cause unknown"
            else:  # the classifier's call from the whole picture, with no line that names the cause
                title = f"{taxonomy_titles.get(decision.category.value, decision.category.value)} (no signature names the cause)"
                # what to do comes from the lines of that category that led there (context)
                remediation = _remediation([f for f in findings if f.category is decision.category])
        explanation = "; ".join(decision.notes) or "no signature explains this failure"
        if shown and shown[0].loc.line:
            explanation += f"; the first line that shows the failure: {shown[0].loc.file}:{shown[0].loc.line}"
        if decision.category is Category.UNKNOWN:
            # a signature that knows what a line shows but not its cause (a stall, an undecidable
            # error) still says what it shows and what to try
            said = next((f for f in findings if f.category is Category.UNKNOWN and f.role is not Role.CONTEXT), None)
            if said:
                explanation += f"; what it shows: {said.summary}"
                remediation = said.remediation
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
    known = {id(f) for f in findings}
    rows = [*findings, *(f for f in decision.root_findings if id(f) not in known)]  # a cue's finding is the decision's own
    evidence = _evidence(rows, decision.root_findings, max_evidence, decision.root)
    report = Report(
        run_dir=str(run_dir),
        verdict=verdict,
        alternatives=as_distribution(decision.confidence, (Alternative(c, s, conf) for c, s, conf in decision.alternatives)),
        cascade=tuple(chain),
        evidence=tuple(evidence),
        timeline=tuple(timeline(events, findings, also=shown)),
        sources=tuple(sources),
        # what to collect "after a failure" means nothing for a job that did not fail
        missing_evidence=()
        if decision.category is Category.NONE
        else tuple(_missing(sources, events, findings, decision.category)),
        warnings=tuple(warnings),
        tool_version=__version__,
    )
    return report


ONE_PROCESS = "the job was one process: no line names a rank"


def first_rank(
    decision: Decision, single_process: bool, events: list[Event] | None = None, findings: list[Finding] | None = None
) -> tuple[int | None, str | None]:
    """The first failing rank and host of a decision: the root event's, else one that another
    line of the same cause names (the launcher's view of the death), else 0 for a job that was
    one process (the report then says so in `first_failure.rank_note`)."""
    root = decision.root
    if root is None:
        return None, None
    rank, host = root.event.rank, root.event.host
    if decision.category is Category.HANG:
        blamed = blamed_rank(decision.root_findings)
        if blamed is None and events is not None:
            stalled = stalled_rank(events, findings or decision.root_findings)
            blamed = stalled[0] if stalled else None
        if blamed is not None:
            if blamed != rank:  # the host that rank's own lines name, when known
                host = next((e.host for e in events or [] if e.rank == blamed and e.host not in _NOT_A_HOST), None)
            return blamed, host
    if rank is None:
        named = next((f.event for f in decision.root_findings if f.event.rank is not None), None)
        if named is not None:
            rank, host = named.rank, host or named.host
    if rank is None and single_process:
        rank = 0
    return rank, host


def time_note(e: Event) -> str | None:
    """Where an event's approximate time comes from, None where the time is its own."""
    if not e.time_approx or e.time is None:
        return None
    source = e.fields.get("time_from")
    return source if isinstance(source, str) else TIME_PLACED


def _remediation(roots: list[Finding]) -> tuple[str, ...]:
    out: list[str] = []
    for f in roots:
        for r in f.remediation:
            if r not in out:
                out.append(r)
    return tuple(out[:8])


def _explain(root: Finding, roots: list[Finding], chain: Sequence[object], notes: list[str]) -> str:
    where = root.event.loc.file + (f":{root.event.loc.line}" if root.event.loc.line is not None else "")
    who = f"rank {root.event.rank}" if root.event.rank is not None else "the job"
    if root.event.host:
        who += f" on {root.event.host}"
    parts = [f"{root.summary} ({who}, {where})."]
    others = len({(f.event.loc.file, f.event.loc.line) for f in roots}) - 1
    if others > 0:
        parts.append(f"{others} more line{'s' if others != 1 else ''} point{'s' if others == 1 else ''} the same way.")
    if chain:
        kinds = "1 kind of error" if len(chain) == 1 else f"{len(chain)} kinds of error"
        parts.append(f"{kinds} on other ranks or later follow{'s' if len(chain) == 1 else ''} from it.")
    parts.extend(n[0].upper() + n[1:] + "." for n in notes[:3])
    return " ".join(parts)


def _evidence(findings: list[Finding], roots: list[Finding], limit: int, decisive: Finding | None = None) -> list[EvidenceItem]:
    """One row per line, quoting the line at its file:line (a block's event its cited line): the
    decisive line first, then the other root-cause lines, context and symptoms, each in time
    order; at most three rows per signature and, by the signature's scope, one per rank, per
    host or per job."""
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
    first = (decisive.event.loc.file, decisive.event.loc.line) if decisive is not None else None

    def order(rf: tuple[int, Finding]) -> tuple[int, bool, tuple[float, int, str, str, int], float]:
        e = rf[1].event
        return (rf[0], (e.loc.file, e.loc.line) != first, finding_key(rf[1]), -rf[1].confidence)

    chosen.sort(key=order)
    out: list[EvidenceItem] = []
    seen: set[tuple[str, int | None]] = set()
    for rank_order, f in chosen:
        e = f.event
        if (e.loc.file, e.loc.line) in seen:
            continue  # the same line, named by a second signature: one row
        seen.add((e.loc.file, e.loc.line))
        role = (Role.ROOT_CAUSE, Role.CONTEXT, Role.SYMPTOM)[rank_order]
        quote = e.fields.get("quote")
        text = quote if isinstance(quote, str) else e.text
        text = (text.strip().splitlines() or [""])[0]  # a block's event cites its first line
        approx = e.time_approx and e.time is not None
        out.append(EvidenceItem(e.loc.file, e.loc.line, text[:500], f.signature, role, e.rank, e.host, e.time, approx))
        if len(out) >= limit:
            break
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
        if h.present_text is not None and not any(h.present_text in e.text for e in events):
            continue
        if h.signatures and not any(fnmatch.fnmatchcase(s, g) for s in sigs for g in h.signatures):
            continue
        if h.categories and category.value not in h.categories:
            continue
        hosts = sorted({s.host for s in sources if s.host})
        out.append(
            h.hint.replace("{hosts}", f" from host{'s' if len(hosts) > 1 else ''} {', '.join(hosts[:8])}" if hosts else "")
        )
    return out
