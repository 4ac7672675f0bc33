"""CUDA P2P samples' grammar: p2pBandwidthLatencyTest's matrices compared pair by pair, simpleP2P's
verification errors. Inputs are composed with the samples' own printf formats
(tests/fixtures/parse/cuda_p2p/*.source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.model import Event, EventKind
from analyzer.parse.base import Region, region_events
from analyzer.parse.cuda_p2p import PARSER, SLOW_RATIO, parse_region

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parse" / "cuda_p2p"


def _fixture(name: str) -> list[Event]:
    return region_events(PARSER, (FIXTURES / name).read_text(encoding="utf-8"), name)


def _matrix(header: str, m: list[list[float]]) -> str:
    """A bandwidth matrix as outputBandwidthMatrix prints it ("%6d " columns, "%6.02f " cells)."""
    out = header + "\n   D\\D" + "".join(f"{j:6d} " for j in range(len(m))) + "\n"
    return out + "".join(f"{i:6d} " + "".join(f"{v:6.2f} " for v in row) + "\n" for i, row in enumerate(m))


def _two_gpus(enabled: float, disabled: float, access: bool | None = True) -> str:
    """A 2-GPU run: both directions of the pair at these bandwidths; `access` None leaves out the
    access lines (an excerpt of the matrices alone)."""
    text = ""
    if access is not None:
        word = "CAN" if access else "CANNOT"
        text += f"Device=0 {word} Access Peer Device=1\nDevice=1 {word} Access Peer Device=0\n"
    text += _matrix("Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", [[671.82, disabled], [disabled, 673.15]])
    text += _matrix("Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", [[672.31, enabled], [enabled, 672.88]])
    return text


def _fields(text: str) -> dict[str, Any]:
    events = region_events(PARSER, text, "p2p.log")
    assert [e.kind for e in events] == [EventKind.P2P_TEST]
    return dict(events[0].fields)


def test_a_pair_whose_p2p_is_far_below_the_staged_copy_is_named() -> None:
    events = _fixture("bandwidth_acs.log")
    assert len(events) == 1  # one run of the sample, whatever number of matrix headers it prints
    e = events[0]
    assert (e.loc.line, e.end_line) == (36, 77)  # the enabled matrix's row of the worst pair; the whole output
    assert e.text == "     0 672.31   0.68  11.31  11.45 "
    f = e.fields
    assert (f["p2p_dev_a"], f["p2p_dev_b"], f["p2p_enabled_gbps"], f["p2p_disabled_gbps"]) == (0, 1, 0.68, 11.7)
    assert f["p2p_matrix"] == "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)"
    assert f["p2p_pairs"] == ["0-1", "1-0"] and f["p2p_slow_pairs"] == 2
    # 2<->3 work (25 GB/s against 11.6); the cross pairs cannot reach each other and are not compared
    assert f["p2p_pairs_checked"] == 4 and len(f["p2p_no_access"]) == 8 and f["p2p_complete"] is True
    assert f["p2p_gpus"] == 4 and f["p2p_ratio"] == pytest.approx(0.68 / 11.7, abs=1e-3)


def test_a_healthy_run_has_no_slow_pair() -> None:
    (e,) = _fixture("bandwidth_healthy.log")
    assert e.loc.line == 1 and e.message == "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]"
    assert (e.fields["p2p_slow_pairs"], e.fields["p2p_pairs_checked"], e.fields["p2p_complete"]) == (0, 12, True)
    assert "p2p_dev_a" not in e.fields
    assert len(e.fields["p2p_matrices"]) == 7  # connectivity, four bandwidth, two latency matrices


def test_a_run_cut_short_in_the_enabled_matrix_says_nothing() -> None:
    (e,) = _fixture("bandwidth_truncated.log")
    assert (e.fields["p2p_slow_pairs"], e.fields["p2p_pairs_checked"], e.fields["p2p_complete"]) == (0, 0, False)


@pytest.mark.parametrize(("ratio", "slow"), [(SLOW_RATIO - 0.01, 1), (SLOW_RATIO, 0), (1.2, 0)])
def test_the_threshold(ratio: float, slow: int) -> None:
    f = _fields(_two_gpus(round(20.0 * ratio, 2), 20.0))
    assert f["p2p_slow_pairs"] == (2 * slow) and f["p2p_pairs_checked"] == 2


def test_pairs_without_known_access_are_not_compared() -> None:
    # P2P=Enabled falls back to the staged copy where the pair has no P2P: nothing is broken there
    assert _fields(_two_gpus(0.68, 11.7, access=False))["p2p_slow_pairs"] == 0
    # the matrices alone do not say whether the pair had P2P
    assert _fields(_two_gpus(0.68, 11.7, access=None))["p2p_pairs_checked"] == 0


def test_the_connectivity_matrix_gives_access() -> None:
    text = "P2P Connectivity Matrix\n     D\\D     0     1\n     0\t     1     1\n     1\t     1     1\n"
    assert _fields(text + _two_gpus(0.68, 11.7, access=None))["p2p_slow_pairs"] == 2


def test_a_value_cut_short_is_not_compared() -> None:
    text = _two_gpus(20.0, 11.7).rstrip("\n").rsplit("\n", 1)[0] + "\n     1   0.7\n"  # row 1 cut inside a value
    f = _fields(text)
    assert f["p2p_pairs_checked"] == 1 and f["p2p_slow_pairs"] == 0


def test_prefixed_lines_and_the_end_of_the_output() -> None:
    body = _two_gpus(0.68, 11.7)
    text = "".join(f"[default0]:{line}\n" for line in body.splitlines()) + "[default0]:epoch 0 step 1 loss 2.31\n"
    (e,) = region_events(PARSER, text, "train.log")
    assert e.fields["p2p_slow_pairs"] == 2 and e.rank == 0
    assert e.text.startswith("[default0]:") and e.message == "0 672.31   0.68"
    assert e.end_line == len(body.splitlines())  # the training line after the output is not part of it


def test_a_cuda_failure_ends_the_run() -> None:
    text = "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n" + (
        "Cuda failure p2pBandwidthLatencyTest.cu:189: 'mapping of buffer object failed'\nnext line\n"
    )
    (e,) = region_events(PARSER, text, "p2p.log")
    assert e.fields["p2p_cuda_failure"].endswith("'mapping of buffer object failed'") and e.end_line == 2


def test_simple_p2p_verification_errors() -> None:
    (e,) = _fixture("simple_p2p_failed.log")
    assert e.loc.line == 16 and e.message == "Verification error @ element 1: val = 0.000000, ref = 4.000000"
    assert dict(e.fields) == {"p2p_sample": "simpleP2P", "p2p_verification_errors": 12, "p2p_result": "failed"}
    (ok,) = _fixture("simple_p2p_passed.log")
    assert dict(ok.fields) == {"p2p_sample": "simpleP2P", "p2p_verification_errors": 0, "p2p_result": "passed"}


def test_a_lone_verification_error_line() -> None:
    (e,) = region_events(PARSER, "Verification error @ element 7: val = 0.000000, ref = 28.000000\n", "p2p.log")
    assert e.fields["p2p_verification_errors"] == 1 and "p2p_result" not in e.fields


def test_a_region_of_nothing_it_knows_is_kept_unparsed() -> None:
    (e,) = parse_region(Region("x.log", 3, ("P2P Connectivity Matrix", "     D\\D  oops"), "cuda_p2p"))
    assert e.kind is EventKind.P2P_TEST and e.end_line == 3  # the header alone: the odd line ends the output
    (u,) = parse_region(Region("x.log", 3, ("something else",), "cuda_p2p"))
    assert u.kind is EventKind.UNPARSED
