"""The ordered decision rules: from findings to one verdict, with alternatives.

Root-cause findings compete by category: a category's score is its best finding's confidence,
raised a little by independent corroboration (other signatures, other ranks). Then small named
rules run in order, each with a predicate, an action and a note that names it in the report:

1. the precedence rules of the taxonomy (`outranks:` in signatures/taxonomy.yaml): a
   hardware-class Xid outranks the P2P/NCCL and CUDA errors it causes; memory exhaustion
   outranks the timeouts it causes; a SIGBUS is storage when the core shows a regular file's
   mapping and shm when it shows /dev/shm;
2. `earliest_failure`: when times are known, the category of the earliest root-cause finding
   gets a bonus (the first failure is the cause, later ones are usually its consequences);
3. `close_call`: a winner close to the runner-up loses confidence;
4. `launcher_first_observed`: among ranks that failed at the same moment, torchrun's "first
   observed failure" is the root;
5. `symptoms_stand_alone` (before scoring): with no root-cause finding, symptoms that may stand
   alone (a collective timeout with nothing before it) decide at lower confidence;
   `stop_after_failure` (before it): a stop that gives no reason (a step cancelled, a SIGTERM)
   after a symptom that may stand alone (in the same file, or by time) is the teardown of that
   failure, so it is a symptom too;
6. `below_threshold`: a best guess below MIN_CONFIDENCE makes the verdict unknown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Protocol

from analyzer.correlate.order import finding_key
from analyzer.model import Category, EventKind, Finding, Role
from analyzer.signatures.taxonomy import Outranks, outranks

MIN_CONFIDENCE = 0.25
EARLIEST_BONUS = 0.08
CORROBORATION = 0.04
SIMULTANEOUS_S = 1.0
STANDALONE_SCALE = 0.85


@dataclass(frozen=True)
class Decision:
    category: Category
    subcategory: str | None
    confidence: float
    root: Finding | None
    root_findings: list[Finding]
    alternatives: list[tuple[Category, str | None, float]]
    notes: list[str] = field(default_factory=list)
    # rules | model: whose calibration table applies; abstain: neither (none, or unknown for want of evidence)
    decided_by: str = "rules"


def named(rule: str, text: str) -> str:
    """A note as the report shows it: what happened, and the rule that did it."""
    return f"{text} (rule {rule})"


@dataclass
class Board:
    """The working state of one decision: what the rules read and change."""

    by_cat: dict[Category, list[Finding]]
    scores: dict[Category, float]
    roots: list[Finding]
    context: Mapping[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def best(self, cat: Category) -> float:
        """The confidence of the category's best finding (0 when it has none)."""
        return max((f.confidence for f in self.by_cat.get(cat, ())), default=0.0)

    def demote(self, loser: Category, winner: Category, rule: str, why: str) -> None:
        if loser in self.scores and winner in self.scores and self.scores[loser] >= self.scores[winner] - 0.05:
            self.scores[loser] = max(0.0, self.scores[winner] - 0.1)
            self.notes.append(named(rule, why))


class Rule(Protocol):
    @property
    def name(self) -> str: ...

    def predicate(self, board: Board) -> bool: ...

    def action(self, board: Board) -> None: ...


@dataclass(frozen=True)
class OutranksRule:
    """A precedence rule of the taxonomy: its winners outrank its losers."""

    spec: Outranks

    @property
    def name(self) -> str:
        return self.spec.name

    def _winners(self, board: Board) -> list[Category]:
        if self.spec.when is not None and not board.context.get(self.spec.when):
            return []
        return [
            Category(w)
            for w in self.spec.winners
            if Category(w) in board.by_cat and board.best(Category(w)) >= self.spec.min_confidence
        ]

    def _loses(self, board: Board, loser: Category) -> bool:
        if loser not in board.scores:
            return False
        if self.spec.loser_below is not None and board.best(loser) >= self.spec.loser_below:
            return False
        subs = self.spec.loser_subcategories
        return not subs or all(f.subcategory in subs for f in board.by_cat[loser])

    def predicate(self, board: Board) -> bool:
        return bool(self._winners(board)) and any(self._loses(board, Category(c)) for c in self.spec.losers)

    def action(self, board: Board) -> None:
        for winner in self._winners(board):
            for loser in map(Category, self.spec.losers):
                if self._loses(board, loser):
                    board.demote(loser, winner, self.name, self.spec.note.format(winner=winner, loser=loser))


@dataclass(frozen=True)
class EarliestFailure:
    """The category that failed first (times known, several categories) gets EARLIEST_BONUS,
    when it is within 0.2 of the best score."""

    name: str = "earliest_failure"

    def _first(self, board: Board) -> Finding | None:
        timed = sorted((f for f in board.roots if f.event.time is not None and not f.event.time_approx), key=finding_key)
        if len(timed) < 2 or len({f.category for f in timed}) < 2:
            return None
        return timed[0]

    def predicate(self, board: Board) -> bool:
        first = self._first(board)
        return (
            first is not None
            and first.category in board.scores
            and board.scores[first.category] >= max(board.scores.values()) - 0.2
        )

    def action(self, board: Board) -> None:
        first = self._first(board)
        assert first is not None
        board.scores[first.category] = min(0.99, board.scores[first.category] + EARLIEST_BONUS)
        board.notes.append(named(self.name, f"{first.category} failed first (at {first.event.loc.file}:{first.event.loc.line})"))


@cache
def score_rules() -> tuple[Rule, ...]:
    """The rules that adjust the categories' scores, in the order they run."""
    return (*(OutranksRule(spec) for spec in outranks()), EarliestFailure())


def apply_rules(board: Board, rules: Sequence[Rule]) -> None:
    for rule in rules:
        if rule.predicate(board):
            rule.action(board)


def close_call(ranked: list[tuple[Category, float]], notes: list[str]) -> float:
    """Rule `close_call`: the winner's confidence less what it lacks of a 0.1 margin."""
    score = ranked[0][1]
    if len(ranked) > 1:
        margin = score - ranked[1][1]
        if margin < 0.1:
            score = max(MIN_CONFIDENCE, score - (0.1 - margin))
            notes.append(named("close_call", f"close call with {ranked[1][0]} (margin {margin:.2f})"))
    return score


def launcher_first_observed(strong: list[Finding], launcher_roots: set[int], notes: list[str]) -> Finding:
    """Rule `launcher_first_observed`: the first failure among equally strong findings (already
    in time, rank order). Ranks that fail within a second of each other (or whose lines carry no
    clock) cannot be told apart by time; there the rank that torchrun's own summary calls the
    root cause ("Root Cause (first observed failure)") is taken."""
    first = strong[0]
    if not launcher_roots or first.event.rank in launcher_roots:
        return first
    t0 = first.event.time
    for f in strong[1:]:
        same_moment = t0 is None or f.event.time is None or f.event.time - t0 <= SIMULTANEOUS_S
        if same_moment and f.event.rank in launcher_roots:
            notes.append(
                named(
                    "launcher_first_observed",
                    f"ranks failed at the same moment; rank {f.event.rank} is torchrun's first observed failure",
                )
            )
            return f
    return first


# stops that give no reason of their own: a user's scancel looks the same as srun cancelling the
# step after a task failed, and a SIGTERM the same as a launcher's teardown
REASONLESS_STOPS = frozenset({"scheduler.cancelled", "scheduler.sigterm"})


def _before(a: Finding, b: Finding) -> bool:
    """`a` happened before `b`, as far as the logs tell: by time, else by line in the same file."""
    ea, eb = a.event, b.event
    if ea.time is not None and eb.time is not None:
        return ea.time < eb.time
    return ea.loc.file == eb.loc.file and (ea.loc.line or 0) < (eb.loc.line or 0)


def stop_after_failure(findings: list[Finding], standalone_ids: set[str], notes: list[str]) -> list[Finding]:
    """Rule `stop_after_failure`: when every root-cause finding is a stop without a reason and a
    symptom that may stand alone came before the first of them, the stops become symptoms."""
    roots = [f for f in findings if f.role is Role.ROOT_CAUSE]
    if not roots or any(f.subcategory not in REASONLESS_STOPS for f in roots):
        return findings
    first = min(roots, key=finding_key)
    earlier = [
        f
        for f in findings
        if f.role is Role.SYMPTOM and f.signature in standalone_ids and f.category is not Category.SCHEDULER and _before(f, first)
    ]
    if not earlier:
        return findings
    notes.append(
        named("stop_after_failure", f"the job was stopped after {earlier[0].category} errors: the stop is their teardown")
    )
    return [replace(f, role=Role.SYMPTOM) if f.role is Role.ROOT_CAUSE else f for f in findings]


def symptoms_stand_alone(findings: list[Finding], standalone_ids: set[str], notes: list[str]) -> list[Finding]:
    """Rule `symptoms_stand_alone`: with no root-cause finding, the symptoms that may stand
    alone compete instead, at STANDALONE_SCALE of their confidence."""
    roots = [f for f in findings if f.role is Role.SYMPTOM and f.signature in standalone_ids]
    if roots:
        notes.append(named("symptoms_stand_alone", "no root-cause signature fired; deciding on symptoms that can stand alone"))
    return [replace(f, confidence=round(f.confidence * STANDALONE_SCALE, 3)) for f in roots]


def decide(
    findings: list[Finding],
    standalone_ids: set[str],
    context: dict[str, bool] | None = None,
    launcher_roots: set[int] | None = None,
    rules: Sequence[Rule] | None = None,
) -> Decision:
    notes: list[str] = []
    findings = stop_after_failure(findings, standalone_ids, notes)
    roots = [f for f in findings if f.role is Role.ROOT_CAUSE]
    if not roots:
        roots = symptoms_stand_alone(findings, standalone_ids, notes)
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

    board = Board(dict(by_cat), scores, roots, context or {}, notes)
    apply_rules(board, score_rules() if rules is None else rules)

    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0].value))
    cat = ranked[0][0]
    score = close_call(ranked, notes)
    winners = sorted(by_cat[cat], key=lambda f: (finding_key(f), -f.confidence))
    best_conf = max(f.confidence for f in winners)
    strong = [f for f in winners if f.confidence >= best_conf - 0.15]
    root = launcher_first_observed(strong, launcher_roots or set(), notes)
    sub = _subcategory(by_cat[cat])
    alternatives = [(c, _subcategory(by_cat[c]), round(s, 2)) for c, s in ranked[1:5]]
    if score < MIN_CONFIDENCE:
        notes.append(named("below_threshold", f"best guess {cat} below the confidence threshold"))
        return Decision(
            Category.UNKNOWN, None, round(score, 2), root, winners, [(cat, sub, round(score, 2)), *alternatives], notes
        )
    return Decision(cat, sub, round(score, 2), root, winners, alternatives, notes)


def _subcategory(fs: list[Finding]) -> str | None:
    if not fs:
        return None
    best = max(fs, key=lambda f: (f.confidence, -finding_key(f)[0] if finding_key(f)[0] != float("inf") else 0))
    return best.subcategory


def core_context(findings: list[Finding]) -> dict[str, bool]:
    """What the cores among the findings say about the fault's mapping (for the SIGBUS rules)."""
    ctx = {"core_regular_file": False, "core_dev_shm": False}
    for f in findings:
        if f.event.kind is EventKind.CORE:
            ctx["core_regular_file"] |= bool(f.event.fields.get("fault_in_regular_file"))
            ctx["core_dev_shm"] |= bool(f.event.fields.get("fault_in_dev_shm"))
    return ctx
