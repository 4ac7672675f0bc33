"""A job of 64 ranks on 8 hosts: the kernel OOM killer takes one rank, the 63 others time out on
the NCCL watchdog 10 minutes later. The verdict must be the OOM with that rank first, and the
timeouts its cascade, collapsed into one entry with the ranks as ranges.

The lines are real (NCCL init and watchdog lines from public reports, kernel OOM-killer lines
from a public report; see tests/fixtures/parse/*/*.source); only pids, hosts, ranks and bus ids
are changed to lay out 64 ranks.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.model import Category
from analyzer.pipeline import analyze

VICTIM = 27
NODES, GPUS = 8, 8

INIT = "node{n}:{pid}:{tid} [{dev}] NCCL INFO comm 0x557fe785f7a0 rank {rank} nranks 64 cudaDev {dev} nvmlDev {dev} busId {bus}000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE"
WATCHDOG = (
    "[rank{rank}]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for "
    "600020 milliseconds before timing out."
)
OOM = [
    "[Wed Jun 26 06:14:40 2024] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/init.scope,task=python,pid={pid},uid=0",
    "[Wed Jun 26 06:14:40 2024] Out of memory: Killed process {pid} (python) total-vm:26,184,840kB, anon-rss:153,700,88kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0",
]
BUSES = ["1b", "2d", "3f", "5b", "9b", "ab", "bd", "db"]


def pid_of(rank: int) -> int:
    return 40000 + rank


def make_run(root: Path) -> Path:
    for rank in range(NODES * GPUS):
        node, dev = divmod(rank, GPUS)
        d = root / f"node{node}"
        d.mkdir(parents=True, exist_ok=True)
        lines = [INIT.format(n=node, pid=pid_of(rank), tid=pid_of(rank) + 300, dev=dev, rank=rank, bus=BUSES[dev])]
        lines += [f"[rank{rank}]:step 1200 loss 2.{rank:02d}"] * 3
        if rank != VICTIM:
            lines.append(WATCHDOG.format(rank=rank))
        (d / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    victim_node = VICTIM // GPUS
    (root / f"node{victim_node}" / "dmesg.log").write_text("\n".join(line.format(pid=pid_of(VICTIM)) for line in OOM) + "\n")
    return root


def test_oom_on_one_rank_and_63_timeouts(tmp_path: Path) -> None:
    report = analyze(make_run(tmp_path / "run"))
    v = report.verdict
    assert v.category is Category.OOM_CASCADE
    assert v.subcategory == "oom_cascade.host_oom_kill"
    assert (v.first_failure.rank, v.first_failure.host) == (VICTIM, "node3")
    assert v.first_failure.file == "node3/dmesg.log"
    assert not any(s.startswith("hang.") for s in v.signatures)
    timeouts = [c for c in report.cascade if "timed out" in c.what or "Watchdog" in c.what or "watchdog" in c.what]
    assert len(timeouts) == 1
    assert timeouts[0].ranks == tuple(r for r in range(64) if r != VICTIM)
    assert "0-26,28-63" in timeouts[0].what
    assert timeouts[0].time is not None and v.first_failure.time is not None
    assert timeouts[0].time - v.first_failure.time == 604.903881913 or abs(timeouts[0].time - v.first_failure.time - 604.9) < 1


SUMMARY_ROW = [
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2024-06-26_06:16:40",
    "  host      : node0",
    "  rank      : {rank} (local_rank: {local})",
    "  exitcode  : -9 (pid: {pid})",
    "  error_file: <N/A>",
    "  traceback : Signal 9 (SIGKILL) received by PID {pid}",
]


def test_a_host_clock_two_minutes_off_is_estimated_and_corrected(tmp_path: Path) -> None:
    """node3's kernel says the OOM kill happened at 06:14:40; torchrun on node0 saw the same pid
    die at 06:16:40: node3's clock is 120 s behind, and its times are moved accordingly."""
    run = make_run(tmp_path / "run")
    row = "\n".join(SUMMARY_ROW).format(rank=VICTIM, local=VICTIM % GPUS, pid=pid_of(VICTIM))
    (run / "node0" / "launcher.log").write_text(row + "\n")
    report = analyze(run)
    assert any("node3" in w and "-120.0 s" in w for w in report.warnings)
    assert report.verdict.first_failure.rank == VICTIM
    from analyzer.events.clock import format_time

    assert format_time(report.verdict.first_failure.time) == "2024-06-26T06:16:40.000Z"
