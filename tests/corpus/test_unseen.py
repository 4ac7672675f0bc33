"""`postmortem eval --unseen-wording` on a small corpus of real cases: each case is analyzed again
without the root-cause signatures of its own category, and the counts say what became of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from analyzer.classify.combine import CUE_CAP
from analyzer.cli import main
from analyzer.corpus.unseen import unseen_wording

from ..conftest import REPO

# an ENOSPC while saving, an undefined symbol in an extension, a healthy job (skipped: no failure)
CASES = ("real/real-bl-018", "lab/lab-version-mismatch-001", "healthy/lab-healthy-001")


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for case in CASES:
        shutil.copytree(REPO / "corpora" / case, root / case)
    return root


def test_each_case_is_analyzed_again_without_its_own_signatures(tmp_path: Path) -> None:
    result = unseen_wording(_corpus(tmp_path))
    assert [c.case for c in result.cases] == ["lab/lab-version-mismatch-001", "real/real-bl-018"]
    by_case = {c.case: c for c in result.cases}
    assert by_case["real/real-bl-018"].dropped == ["storage.enospc"]
    assert by_case["lab/lab-version-mismatch-001"].dropped == ["version_mismatch.undefined_symbol"]
    # the words of both lines still name their causes (cues): right, at a cue's capped confidence
    assert result.counts() == {"right": 2, "unknown": 0, "none": 0, "wrong": 0}
    assert all(c.confidence <= CUE_CAP for c in result.cases)
    assert result.errors == [] and result.skipped == 0


def test_the_cli_reports_the_counts(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["eval", str(_corpus(tmp_path)), "--unseen-wording", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["counts"]["right"] == 2 and data["named_precision"] == 1.0
    assert sorted(data["per_category"]) == ["storage", "version_mismatch"]
