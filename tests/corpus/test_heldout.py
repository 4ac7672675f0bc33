"""The held-out scorer (corpora/heldout.py): how a case is buried in a healthy run, and how a
verdict is judged."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpora import heldout

from ..conftest import REPO

BACKGROUND = REPO / "corpora" / "healthy" / "lab-healthy-019"  # a finished 4-rank torchrun job (--log-dir, console)
CASE = REPO / "corpora" / "real" / "real-oom-001"


def _case(tmp: Path) -> heldout.Case:
    dest = tmp / "cases" / CASE.name
    shutil.copytree(CASE, dest)
    (case,) = heldout.load_cases(tmp / "cases")
    return case


def test_went_on_keeps_the_background_after_the_case_lines(tmp_path: Path) -> None:
    case = _case(tmp_path)
    placed = heldout.bury(case, BACKGROUND, tmp_path / "run", ending="went-on")
    (target,) = placed.values()
    before = (BACKGROUND / target).read_text(encoding="utf-8").splitlines()
    after = (tmp_path / "run" / target).read_text(encoding="utf-8").splitlines()
    new = case.files[0].read_text(encoding="utf-8").splitlines()
    assert len(after) == len(before) + len(new)
    assert after[-1] == before[-1]  # the rank went on to the end of its log


def test_died_ends_every_log_where_the_case_lines_are(tmp_path: Path) -> None:
    assert "successfully finished" in (BACKGROUND / "console.log").read_text(encoding="utf-8")
    case = _case(tmp_path)
    placed = heldout.bury(case, BACKGROUND, tmp_path / "run", ending="died")
    (target,) = placed.values()
    new = case.files[0].read_text(encoding="utf-8").splitlines()
    after = (tmp_path / "run" / target).read_text(encoding="utf-8").splitlines()
    assert after[-len(new) :] == new  # the failing rank's log stops with the case's lines
    console = (tmp_path / "run" / "console.log").read_text(encoding="utf-8")
    assert "successfully finished" not in console
    assert console.rstrip("\n").endswith(new[-1])
    for rel in heldout.rank_logs(tmp_path / "run").values():
        whole = len((BACKGROUND / rel).read_text(encoding="utf-8").splitlines())
        if rel.as_posix() != target:
            assert len((tmp_path / "run" / rel).read_text(encoding="utf-8").splitlines()) == int(whole * heldout.INSERT_AT)


def test_the_background_is_left_as_it_was(tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in BACKGROUND.rglob("*") if p.is_file()}
    heldout.bury(_case(tmp_path), BACKGROUND, tmp_path / "run", ending="died")
    assert {p: p.read_bytes() for p in BACKGROUND.rglob("*") if p.is_file()} == before


def test_unknown_is_right_only_where_the_logs_cannot_decide() -> None:
    decidable = heldout.Case("a", CASE, "p2p", None, None, True, [])
    undecidable = heldout.Case("b", CASE, "p2p", None, None, False, [])
    unknown = heldout.Prediction("unknown", 0.0)
    assert not heldout.is_right(decidable, unknown)
    assert heldout.is_right(undecidable, unknown)
    assert not heldout.is_right(undecidable, heldout.Prediction("none", 0.9))
    assert heldout.is_right(decidable, heldout.Prediction("p2p", 0.8))


def test_none_is_right_only_where_no_kept_line_says_anything_failed() -> None:
    silent = heldout.Case("c", CASE, "p2p", None, None, False, [], failure_line=False)
    undecidable = heldout.Case("b", CASE, "p2p", None, None, False, [])
    none = heldout.Prediction("none", 0.49)
    assert heldout.is_right(silent, none)
    assert heldout.is_right(silent, heldout.Prediction("unknown", 0.0))
    assert not heldout.is_right(silent, heldout.Prediction("hang", 0.9))
    assert not heldout.is_right(undecidable, none)
