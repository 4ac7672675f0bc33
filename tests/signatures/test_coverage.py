"""`signatures coverage`: the emitter catalogs load, every decidable message is named with its
category, no healthy line names a root cause, and a wrong or missed message is reported as such."""

from __future__ import annotations

from pathlib import Path

from analyzer.signatures.coverage import Message, evaluate, load_catalog, measure, summary
from analyzer.signatures.loader import Problem, load_all

SIGS, _ = load_all()


def _msg(category: str, line: str, role: str = "root_cause") -> Message:
    return Message("test", "m", "f.c", ("1",), category, role, (line,), "x.yaml:1")


def test_shipped_catalogs_are_fully_covered() -> None:
    results, problems = measure()
    assert problems == []
    s = summary(results)
    assert {"nccl", "cuda-runtime", "cuda-driver", "nvidia-driver", "linux", "slurm"} <= set(s["emitters"])
    assert {"deepspeed", "accelerate", "lightning", "transformers"} <= set(s["emitters"])
    assert s["totals"]["wrong"] == 0
    assert s["totals"]["missed"] == 0
    assert s["totals"]["benign"] >= 5


def test_framework_failures_are_named_and_their_healthy_lines_are_not() -> None:
    """DeepSpeed, Lightning and transformers lines: a checkpoint that cannot be loaded is storage,
    an fp16 scale stuck at its minimum is a NaN, and the warnings healthy jobs print name nothing."""
    results, _ = measure()
    status = {(r.message.emitter, r.message.id): r.status for r in results}
    assert status["deepspeed", "checkpoint_dp_world_size_changed"] == "covered"
    assert status["deepspeed", "overflow_at_min_scale"] == "covered"
    assert status["deepspeed", "op_builder_cuda_mismatch_skipped"] == "benign"
    assert status["deepspeed", "zero3_allocator_cache_flushes"] == "benign"
    assert status["transformers", "no_weights_file_in_directory"] == "covered"
    assert status["lightning", "early_stopping_not_finite"] == "covered"
    assert status["accelerate", "old_kernel_warning"] == "benign"


def test_statuses() -> None:
    nccl_oom = "node1:3245:3301 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'"
    assert evaluate(_msg("oom_cascade", nccl_oom), SIGS).status == "covered"
    assert evaluate(_msg("network", nccl_oom), SIGS).status == "wrong"
    assert evaluate(_msg("network", "a line no signature knows"), SIGS).status == "missed"
    assert evaluate(_msg("none", "node1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read"), SIGS).status == "benign"
    assert evaluate(_msg("none", nccl_oom), SIGS).status == "wrong"
    assert evaluate(_msg("unknown", "a line no signature knows"), SIGS).status == "unrecognised"
    timeout = "[rank1]:[E626 06:24:44.925443925 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=190, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600004 milliseconds before timing out."
    assert evaluate(_msg("hang", timeout, role="symptom"), SIGS).status == "covered"


def test_catalog_problems_have_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("emitter: x\nmessages:\n  - id: a\n    category: nonsense\n    lines: [l]\n  - id: b\n    category: shm\n")
    problems: list[Problem] = []
    assert load_catalog(path, "emitters/x.yaml", ["shm"], problems) == []
    assert [str(p) for p in problems] == [
        "emitters/x.yaml:3: catalog: message 'a': category 'nonsense' is not a category, `none` or `unknown`",
        "emitters/x.yaml:6: catalog: a message needs an `id` and `lines`",
    ]
