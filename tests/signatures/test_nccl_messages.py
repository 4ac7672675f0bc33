"""NCCL's own failure lines, as its source prints them at each format era (`emitters/nccl.yaml`):
each names the signature and summary derived from its format string, and the WARN/INFO lines a
healthy job writes name none."""

from __future__ import annotations

import pytest

from analyzer.events.ingest import build_scanner, events_from_text
from analyzer.model import Finding
from analyzer.signatures.loader import line_patterns, load_all
from analyzer.signatures.matcher import _Safe, find

SIGS, _ = load_all()
SCANNER = build_scanner(line_patterns(SIGS))

H = "node1:3245:3301 [0] "


def _findings(line: str) -> list[Finding]:
    return find(SIGS, events_from_text(line, SCANNER))


@pytest.mark.parametrize(
    ("line", "signature", "summary"),
    [
        (
            H + "misc/socket.cc:414 NCCL WARN socketTryAccept: Accept failed: Too many open files",
            "network.nccl_socket_gave_up",
            "NCCL gave up on a socket connection: Accept failed: Too many open files",
        ),
        (
            H + "os/linux.cc:328 (ncclOsSocketPollConnect) NCCL WARN ncclOsSocketPollConnect to 10.1.1.2<45671> "
            "failed with error Connection refused",
            "network.nccl_connect_failed",
            ("10.1.1.2<45671>", "Connection refused"),
        ),
        (
            H + "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.1.1.2<45671> returned "
            "113(No route to host) errno 115(Operation now in progress)",
            "network.nccl_connect_failed",
            ("10.1.1.2<45671>", "No route to host"),
        ),
        (
            H + "include/socket.h:339 NCCL WARN Net : error encountered when getting address info : Name or service not known",
            "network.nccl_address_unresolved",
            "NCCL could not resolve an address: Name or service not known",
        ),
        (
            H + "bootstrap.cc:513 NCCL WARN no device found matching =eth9, verify NCCL_OOB_NET_IFNAME",
            "network.nccl_no_interface",
            "NCCL found no usable network interface",
        ),
        (
            H + "transport/net_ib/p2p.cc:854 (ncclIbTest) NCCL WARN NET/IB: Got CQE with error (devIndex=0, "
            "req=0x7f2c4c01a0e0, comm=0x7f2c4c000f80 (send), wr_id=140, qp_num=4712)",
            "network.ib_fatal_completion",
            "InfiniBand completion error NCCL cannot recover from (Got CQE with error)",
        ),
        (
            H + "transport/net_ib/common.cc:140 (ncclIbAsyncThreadMain) NCCL WARN NET/IB : mlx5_0:1 async fatal "
            "event on QP (0x55d0c4b0) qpn=4712 handle=7 send_cq=3 recv_cq=3 state=6 sq_psn=0 rq_psn=0: "
            "local work queue catastrophic error",
            "network.ib_async_event",
            ("mlx5_0:1", "local work queue catastrophic error"),
        ),
        (
            H + "transport/net_ib/common.cc:179 (ncclIbAsyncThreadMain) NCCL WARN NET/IB : mlx5_0:1 Got non-fatal "
            "async event: port error(10)",
            "network.ib_async_event",
            ("mlx5_0:1", "port error"),
        ),
        (
            H + "transport/net_ib.cc:1021 NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<44206> collective "
            "mismatch error, local size 4194304 remote size 2097152",
            "hang.nccl_ib_collective_mismatch",
            "ranks posted collectives of different sizes: 4194304 bytes here, 2097152 at the peer",
        ),
        (
            H + "os/linux_ipcsocket.cc:233 (ncclIpcSocketSendMsg) NCCL WARN UDS: Sending data over socket "
            "/tmp/nccl-socket-1-8f2a61c94b7d0e13 failed : Connection refused (111)",
            "p2p.nccl_ipc_socket_failed",
            "NCCL's IPC socket failed: Sending data over socket /tmp/nccl-socket-1-8f2a61c94b7d0e13 failed : "
            "Connection refused (111)",
        ),
        (
            H + "transport/nvls.cc:376 (nvlsGroupBindMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast "
            "memory of size 1073741824 : CUDA error 1 'invalid argument'.",
            "p2p.nccl_nvls_bind_failed",
            "NVLS multicast bind of 1073741824 bytes failed: CUDA error 1 'invalid argument'",
        ),
        (
            H + "bootstrap.cc:230 NCCL WARN [Rem Allocator] cudaIpcGetMemHandle failed : invalid argument",
            "p2p.cuda_ipc_handle_open_failed",
            "NCCL could not open a peer GPU's CUDA IPC handle: invalid argument",
        ),
        (
            H + "bootstrap.cc:348 (bootstrapRoot) NCCL WARN Bootstrap Root : rank 3 of 8 ranks has already checked in",
            "user_code.nccl_bootstrap_rank_mismatch",
            "NCCL's bootstrap root: rank 3 of 8 ranks has already checked in",
        ),
        (
            H + "misc/cudawrap.cc:216 NCCL WARN Failed to load CUDA missing symbol cuGetProcAddress",
            "version_mismatch.nccl_cuda_driver_too_old",
            "the CUDA driver is too old for this NCCL (missing symbol cuGetProcAddress)",
        ),
        (
            H + "include/alloc.h:178 (ncclCalloc) NCCL WARN Failed to malloc 8388608 bytes",
            "oom_cascade.nccl_host_alloc_failed",
            "NCCL could not allocate 8388608 bytes of host memory",
        ),
        (
            H + "enqueue.cc:262 NCCL WARN Error : mixing different streams within a group call is not supported.",
            "user_code.nccl_invalid_usage",
            "NCCL refused the call: mixing different streams within a group call is not supported",
        ),
    ],
)
def test_catalogued_line_names_its_signature(line: str, signature: str, summary: str | tuple[str, ...]) -> None:
    """`summary`: the whole summary, or (for a signature whose summary names groups of several
    alternatives) the values it must quote; the alternatives that did not match print nothing."""
    found = {f.signature: f.summary for f in _findings(line)}
    assert signature in found
    if isinstance(summary, str):
        assert found[signature] == summary
    else:
        assert all(part in found[signature] for part in summary), found[signature]
        assert "?" not in found[signature]


@pytest.mark.parametrize(
    "line",
    [
        H + "transport/net_ib/common.cc:179 (ncclIbAsyncThreadMain) NCCL WARN NET/IB : mlx5_0:1 Got non-fatal "
        "async event: port active(9)",
        H + "transport/net_ib/common.cc:153 (ncclIbAsyncThreadMain) NCCL WARN NET/IB : mlx5_0:1 GID table changed",
        H + "NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 : CUDA error 801 "
        "'operation not supported'. Proceeding without NVLS support.",
        H + "graph/search.cc:885 NCCL WARN Could not find a path for pattern 4, falling back to simple order",
        H + "graph/tuning.cc:195 NCCL WARN CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET",
        H + "graph/xml.cc:655 NCCL WARN No NVML device handle. Skipping nvlink detection.",
        H + "transport/shm.cc:425 NCCL WARN Ignoring SHM locality, must be 1 (sender side) or 2 (receiver side, default)",
        H + "NCCL INFO NET/IB: ncclIbResiliencyHandleCompletionError: The error is not fatal. Trying to continue...",
    ],
)
def test_benign_nccl_line_names_nothing(line: str) -> None:
    assert _findings(line) == []


def test_summary_placeholders_back_to_back_are_alternatives() -> None:
    assert _Safe().format("to {peer}{peer2}: {err}", peer2="10.1.1.2<45671>", err="refused") == "to 10.1.1.2<45671>: refused"
    # a value missing where no alternative has one still shows as unknown
    assert _Safe().format("to {peer}{peer2}: {err}") == "to ??: ?"
    assert _Safe().format("rank {rank} on {host}", rank=3) == "rank 3 on ?"
