"""Which GPU a hardware fault hit: its PCI bus id (what goes into the ticket and the RMA) and
its index on the node, found through NCCL's init line for the same bus id (`nvmlDev`, the index
`nvidia-smi` shows; else `cudaDev`)."""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.model import Event, EventKind


def gpu_of(roots: Iterable[Event], events: Iterable[Event]) -> tuple[str | None, int | None]:
    """(PCI bus id, GPU index) of the first root event that names a GPU (an Xid or an NVRM GPU
    line before a PCIe port's AER record, which names the port, not the GPU), else (None, None)."""
    named = [e for e in roots if isinstance(e.fields.get("pci"), str) and e.fields["pci"]]
    named.sort(key=lambda e: e.kind is not EventKind.XID and "xid" not in e.fields and "gpu_message" not in e.fields)
    root = named[0] if named else None
    if root is None:
        return None, None
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
