"""The rank a hang is blamed on, from lab cases reproduced here (corpora/lab)."""

from __future__ import annotations

from analyzer.model import Category
from analyzer.pipeline import analyze

from ..conftest import REPO


def test_monitored_barrier_names_the_rank_that_never_came() -> None:
    report = analyze(REPO / "corpora" / "lab" / "lab-hang-006")
    assert report.verdict.category is Category.HANG
    assert report.verdict.first_failure.rank == 2


def test_desync_messages_blame_the_rank_named_in_every_pair() -> None:
    report = analyze(REPO / "corpora" / "lab" / "lab-hang-005")
    assert report.verdict.category is Category.HANG
    assert report.verdict.first_failure.rank == 3
