"""The terminal report: the answer on the first screen, the terminal's width, collapsed details,
everything with --verbose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.model import EvidenceItem, Report, Role, TimelineEntry
from analyzer.pipeline import analyze
from analyzer.report import render

from ..conftest import REPO
from ..test_cascade_64 import make_run

EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if p.is_dir())
TEE_4_RANKS = REPO / "corpora" / "lab" / "lab-oom-cascade-004"  # torchrun --tee, 2 nodes x 2, host OOM kill of rank 3
TEE_4_NODES = REPO / "corpora" / "lab" / "lab-oom-cascade-007"  # torchrun --tee, 4 nodes x 2, OOM kill of rank 5 (local 1)


@pytest.fixture(scope="module")
def cascade64(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return analyze(make_run(tmp_path_factory.mktemp("c64") / "run"))


def test_64_rank_cascade_fits_in_70_lines_at_100_columns(cascade64: Report) -> None:
    text = render(cascade64, "text", width=100)
    lines = text.splitlines()
    assert len(lines) <= 70, len(lines)
    assert max(len(line) for line in lines) <= 100
    head = "\n".join(lines[:15])
    assert "rank 27 on node3" in head
    assert "oom-kill:constraint=CONSTRAINT_NONE" in head  # the decisive line, verbatim
    assert "ranks 0-26,28-63" in head  # what followed, ranks as ranges


@pytest.mark.parametrize("case", [*EXAMPLES, TEE_4_RANKS], ids=lambda p: p.name)
def test_no_line_wider_than_80_columns(case: Path) -> None:
    for verbose in (False, True):
        text = render(analyze(case), "text", width=80, verbose=verbose)
        widest = max(text.splitlines(), key=len)
        assert len(widest) <= 80, widest


def test_the_64_rank_cascade_at_80_columns(cascade64: Report) -> None:
    lines = render(cascade64, "text", width=80).splitlines()
    assert max(len(line) for line in lines) <= 80


def test_torchrun_tee_oom_first_15_lines_hold_the_oom_and_the_global_rank() -> None:
    head = render(analyze(TEE_4_RANKS), "text", width=100).splitlines()[:15]
    text = "\n".join(head)
    assert "oom-killer" in text or "Out of memory" in text
    assert "rank 3 on labnode2" in text


def test_four_node_tee_oom_first_15_lines_hold_the_oom_the_global_rank_and_its_host() -> None:
    head = "\n".join(render(analyze(TEE_4_NODES), "text", width=100).splitlines()[:15])
    assert "invoked oom-killer" in head
    assert "rank 5 on labnode3" in head  # the global rank; its console prefix says [default1]
    assert "before" in head and "after" in head  # symptoms placed in time around the failure


def test_first_screen_order(cascade64: Report) -> None:
    text = render(cascade64, "text", width=100)
    order = [text.index(s) for s in ("Decisive line", "First failure", "What followed", "What to do", "Details")]
    assert order == sorted(order)


def test_verbose_shows_every_evidence_line_and_timeline_event(cascade64: Report) -> None:
    short = render(cascade64, "text", width=100)
    full = render(cascade64, "text", width=100, verbose=True)
    assert "… 1 more line" in short and "… 1 more line" not in full
    for e in cascade64.evidence:
        assert e.text[:60] in full.replace("\n", "") or e.file in full
    assert full.count("Watchdog caught") >= 3


def test_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "132")
    text = render(analyze(EXAMPLES[0]), "text")
    assert max(len(line) for line in text.splitlines()) == 132  # the panel spans the terminal


def test_long_paths_are_shortened_in_the_middle(cascade64: Report) -> None:
    from dataclasses import replace

    deep = "cluster/a/very/long/path/that/goes/on/and/on/and/on/node3/attempt_0/27/stderr.log"
    ev = [replace(e, file=deep) for e in cascade64.evidence]
    text = render(replace(cascade64, evidence=tuple(ev)), "text", width=80)
    rows = [line for line in text.splitlines() if line.startswith("    ") and "stderr.log" in line]
    assert rows and all(line.lstrip().startswith("clus") for line in rows)


def test_root_cause_without_time_is_on_the_timeline_among_many_earlier_events(cascade64: Report) -> None:
    from dataclasses import replace

    noise = tuple(
        TimelineEntry(1719000000.0 + i, "node3", None, "aer_corrected", "corrected PCIe error", "node3/dmesg.log", 100 + i)
        for i in range(300)
    )
    v = cascade64.verdict
    untimed = replace(v, first_failure=replace(v.first_failure, time=None, file="node3/console.log", line=7))
    root = EvidenceItem(
        "node3/console.log", 7, "torch.OutOfMemoryError: CUDA out of memory.", "x", Role.ROOT_CAUSE, 27, "node3", None
    )
    report = replace(cascade64, verdict=untimed, evidence=(root, *cascade64.evidence), timeline=noise + cascade64.timeline)
    text = render(report, "text", width=100)
    assert len(text.splitlines()) <= 70
    timeline = text[text.index("Timeline") :]
    assert re.search(r"30\d earlier events from 2024-06-21 20:00:00", timeline) and "corrected PCIe error ×300" in timeline
    assert re.search(r"▶ ≈ 2024-06-26 06:24:44", timeline)  # placed just before the first symptom, marked approximate
    assert "rank 27 on node3, ≈ 2024-06-26 06:24:44" in text


def test_plain_wording_and_no_none() -> None:
    """The report's own words: a quoted log line (after its file:line) may say what it says."""
    for case in EXAMPLES:
        text = render(analyze(case), "text", width=100, verbose=True)
        own = "\n".join(line for line in text.splitlines() if not re.search(r"\S\.\w+:\d+ ", line))
        assert "None" not in own
        assert "(s)" not in own


def test_cli_verbose_and_width() -> None:
    result = CliRunner().invoke(main, ["analyze", str(EXAMPLES[0]), "--width", "90", "--verbose"])
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) == 90
    assert "Explanation" in result.stdout


def test_a_rank_no_line_names_is_said_to_be_inferred(cascade64: Report) -> None:
    report = analyze(REPO / "examples" / "shm-bus-error")  # one process, no rank in any line
    ff = report.verdict.first_failure
    assert (ff.rank, ff.rank_note) == (0, "the job was one process: no line names a rank")
    assert "rank 0 (the job was one process: no line names a rank)" in render(report, "text", width=100)
    assert cascade64.verdict.first_failure.rank_note is None  # rank 27 is named by its lines
