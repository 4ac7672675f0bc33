"""Each decision rule on its own: its predicate, its action, and the note that names it."""

from __future__ import annotations

import pytest

from analyzer.classify.rules import (
    MIN_CONFIDENCE,
    Board,
    EarliestFailure,
    OutranksRule,
    close_call,
    decide,
    launcher_first_observed,
    score_rules,
    symptoms_stand_alone,
)
from analyzer.model import Category, Event, EventKind, Finding, Location, Role
from analyzer.signatures.taxonomy import outranks


def finding(
    cat: str,
    conf: float,
    sub: str | None = None,
    *,
    sig: str | None = None,
    rank: int | None = 0,
    time: float | None = None,
    role: Role = Role.ROOT_CAUSE,
    line: int = 1,
) -> Finding:
    event = Event(EventKind.LINE, Location("rank0.log", line), "text", "text", rank=rank, time=time)
    return Finding(sig or f"{cat}.x", "title", Category(cat), sub or f"{cat}.x", role, conf, "summary", event)


def only(name: str) -> list[OutranksRule]:
    return [OutranksRule(spec) for spec in outranks() if spec.name == name]


def ruled(decision_notes: list[str], name: str) -> bool:
    return any(n.endswith(f"(rule {name})") for n in decision_notes)


# (findings, context, expected category with the rule, expected category without it)
OUTRANKS_CASES: dict[str, tuple[list[Finding], dict[str, bool], str, str]] = {
    "hardware_xid_outranks_its_symptoms": (
        [finding("hardware_xid", 0.8), finding("p2p", 0.85)],
        {},
        "hardware_xid",
        "p2p",
    ),
    "oom_outranks_the_timeouts_after_it": (
        [finding("oom_cascade", 0.7), finding("hang", 0.8)],
        {},
        "oom_cascade",
        "hang",
    ),
    "oom_outranks_the_teardown_sigterm": (
        [finding("oom_cascade", 0.7), finding("scheduler", 0.8, "scheduler.sigterm")],
        {},
        "oom_cascade",
        "scheduler",
    ),
    "a_named_failure_outranks_generic_errors": (
        [finding("shm", 0.72), finding("network", 0.74)],
        {},
        "shm",
        "network",
    ),
    "sigbus_in_a_regular_file_is_storage": (
        [finding("storage", 0.6), finding("shm", 0.7)],
        {"core_regular_file": True},
        "storage",
        "shm",
    ),
    "sigbus_inside_dev_shm_is_shm": (
        [finding("shm", 0.6), finding("storage", 0.7)],
        {"core_dev_shm": True},
        "shm",
        "storage",
    ),
}


def test_every_outranks_rule_of_the_taxonomy_has_a_case() -> None:
    assert {r.name for r in outranks()} == set(OUTRANKS_CASES)


@pytest.mark.parametrize("name", sorted(OUTRANKS_CASES))
def test_outranks_rule(name: str) -> None:
    findings, context, with_rule, without = OUTRANKS_CASES[name]
    d = decide(findings, set(), context, rules=only(name))
    assert d.category.value == with_rule
    assert ruled(d.notes, name)
    plain = decide(findings, set(), context, rules=[])
    assert plain.category.value == without and not ruled(plain.notes, name)


def test_outranks_needs_a_confident_winner() -> None:
    d = decide([finding("hardware_xid", 0.6), finding("p2p", 0.65)], set(), rules=only("hardware_xid_outranks_its_symptoms"))
    assert d.category is Category.P2P


def test_outranks_spares_a_strong_generic_error() -> None:
    # loser_below: a network finding at 0.8 is not a mere consequence of a 0.72 shm finding
    fs = [finding("shm", 0.72), finding("network", 0.8)]
    assert decide(fs, set(), rules=only("a_named_failure_outranks_generic_errors")).category is Category.NETWORK


def test_teardown_rule_only_for_sigterm() -> None:
    fs = [finding("oom_cascade", 0.7), finding("scheduler", 0.8, "scheduler.time_limit")]
    assert decide(fs, set(), rules=only("oom_outranks_the_teardown_sigterm")).category is Category.SCHEDULER


def test_context_rule_needs_its_context() -> None:
    fs = [finding("storage", 0.6), finding("shm", 0.7)]
    rule = only("sigbus_in_a_regular_file_is_storage")[0]
    assert not rule.predicate(
        Board({Category.STORAGE: fs[:1], Category.SHM: fs[1:]}, {Category.STORAGE: 0.6, Category.SHM: 0.7}, fs)
    )


def test_earliest_failure() -> None:
    fs = [finding("user_code", 0.7, time=100.0), finding("network", 0.75, time=50.0, rank=1)]
    board = Board({Category.USER_CODE: fs[:1], Category.NETWORK: fs[1:]}, {Category.USER_CODE: 0.7, Category.NETWORK: 0.72}, fs)
    rule = EarliestFailure()
    assert rule.predicate(board)
    rule.action(board)
    assert board.scores[Category.NETWORK] == pytest.approx(0.80)
    assert ruled(board.notes, "earliest_failure")
    untimed = [finding("user_code", 0.7), finding("network", 0.75, rank=1)]
    assert not rule.predicate(Board({}, {Category.USER_CODE: 0.7}, untimed))


def test_close_call() -> None:
    notes: list[str] = []
    assert close_call([(Category.SHM, 0.8), (Category.STORAGE, 0.75)], notes) == pytest.approx(0.75)
    assert ruled(notes, "close_call")
    notes.clear()
    assert close_call([(Category.SHM, 0.8), (Category.STORAGE, 0.6)], notes) == 0.8 and not notes


def test_launcher_first_observed() -> None:
    a, b = finding("oom_cascade", 0.9, rank=0, time=10.0), finding("oom_cascade", 0.9, rank=3, time=10.4)
    notes: list[str] = []
    assert launcher_first_observed([a, b], {3}, notes) is b and ruled(notes, "launcher_first_observed")
    notes.clear()
    late = finding("oom_cascade", 0.9, rank=3, time=20.0)
    assert launcher_first_observed([a, late], {3}, notes) is a and not notes


def test_symptoms_stand_alone() -> None:
    timeout = finding("hang", 0.8, sig="hang.watchdog_timeout", role=Role.SYMPTOM)
    notes: list[str] = []
    roots = symptoms_stand_alone([timeout], {"hang.watchdog_timeout"}, notes)
    assert [f.confidence for f in roots] == [0.68] and ruled(notes, "symptoms_stand_alone")
    assert symptoms_stand_alone([timeout], set(), []) == []
    assert decide([timeout], {"hang.watchdog_timeout"}).category is Category.HANG
    assert decide([timeout], set()).category is Category.UNKNOWN


def test_below_threshold() -> None:
    d = decide([finding("network", MIN_CONFIDENCE - 0.05)], set())
    assert d.category is Category.UNKNOWN and d.alternatives[0][0] is Category.NETWORK
    assert ruled(d.notes, "below_threshold")


def test_the_rules_run_in_the_taxonomy_order() -> None:
    names = [r.name for r in score_rules()]
    assert names == [r.name for r in outranks()] + ["earliest_failure"]
