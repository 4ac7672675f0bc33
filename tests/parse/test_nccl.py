"""NCCL grammar: real NCCL_DEBUG and ProcessGroupNCCL lines from public reports
(tests/fixtures/parse/nccl/*.source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.model import EventKind
from analyzer.parse.base import Region
from analyzer.parse.nccl import normalize_bus_id, parse_region, parse_text
from analyzer.parse.prefix import split_prefix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parse" / "nccl"


def _events(name: str) -> dict[int, dict[str, Any]]:
    result = parse_text((FIXTURES / name).read_text(encoding="utf-8"))
    return {e["line"]: e for e in result["events"]}


def test_version_and_driver() -> None:
    ev = _events("init.log")
    assert ev[2]["kind"] == "version" and ev[2]["driver_version"] == "11.7" and ev[2]["cuda_driver_version"] == 11070
    assert ev[3]["kind"] == "version" and (ev[3]["nccl_version"], ev[3]["cuda_version"]) == ("2.13.4", "11.7")
    assert (ev[10]["nccl_version"], ev[10]["host"], ev[10]["pid"]) == ("2.18.3", "host-2", 38610)


def test_init_lines_give_rank_device_and_bus_id() -> None:
    ev = _events("init.log")
    new = ev[6]
    assert (new["rank"], new["nranks"], new["cuda_dev"], new["nvml_dev"]) == (36, 64, 4, 4)
    assert new["bus_id"] == "0000:9b:00" and new["init"] == "COMPLETE" and new["nccl_level"] == "INFO"
    assert (new["host"], new["pid"]) == ("hostname-test", 984)
    old = ev[7]  # no nvmlDev / commId
    assert (old["rank"], old["cuda_dev"], old["bus_id"]) == (15, 7, "0000:e7:00")
    prefixed = ev[8]  # behind "host: "
    assert (prefixed["rank"], prefixed["bus_id"], prefixed["init"]) == (0, "0000:4f:00", "START")
    assert ev[9]["rank"] == 4 and ev[9]["bus_id"] == "0000:42:00"


def test_transports_and_channels() -> None:
    ev = _events("init.log")
    assert ev[4]["transport"] == "NET/IB" and ev[4]["net_devices"][0] == "[0]mlx5_0:1/IB"
    assert ev[5]["network"] == "IB"
    assert ev[11]["ring"] == [0, 1]
    assert (ev[12]["peer_from"], ev[12]["peer_to"], ev[12]["transport"]) == (0, 7, "P2P/CUMEM")
    assert ev[13]["transport"] == "NET/IB/9/GDRDMA/Shared" and ev[13]["direction"] == "send"
    assert ev[14]["transport"] == "P2P/IPC" and ev[14]["host"] == "z-pc"  # behind Ray's "(pid=N) "
    assert ev[15]["transport"] == "NET/Socket"


def test_warn_lines_with_source_location() -> None:
    ev = _events("warn.log")
    p2p = ev[1]
    assert (p2p["nccl_level"], p2p["src_file"], p2p["src_line"]) == ("WARN", "transport/p2p.cc", 238)
    assert "peer access is not supported" in p2p["message"]
    assert ev[2]["error_code"] == "ncclUnhandledCudaError" and ev[2]["result"] == 1
    shm = ev[5]
    assert (shm["shm_path"], shm["shm_size"], shm["error_code"]) == ("/dev/shm/nccl-fjwOOB", 5967872, "ncclSystemError")
    assert ev[4]["shm_op"] == "extend" and ev[4]["shm_size"] == 5967876
    assert ev[7]["error_code"] == "ncclSystemError" and ev[7]["src_file"] == "group.cc"
    assert ev[8]["cuda_error"] == "invalid argument" and ev[8]["cuda_dev"] == 1
    ib = ev[9]
    assert (ib["ib_status"], ib["ib_vendor_err"], ib["ib_peer"]) == (12, 129, "10.216.210.236<54862>")
    assert ev[10]["error_code"] == "ncclRemoteError"
    assert (ev[11]["ib_status"], ev[11]["ib_vendor_err"]) == (4, 81)


def test_pytorch_nccl_errors() -> None:
    ev = _events("warn.log")
    err = ev[3]
    assert err["error_code"] == "ncclUnhandledCudaError" and err["nccl_version"] == "2.7.8"
    assert err["src_file"].endswith("ProcessGroupNCCL.cpp") and err["src_line"] == 784
    asynchronous = ev[12]
    assert asynchronous["kind"] == "watchdog" and asynchronous["error_code"] == "ncclSystemError"
    assert (asynchronous["seq_num"], asynchronous["nccl_version"]) == (2, "2.25.1")
    assert ev[13]["error_code"] == "ncclSystemError"
    assert ev[14]["last_error"] == ""  # the next line of the report is empty


def test_watchdog_timeouts() -> None:
    ev = _events("watchdog.log")
    new = ev[1]
    assert new["kind"] == "watchdog" and new["rank"] == 0 and new["watchdog"] == "timeout"
    assert (new["seq_num"], new["op_type"], new["timeout_ms"], new["ran_for_ms"]) == (1580, "ALLREDUCE", 600000, 600060)
    assert new["numel_in"] == 466119168
    old = ev[3]
    assert (old["rank"], old["seq_num"], old["timeout_ms"]) == (1, 469508, 1800000) and "numel_in" not in old
    last = ev[4]
    assert (last["rank"], last["pg_id"], last["pg_name"], last["seq_num"]) == (1, 0, "default_pg", 808)
    assert (last["last_enqueued"], last["last_completed"]) == (811, 807)
    assert ev[2]["pg_id"] == 1 and ev[2]["last_completed"] == 7752
    assert ev[5]["watchdog"] == "heartbeat" and ev[5]["rank"] == 144
    assert ev[6]["watchdog"] == "stuck" and ev[6]["stuck_s"] == 600
    assert ev[7]["rank"] == 7 and ev[7]["op_type"] == "BROADCAST"


def test_parse_region_last_error_takes_the_next_line() -> None:
    region = Region(
        "rank0.log", 40, ("Last error:", "Error while creating shared memory segment /dev/shm/x"), "nccl", source_rank=3
    )
    (event,) = parse_region(region)
    assert event.kind == EventKind.NCCL and event.rank == 3 and event.loc.line == 40
    assert event.fields["last_error"].startswith("Error while creating shared memory segment")


@pytest.mark.parametrize(
    "raw,expected",
    [("3b000", "0000:3b:00"), ("30", "0000:00:03"), ("1000", "0000:01:00"), ("0000:3B:00.0", "0000:3b:00"), ("zz", None)],
)
def test_bus_id_joins_with_kernel_pci_ids(raw: str, expected: str | None) -> None:
    assert normalize_bus_id(raw) == expected


@pytest.mark.parametrize(
    "line",
    [
        "",
        "NCCL INFO",
        "host:1:2 [0] NCCL WARN",
        "host:1:2 [0] NCCL INFO comm 0xzz rank x nranks",
        "host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> ",
        "NCCL version",
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=, OpType=) ran for x",
        "NCCL error in: ",
        "\x00\xff NCCL INFO \ufffd" * 50,
        "NCCL INFO " + "x" * (1 << 20),
        "NCCL WARN " + "(" * 100_000,
    ],
)
def test_garbage_never_raises(line: str) -> None:
    parse_text(line)
    (event,) = parse_region(Region("f", 1, (line,), "nccl"))
    assert event.kind in (EventKind.NCCL, EventKind.WATCHDOG, EventKind.VERSION)


def test_warn_line_with_the_function_of_nccl_2_30() -> None:
    """NCCL 2.30's debug.cc writes `file:line (function) NCCL WARN`; the prefix still parses."""
    line = "node1:3245:3301 [1] misc/socket.cc:538 (socketProgressOpt) NCCL WARN socketProgressOpt: Call to recv from 10.0.0.3<36721> failed : Connection reset by peer"
    (ev,) = parse_text(line)["events"]
    assert (ev["host"], ev["pid"], ev["nccl_level"], ev["src_file"], ev["src_line"]) == (
        "node1",
        3245,
        "WARN",
        "misc/socket.cc",
        538,
    )
    assert not ev.get("unparsed")


def _nccl_lines() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    lines: list[str] = []
    for base in (root / "corpora", root / "tests" / "fixtures"):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in (".log", ".txt", ".out", ".err", ""):
                try:
                    text = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                lines.extend(line for line in text.splitlines() if "NCCL " in line)
    return lines


def test_the_quick_reading_of_plain_lines_is_the_grammars() -> None:
    """Every corpus and fixture line that the quick path reads gets what the grammar gives."""
    from analyzer.parse import nccl

    quick = 0
    for line in _nccl_lines():
        message = split_prefix(line.strip()).message.strip()
        fast = nccl._quick(message)
        if fast is None:
            continue
        quick += 1
        assert fast == nccl._TRANSFORMER.transform(nccl._parser("nccl_line").parse(message)), line
    assert quick > 500  # most of the corpora's NCCL_DEBUG lines are of these shapes (627 of 902)
    # and a changed head on the same body keeps the head's own fields
    a = nccl._quick("gpu-a:11:12 [0] NCCL INFO Using network IB")
    b = nccl._quick("gpu-b:21:22 [3] NCCL INFO Using network IB")
    assert a is not None and b is not None
    assert (a[1]["nccl_host"], a[1]["cuda_dev"], b[1]["nccl_host"], b[1]["cuda_dev"]) == ("gpu-a", 0, "gpu-b", 3)
    head = {"nccl_host", "nccl_pid", "nccl_tid", "cuda_dev"}
    assert {k: v for k, v in a[1].items() if k not in head} == {k: v for k, v in b[1].items() if k not in head}
