"""Which GPU a hardware fault hit: its PCI bus id (what goes into the ticket and the RMA) and
its index on the node, found through NCCL's init line for the same bus id (`nvmlDev`, the index
`nvidia-smi` shows; else `cudaDev`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from analyzer.model import Event, EventKind


def gpu_of(roots: Iterable[Event], events: Iterable[Event]) -> tuple[str | None, int | None]:
    """(PCI bus id, GPU index) of the first root event that names a GPU (an Xid or an NVRM GPU
    line before a PCIe port's AER record, which names the port, not the GPU), else (None, None)."""
    named = [e for e in roots if isinstance(e.fields.get("pci"), str) and e.fields["pci"]]
    named.sort(key=lambda e: e.kind is not EventKind.XID and "xid" not in e.fields and "gpu_message" not in e.fields)
    root = named[0] if named else None
    events = list(events)
    if root is None:
        return _from_message_block(roots, events), None
    pci = str(root.fields["pci"])
    for e in events:
        if e.fields.get("bus_id") != pci:
            continue
        if root.host and e.host and e.host != root.host:
            continue  # the same bus id on another node is another GPU
        index = e.fields.get("nvml_dev", e.fields.get("cuda_dev"))
        if isinstance(index, int):
            return pci, index
    return pci, None


_PCI = re.compile(r"\b(?:PCI:)?([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.\d)?\b")
BLOCK_LINES = 3  # an NVRM message wrapped over lines names the GPU at most this many lines above


def _from_message_block(roots: Iterable[Event], events: list[Event]) -> str | None:
    """The PCI bus id an NVRM message wrapped over several lines names on an earlier line
    (`NVRM: The NVIDIA GPU 0000:b3:00.0` ... `NVRM: fallen off the bus`)."""
    for root in roots:
        if "NVRM" not in root.text or root.loc.line is None:
            continue
        line = root.loc.line
        near = [
            e
            for e in events
            if e.loc.file == root.loc.file and e.loc.line is not None and line - BLOCK_LINES <= e.loc.line <= line
        ]
        for e in sorted(near, key=lambda e: -(e.loc.line or 0)):
            m = _PCI.search(e.text) if "NVRM" in e.text else None
            if m:
                return f"{m.group(1)}:{m.group(2)}:{m.group(3)}".lower()
    return None
