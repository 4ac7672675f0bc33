"""Collectives that differ across the ranks of one communicator, from NCCL's COLL lines."""

from __future__ import annotations

from pathlib import Path

from analyzer.correlate.collectives import collective_mismatch_events
from analyzer.model import Event, EventKind, Location
from analyzer.pipeline import analyze

from ..conftest import write_run


def _coll(host: str, pid: int, dev: int, op: str, count: int, comm: str, nranks: int = 4, line: int = 1) -> Event:
    msg = (
        f"NCCL INFO {op}: opCount {count:x} sendbuff 0x7f5dd32b2100 recvbuff 0x7f5dd32b2100 count 1024 datatype 7 op 0"
        f" root 0 comm {comm} [nranks={nranks}] stream 0x55bef0208bd0"
    )
    return Event(
        EventKind.NCCL,
        Location("nccl.log", line),
        f"{host}:{pid}:{pid} [{dev}] {msg}",
        msg,
        host=host,
        pid=pid,
        fields={"cuda_dev": dev, "nccl_level": "INFO"},
    )


def _init(host: str, pid: int, comm: str, rank: int, comm_id: str, nranks: int = 4) -> Event:
    msg = f"NCCL INFO comm {comm} rank {rank} nranks {nranks} cudaDev {rank} nvmlDev {rank} busId 47000 commId {comm_id} - Init COMPLETE"
    fields = {
        "nccl_level": "INFO",
        "comm": comm,
        "rank": rank,
        "nranks": nranks,
        "comm_id": comm_id,
    }  # as the NCCL parser reads it
    return Event(EventKind.NCCL, Location("nccl.log", 1), msg, msg, rank=rank, host=host, pid=pid, fields=fields)


def test_the_same_collectives_on_every_rank_are_no_mismatch() -> None:
    events = [
        _coll("h", 100 + r, r, op, c, f"0x{r}a") for r in range(4) for c, op in enumerate(["AllReduce", "AllGather", "AllReduce"])
    ]
    assert collective_mismatch_events(events) == []


def test_a_rank_in_another_collective_at_the_same_opcount_is_named() -> None:
    events = [_coll("h", 100 + r, r, "AllReduce", c, f"0x{r}a") for r in (0, 1, 3) for c in (0x28C, 0x28D)]
    events += [_coll("h", 102, 2, "AllGather", c, "0x2a") for c in (0x28C, 0x28D)]
    (ev,) = collective_mismatch_events(events)
    assert ev.fields["collective_mismatch"] is True
    assert ev.fields["op_count"] == 0x28C and ev.fields["odd_operation"] == "AllGather"
    assert "AllGather on pid 102 (GPU 2) on h" in ev.message and "AllReduce on pid 100" in ev.message
    assert ev.pid == 102  # the event sits on the odd rank's line


def test_two_communicators_of_one_size_in_a_process_are_not_compared_without_their_ids() -> None:
    # each process has a TP and a DP group of 4: which of the other's comms is the same group is unknown
    events = []
    for r in range(4):
        events += [_coll("h", 100 + r, r, "AllReduce", 0, f"0x{r}a"), _coll("h", 100 + r, r, "AllGather", 0, f"0x{r}b")]
    assert collective_mismatch_events(events) == []


def test_comm_ids_tie_the_processes_comms_together() -> None:
    events = []
    for r in range(2):
        events += [_init("h", 100 + r, f"0x{r}a", r, "0xaaa", 2), _init("h", 100 + r, f"0x{r}b", r, "0xbbb", 2)]
        events += [_coll("h", 100 + r, r, "AllReduce", 0, f"0x{r}a", 2)]
        events += [_coll("h", 100 + r, r, "Broadcast" if r else "AllGather", 0, f"0x{r}b", 2)]
    (ev,) = collective_mismatch_events(events)
    assert "commId 0xbbb" in ev.message and "rank 0" in ev.message and "rank 1" in ev.message
    assert ev.fields["operations"] == ["AllGather", "Broadcast"] and ev.fields["odd_operation"] is None


def test_a_job_killed_in_mismatched_collectives_is_a_hang(tmp_path: Path) -> None:
    line = "{h}:{p}:{p} [{d}] NCCL INFO {op}: opCount {c:x} sendbuff 0x7f1 recvbuff 0x7f2 count 99 datatype 7 op 0 root 0 comm 0x{p}0 [nranks=2] stream 0x55b"
    nccl = "".join(
        line.format(h="n1", p=p, d=d, op=op, c=c) + "\n"
        for c in (7, 8)
        for p, d, op in ((11, 0, "AllReduce"), (12, 1, "AllGather"))
    )
    report = analyze(write_run(tmp_path, {"nccl.log": nccl, "train.log": "step 10 loss 2.0\nKilled by signal 15.\n"}))
    assert (report.verdict.category.value, report.verdict.subcategory) == ("hang", "hang.collective_mismatch")
    assert report.verdict.first_failure.file == "nccl.log"
