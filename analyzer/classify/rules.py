"""The ordered decision rules: from findings to one verdict, with alternatives.

1. Root-cause findings compete by category: a category's score is its best finding's
   confidence, raised a little by independent corroboration (other signatures, other ranks).
2. Precedence rules of the taxonomy adjust scores: a hardware-class Xid outranks the P2P/NCCL
   and CUDA errors it causes; memory exhaustion outranks the timeouts it causes; a SIGBUS is
   storage when the core shows a regular file's mapping and shm otherwise.
3. When times are known, the category of the earliest root-cause finding gets a bonus: the
   first failure is the cause, later ones are usually its consequences.
4. With no root-cause finding, symptoms that may stand alone (a collective timeout with
   nothing before it) decide at lower confidence; with nothing at all, the verdict is unknown.
Every step leaves a note, so the report can say why.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from analyzer.correlate.order import finding_key
from analyzer.model import Category, Finding, Role

MIN_CONFIDENCE = 0.25
EARLIEST_BONUS = 0.08
CORROBORATION = 0.04


@dataclass
class Decision:
    category: Category
    subcategory: str | None
    confidence: float
    root: Finding | None
    root_findings: list[Finding]
    alternatives: list[tuple[Category, str | None, float]]
    notes: list[str] = field(default_factory=list)
    decided_by: str = (
        "rules"  # rules | model: whose calibration table applies; abstain: neither (none, or unknown for want of evidence)
    )


def _standalone(f: Finding, standalone_ids: set[str]) -> bool:
    return f.signature in standalone_ids


def decide(
    findings: list[Finding],
    standalone_ids: set[str],
    context: dict[str, bool] | None = None,
    launcher_roots: set[int] | None = None,
) -> Decision:
    context = context or {}
    notes: list[str] = []
    roots = [f for f in findings if f.role is Role.ROOT_CAUSE]
    if not roots:
        roots = [f for f in findings if f.role is Role.SYMPTOM and _standalone(f, standalone_ids)]
        if roots:
            notes.append("no root-cause signature fired; deciding on symptoms that can stand alone")
            roots = [_scaled(f, 0.85) for f in roots]
    if not roots:
        return Decision(Category.UNKNOWN, None, 0.0, None, [], [], ["no signature explains this failure"])

    by_cat: dict[Category, list[Finding]] = defaultdict(list)
    for f in roots:
        by_cat[f.category].append(f)

    scores: dict[Category, float] = {}
    for cat, fs in by_cat.items():
        best = max(f.confidence for f in fs)
        distinct = len({f.signature for f in fs}) - 1
        places = len({(f.event.host, f.event.rank) for f in fs}) - 1
        scores[cat] = min(0.99, best + CORROBORATION * min(distinct, 3) + 0.01 * min(places, 3))

    _precedence(scores, by_cat, context, notes)

    timed = sorted((f for f in roots if f.event.time is not None and not f.event.time_approx), key=finding_key)
    if len(timed) >= 2 and len({f.category for f in timed}) > 1:
        first = timed[0]
        if first.category in scores and scores[first.category] >= max(scores.values()) - 0.2:
            scores[first.category] = min(0.99, scores[first.category] + EARLIEST_BONUS)
            notes.append(f"{first.category} failed first (at {first.event.loc.file}:{first.event.loc.line})")

    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0].value))
    cat, score = ranked[0]
    if len(ranked) > 1:
        margin = score - ranked[1][1]
        if margin < 0.1:
            score = max(MIN_CONFIDENCE, score - (0.1 - margin))
            notes.append(f"close call with {ranked[1][0]} (margin {margin:.2f})")
    winners = sorted(by_cat[cat], key=lambda f: (finding_key(f), -f.confidence))
    best_conf = max(f.confidence for f in winners)
    strong = [f for f in winners if f.confidence >= best_conf - 0.15]
    root = _first_of(strong, launcher_roots or set(), notes)
    sub = _subcategory(by_cat[cat])
    alternatives = [(c, _subcategory(by_cat[c]), round(s, 2)) for c, s in ranked[1:5]]
    if score < MIN_CONFIDENCE:
        notes.append(f"best guess {cat} below the confidence threshold")
        return Decision(
            Category.UNKNOWN, None, round(score, 2), root, winners, [(cat, sub, round(score, 2)), *alternatives], notes
        )
    return Decision(cat, sub, round(score, 2), root, winners, alternatives, notes)


SIMULTANEOUS_S = 1.0


def _first_of(strong: list[Finding], launcher_roots: set[int], notes: list[str]) -> Finding:
    """The first failure among equally strong findings (already in time, rank order).

    Ranks that fail within a second of each other (or whose lines carry no clock) cannot be
    told apart by time; there the rank that torchrun's own summary calls the root cause
    ("Root Cause (first observed failure)") is taken.
    """
    first = strong[0]
    if not launcher_roots or first.event.rank in launcher_roots:
        return first
    t0 = first.event.time
    for f in strong[1:]:
        same_moment = t0 is None or f.event.time is None or f.event.time - t0 <= SIMULTANEOUS_S
        if same_moment and f.event.rank in launcher_roots:
            notes.append(f"ranks failed at the same moment; rank {f.event.rank} is torchrun's first observed failure")
            return f
    return first


def _scaled(f: Finding, factor: float) -> Finding:
    return replace(f, confidence=round(f.confidence * factor, 3))


def _subcategory(fs: list[Finding]) -> str | None:
    if not fs:
        return None
    best = max(fs, key=lambda f: (f.confidence, -finding_key(f)[0] if finding_key(f)[0] != float("inf") else 0))
    return best.subcategory


def _precedence(
    scores: dict[Category, float], by_cat: dict[Category, list[Finding]], context: dict[str, bool], notes: list[str]
) -> None:
    def demote(cat: Category, below: Category, why: str) -> None:
        if cat in scores and below in scores and scores[cat] >= scores[below] - 0.05:
            scores[cat] = max(0.0, scores[below] - 0.1)
            notes.append(why)

    hw = by_cat.get(Category.HARDWARE_XID, [])
    if hw and max(f.confidence for f in hw) >= 0.7:
        for cat in (Category.P2P, Category.USER_CODE, Category.NETWORK, Category.HANG, Category.SHM, Category.OOM_CASCADE):
            demote(cat, Category.HARDWARE_XID, f"a hardware-class GPU fault explains the {cat} errors")
    oom = by_cat.get(Category.OOM_CASCADE, [])
    if oom and max(f.confidence for f in oom) >= 0.6:
        for cat in (Category.HANG, Category.NETWORK):
            demote(cat, Category.OOM_CASCADE, f"the {cat} errors follow a memory exhaustion")
        if Category.SCHEDULER in scores and all(f.subcategory == "scheduler.sigterm" for f in by_cat[Category.SCHEDULER]):
            demote(Category.SCHEDULER, Category.OOM_CASCADE, "SIGTERM is the launcher's teardown after the OOM")
    for cat in (Category.SHM, Category.P2P, Category.VERSION_MISMATCH, Category.STORAGE):
        fs = by_cat.get(cat, [])
        if fs and max(f.confidence for f in fs) >= 0.7:
            for weaker in (Category.HANG, Category.NETWORK, Category.USER_CODE):
                if weaker in scores and max(f.confidence for f in by_cat[weaker]) < 0.75:
                    demote(weaker, cat, f"the {weaker} errors follow the {cat} failure")
    if context.get("core_regular_file") and Category.STORAGE in scores and Category.SHM in scores:
        demote(Category.SHM, Category.STORAGE, "the core shows the SIGBUS in a regular file's mapping")
    if context.get("core_dev_shm") and Category.SHM in scores and Category.STORAGE in scores:
        demote(Category.STORAGE, Category.SHM, "the core shows the SIGBUS inside /dev/shm")
