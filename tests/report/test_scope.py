"""A signature's scope decides how many evidence rows its findings get."""

from __future__ import annotations

from analyzer.classify.rules import decide
from analyzer.model import Category, Event, EventKind, Finding, Location, Role, Scope
from analyzer.report.build import build_report


def _f(sig: str, role: Role, scope: Scope, line: int, rank: int | None, host: str = "node0") -> Finding:
    e = Event(EventKind.LINE, Location("train.log", line), f"line {line}", f"line {line}", rank=rank, host=host)
    return Finding(sig, "t", Category.HANG, "hang.collective_timeout", role, 0.8, "s", e, scope=scope)


def _rows(findings: list[Finding], sig: str) -> list[int | None]:
    d = decide(findings, set())
    report = build_report("run", [], [f.event for f in findings], findings, [], d, False)
    return [e.line for e in report.evidence if e.signature == sig]


def test_scope_collapses_symptom_rows() -> None:
    root = _f("hang.root", Role.ROOT_CAUSE, Scope.LINE, 1, 0)
    same_rank = [_f("x.rank", Role.SYMPTOM, Scope.RANK, i, 1) for i in (2, 3)] + [_f("x.rank", Role.SYMPTOM, Scope.RANK, 4, 2)]
    assert _rows([root, *same_rank], "x.rank") == [2, 4]
    hosts = [_f("x.host", Role.SYMPTOM, Scope.HOST, i, i, host=h) for i, h in ((5, "a"), (6, "a"), (7, "b"))]
    assert _rows([root, *hosts], "x.host") == [5, 7]
    job = [_f("x.job", Role.SYMPTOM, Scope.JOB, i, i) for i in (8, 9)]
    assert _rows([root, *job], "x.job") == [8]
    lines = [_f("x.line", Role.SYMPTOM, Scope.LINE, i, 1) for i in (10, 11, 12, 13)]
    assert _rows([root, *lines], "x.line") == [10, 11, 12]


def test_root_cause_rows_are_all_kept() -> None:
    roots = [_f("hang.root", Role.ROOT_CAUSE, Scope.JOB, i, 0) for i in (1, 2)]
    assert _rows(roots, "hang.root") == [1, 2]
