"""Joins across files: NCCL versions that differ between hosts, and an Xid's PCI bus id tied to
the rank whose NCCL init line names that GPU. Lines are real (tests/fixtures/parse/nccl/
init.log.source, tests/fixtures/parse/dmesg/xid.log.source); hosts, pids and ranks changed."""

from __future__ import annotations

from pathlib import Path

from analyzer.model import Category
from analyzer.pipeline import analyze

BANNER = "{host}:{pid}:{pid} [0] NCCL INFO NCCL version {version}"
INIT = "{host}:{pid}:{tid} [{dev}] NCCL INFO comm 0x557fe785f7a0 rank {rank} nranks 16 cudaDev {dev} nvmlDev {dev} busId {bus} commId 0x5ae77eb5ea4ec1ee - Init COMPLETE"
XID = "[14370.687545] NVRM: Xid (PCI:0000:{bus}:00): 79, pid=38610, name=python, GPU has fallen off the bus."


def test_nccl_version_skew_names_the_ranks(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for node, version in ((0, "2.18.3+cuda12.2"), (1, "2.18.3+cuda12.2"), (2, "2.13.4+cuda11.7")):
        d = run / f"node{node}"
        d.mkdir(parents=True)
        lines = [
            BANNER.format(host=f"node{node}", pid=38610 + node, version=version),
            INIT.format(host=f"node{node}", pid=38610 + node, tid=38700, dev=0, rank=node * 8, bus="4f000"),
        ]
        (d / f"rank{node * 8}.log").write_text("\n".join(lines) + "\n")
    report = analyze(run)
    assert report.verdict.category is Category.VERSION_MISMATCH
    assert report.verdict.subcategory == "version_mismatch.nccl_skew"
    text = report.verdict.explanation
    assert "2.13.4" in text and "2.18.3" in text and "ranks 0,8" in text


def test_xid_bus_id_joins_the_rank(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "node1").mkdir(parents=True)
    inits = [
        INIT.format(host="node1", pid=500 + dev, tid=600 + dev, dev=dev, rank=8 + dev, bus=f"{bus}000")
        for dev, bus in enumerate(["1b", "3b", "5e", "86"])
    ]
    for dev, line in enumerate(inits):
        (run / "node1" / f"rank{8 + dev}.log").write_text(line + "\n")
    (run / "node1" / "dmesg.log").write_text(XID.format(bus="5e") + "\n")
    report = analyze(run)
    assert report.verdict.category is Category.HARDWARE_XID
    assert report.verdict.first_failure.rank == 10
    assert report.verdict.first_failure.file == "node1/dmesg.log"
    # the GPU for the ticket: its PCI bus id, and its index on the node from the same NCCL line
    assert (report.verdict.first_failure.pci_bus_id, report.verdict.first_failure.gpu_index) == ("0000:5e:00", 2)
    from analyzer.report import render

    text = render(report, "text", width=100)
    assert "GPU 2 (PCI 0000:5e:00)" in "\n".join(text.splitlines()[:12])
    assert "| GPU | GPU 2 (PCI 0000:5e:00) |" in render(report, "markdown")


def test_a_wrapped_nvrm_message_names_its_gpu() -> None:
    # examples/xid-fallen-off-bus: "NVRM: The NVIDIA GPU 0000:b3:00.0 / (PCI ID: 10de:26b5) ... / fallen off the bus"
    from ..conftest import REPO

    ff = analyze(REPO / "examples" / "xid-fallen-off-bus").verdict.first_failure
    assert (ff.pci_bus_id, ff.gpu_index) == ("0000:b3:00", None)
