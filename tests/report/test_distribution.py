"""Confidences read as one distribution: in every corpus case's JSON report, the verdict's and
the alternatives' confidences sum to at most 1 and no alternative is above the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.model import Alternative, Category
from analyzer.pipeline import analyze
from analyzer.report import render
from analyzer.report.distribution import as_distribution

from ..conftest import REPO

CASES = sorted(p.parent for p in (REPO / "corpora").glob("*/*/case.yaml")) + sorted(
    p for p in (REPO / "examples").iterdir() if p.is_dir()
)


def test_there_are_cases() -> None:
    assert len(CASES) > 100


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_verdict_and_alternatives_are_one_distribution(case: Path) -> None:
    data = json.loads(render(analyze(case), "json"))
    verdict = data["verdict"]["confidence"]
    alts = [a["confidence"] for a in data["alternatives"]]
    assert verdict + sum(alts) <= 1.0 + 1e-9, (verdict, alts)
    assert all(a <= verdict for a in alts), (verdict, alts)
    assert alts == sorted(alts, reverse=True)


def test_rescaling_keeps_the_order_and_rounds_down() -> None:
    alts = [Alternative(Category.NETWORK, None, 0.89), Alternative(Category.P2P, None, 0.80)]
    out = as_distribution(0.60, alts)
    assert [a.category for a in out] == [Category.NETWORK, Category.P2P]
    assert [a.confidence for a in out] == [0.21, 0.18]  # 0.40 * 0.89/1.69 = 0.2106, 0.40 * 0.80/1.69 = 0.1893
    assert 0.60 + sum(a.confidence for a in out) <= 1.0


def test_already_a_distribution_is_unchanged() -> None:
    alts = [Alternative(Category.HANG, None, 0.05), Alternative(Category.NETWORK, None, 0.01)]
    assert [a.confidence for a in as_distribution(0.90, alts)] == [0.05, 0.01]


@pytest.mark.parametrize(("verdict", "alt", "close"), [(0.55, 0.45, True), (0.99, 0.01, False), (0.70, 0.30, False)])
def test_close_call_only_when_it_is_one(verdict: float, alt: float, close: bool) -> None:
    from dataclasses import replace

    report = analyze(REPO / "examples" / "oom-cascade")
    report = replace(
        report,
        verdict=replace(report.verdict, confidence=verdict),
        alternatives=as_distribution(verdict, [Alternative(Category.HANG, None, alt)]),
    )
    for fmt in ("text", "markdown", "html"):
        out = render(report, fmt, width=100)
        assert ("Close call with" in out) is close, fmt
        assert ("Less likely" in out) is not close, fmt
