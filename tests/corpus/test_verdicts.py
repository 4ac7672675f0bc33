"""`signatures verdicts`: each emitter catalog line analysed alone, as a user would see it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import main
from analyzer.corpus.verdicts import measure, status
from analyzer.paths import signatures_dir
from analyzer.signatures.coverage import Message


def _msg(category: str, role: str = "root_cause") -> Message:
    return Message("test", "m", "f.c", ("1",), category, role, ("x",), "x.yaml:1")


def test_statuses_by_category_and_role() -> None:
    assert status(_msg("none"), "none") == "benign"
    assert status(_msg("none"), "hang") == "invented"
    assert status(_msg("unknown"), "unknown") == "recognised"
    assert status(_msg("unknown"), "user_code") == "claimed"
    assert status(_msg("unknown"), "none") == "missed"
    assert status(_msg("shm"), "shm") == "named"
    assert status(_msg("shm"), "storage") == "other"
    assert status(_msg("shm"), "unknown") == "abstained"
    assert status(_msg("hang", "symptom"), "unknown") == "alone"
    assert status(_msg("hang", "symptom"), "none") == "missed"


def test_a_small_catalog_through_the_cli(tmp_path: Path) -> None:
    root = tmp_path / "signatures"
    shutil.copytree(signatures_dir(), root)
    shutil.rmtree(root / "emitters")
    (root / "emitters").mkdir()
    (root / "emitters" / "t.yaml").write_text(
        "emitter: t\nmessages:\n"
        "  - id: oom\n    category: oom_cascade\n    lines: ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB']\n"
        "  - id: code\n    category: unknown\n"
        "    lines: ['CUDA error at train.cu:42 code=1(cudaErrorInvalidValue) \"cudaDeviceSynchronize()\"']\n"
        "  - id: healthy\n    category: none\n    lines: ['node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read']\n"
    )
    results, problems = measure(root)
    assert problems == []
    assert [(r.message.id, r.verdict, r.status) for r in results] == [
        ("oom", "oom_cascade", "named"),
        ("code", "unknown", "recognised"),
        ("healthy", "none", "benign"),
    ]
    out = CliRunner().invoke(main, ["signatures", "verdicts", "--dir", str(root), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["lines"] == 3 and data["counts"]["named"] == 1 and data["counts"]["missed"] == 0
