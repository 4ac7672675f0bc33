"""PyTorch's distributed failure messages, as its releases print them, through the whole analysis.

Each log holds lines in the formats of torch's own sources (ProcessGroupNCCL/NCCLUtils, the gloo
bundled with ProcessGroupGloo, the c10d store's socket, the DataLoader), with the healthy lines a
job writes around them; ranks, hosts, ports and pids are placeholders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.pipeline import analyze

from ..conftest import traceback_of, write_run


def _traceback(exc_line: str) -> str:
    return traceback_of(exc_line, "dist.init_process_group('nccl')")


NCCL_INIT = "node1:3331:3391 [{r}] NCCL INFO comm 0x8b6d9c0 rank {r} nranks 2 cudaDev {r} busId 1000 - Init COMPLETE\n"


CASES = {
    # socket.cpp 1.13-2.3, and the libuv store of 2.4+: MASTER_PORT taken on the master host
    "store_port_in_use_1x": (
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
        "failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind "
        "to 0.0.0.0:29500 (errno: 98 - Address already in use).",
        "network",
        "network.tcpstore_listen_failed",
    ),
    "store_port_in_use_libuv": (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
        "network",
        "network.tcpstore_listen_failed",
    ),
    # dataloader.py: the file_descriptor sharing strategy ran out of descriptors
    "dataloader_fds": (
        "RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase "
        "the limit using `ulimit -n` in the shell or change the sharing strategy by calling "
        "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code",
        "shm",
        "shm.dataloader_too_many_open_files",
    ),
    # NCCLUtils: ncclInvalidUsage as 2.2+ prints it
    "nccl_invalid_usage": (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
        "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3",
        "user_code",
        "user_code.nccl_invalid_usage_status",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_c10d_failure_names_its_cause(tmp_path: Path, name: str) -> None:
    exc_line, category, signature = CASES[name]
    run = write_run(tmp_path, {"rank0.log": NCCL_INIT.format(r=0) + _traceback(exc_line)})
    report = analyze(run)
    assert report.verdict.category.value == category
    assert signature in report.verdict.signatures
    roots = [e for e in report.evidence if e.role.value == "root_cause"]
    assert roots and roots[0].text == exc_line


def test_heartbeat_monitor_of_2_2_is_a_hang(tmp_path: Path) -> None:
    line = "[E ProcessGroupNCCL.cpp:1153] [Rank 1] monitoring thread detects no heartbeat and will finally kill the process!"
    run = write_run(tmp_path, {"rank1.log": NCCL_INIT.format(r=1) + "step 10 loss 2.31\n" + line + "\n"})
    report = analyze(run)
    assert report.verdict.category.value == "hang"
    assert "hang.nccl_heartbeat_monitor" in report.verdict.signatures


def test_gloo_read_timeouts_on_every_rank_are_a_hang(tmp_path: Path) -> None:
    logs = {
        f"rank{r}.log": "step 10 loss 2.31\n"
        + _traceback(f"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:520] Read timeout [10.0.0.{r + 2}]:52834")
        for r in range(2)
    }
    report = analyze(write_run(tmp_path, logs))
    assert report.verdict.category.value == "hang"
    assert "hang.gloo_timeout" in report.verdict.signatures


def test_a_bind_warning_before_a_successful_listen_is_no_failure(tmp_path: Path) -> None:
    # socket.cpp warns for one address family and goes on with the other; the job then finishes
    log = (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).\n"
        "[I socket.cpp:442] [c10d] The server socket has started to listen on 0.0.0.0:29500.\n"
        + NCCL_INIT.format(r=0)
        + "step 100 loss 0.12\ntraining finished\n"
    )
    report = analyze(write_run(tmp_path, {"rank0.log": log}))
    assert report.verdict.category.value == "none"
    assert "network.tcpstore_listen_failed" not in report.verdict.signatures


def test_a_store_socket_errno_is_network_evidence_not_a_program_error(tmp_path: Path) -> None:
    # c10d's SYSCHECK raises strerror(errno) alone: the store's peer went away, the program did nothing wrong
    run = write_run(tmp_path, {"rank1.log": NCCL_INIT.format(r=1) + _traceback("RuntimeError: Broken pipe")})
    report = analyze(run)
    assert report.verdict.category.value != "user_code"
    assert "network.store_connection_closed" in {e.signature for e in report.evidence}
