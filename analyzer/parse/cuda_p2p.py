"""The CUDA samples that check GPU peer-to-peer (P2P) transfers: p2pBandwidthLatencyTest's
access lines and matrices, simpleP2P's check of the data a P2P copy carried.

When IOMMU translation or PCIe ACS sends peer traffic up to the root complex (or a PCIe path is
broken), P2P does not fail with a message: collectives hang, run slowly or carry wrong data. The
samples show it. Events (EventKind.P2P_TEST), one per run of a sample:

* p2pBandwidthLatencyTest: for every pair of GPUs that CAN access each other (the access lines
  or the connectivity matrix say 1), each P2P=Enabled bandwidth matrix is compared with the
  P2P=Disabled one of the same direction (uni- or bidirectional). `p2p_slow_pairs` counts the
  pairs whose P2P bandwidth is below SLOW_RATIO of the copy staged through host memory; the
  worst one is named (`p2p_dev_a`, `p2p_dev_b`, `p2p_matrix`, `p2p_enabled_gbps`,
  `p2p_disabled_gbps`, `p2p_ratio`) and the event sits on its row of the enabled matrix.
* simpleP2P: `p2p_verification_errors`, the "Verification error @ element" lines after the
  copies between its two GPUs (the event sits on the first), and `p2p_result` (failed / passed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lark import Token, Transformer, Tree
from lark.exceptions import LarkError

from analyzer.model import Event, EventKind, Location, SourceKind
from analyzer.parse._lark import load_parser
from analyzer.parse.base import GrammarParser, Region, Trigger, unparsed
from analyzer.parse.prefix import split_prefix

# a whole run of p2pBandwidthLatencyTest: 16 GPUs print about 480 lines (240 access lines, eight
# matrices of 18 lines, three latency matrices of 37)
BANDWIDTH_BLOCK = 700
# simpleP2P prints at most 12 verification errors (`if (error_count++ > 10) break;`), then
# "Disabling peer access...", "Shutting down..." and its verdict
SIMPLE_BLOCK = 16

TRIGGERS = (
    Trigger(r"\[P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test\]", block=BANDWIDTH_BLOCK),
    # an excerpt may begin at the access lines: the first one's block holds the rest of the output
    # (the later access lines still reach the signatures, each as a line of its own)
    Trigger(r"Device=\d+ (?:CAN|CANNOT) Access Peer Device=\d+", block=BANDWIDTH_BLOCK),
    Trigger(r"P2P Connectivity Matrix", block=BANDWIDTH_BLOCK),
    Trigger(r"P2P=Disabled [^\n]*Matrix \((?:GB/s|us)\)", block=BANDWIDTH_BLOCK),
    Trigger(r"P2P=Enabled [^\n]*Matrix \((?:GB/s|us)\)", block=BANDWIDTH_BLOCK),
    Trigger(r"Copy data back to host from GPU\d+ and verify results\.\.\.", block=SIMPLE_BLOCK),
    Trigger(r"Verification error @ element \d+: val = ", block=SIMPLE_BLOCK),
)

# P2P that works moves data between two GPUs at least as fast as a copy staged through host
# memory (P2P=Disabled), usually much faster. When IOMMU/ACS redirects peer traffic through the
# root complex, P2P becomes much slower than the staged copy or hangs (NCCL's troubleshooting
# guide, "PCI Access Control Services"). Platforms whose P2P is merely a little slower than the
# staged copy exist (some PCIe root complexes forward peer writes poorly), so only a P2P bandwidth
# below half of the staged one counts: far outside run-to-run noise, and well inside what a
# redirected or broken path shows (a few percent of the staged bandwidth, often under 1 GB/s).
SLOW_RATIO = 0.5

# the lines a sample's output is made of (after the line's prefixes): the block ends at the first other
_SHAPE = re.compile(
    r"^(?:\[P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test\]|Device: \d+, .*"
    r"|Device=\d+ (?:CAN|CANNOT) Access Peer Device=\d+"
    r"|(?:\*\*\*NOTE: In case a device|So you can see lesser Bandwidth|NOTE: The CUDA Samples are not meant).*"
    r"|P2P Connectivity Matrix|(?:Unidirectional |Bidirectional )?P2P=(?:Disabled|Enabled) .*Matrix \((?:GB/s|us)\)"
    r"|\s*(?:D\\D|GPU|CPU)(?:\s+\d+)+|\s*\d+(?:\s+(?:-?\d+(?:\.\d+)?|-?nan|-?inf))+"
    r"|Cuda failure .*|Copy data back to host from GPU\d+ and verify results\.\.\."
    r"|Verification error @ element \d+: val = .*|(?:Disabling peer access|Shutting down)\.\.\.|Test (?:failed!|passed)"
    r")?\s*$"
)
# a bandwidth is printed with "%6.02f": a value without its two decimals was cut short
_VALUE = re.compile(r"^-?\d+\.\d\d$")
_ACCESS = re.compile(r"Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)")


@dataclass(frozen=True, slots=True)
class _Row:
    index: int  # the line's index in the block
    device: int
    cells: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Table:
    columns: tuple[int, ...]
    rows: tuple[_Row, ...]

    def cell(self, i: int, j: int) -> tuple[float, int] | None:
        """Row i, column j as printed in full (every column of the row, two decimals), and its line."""
        if j not in self.columns:
            return None
        row = next((r for r in self.rows if r.device == i), None)
        if row is None or len(row.cells) != len(self.columns):
            return None
        text = row.cells[self.columns.index(j)]
        return (float(text), row.index) if _VALUE.match(text) else None


@dataclass(frozen=True, slots=True)
class _Matrix:
    header: str
    index: int
    tables: tuple[_Table, ...]


class _ToModel(Transformer[Token, object]):
    def start(self, items: list[object]) -> list[object]:
        return items

    def __default__(self, data: Token, children: list[Token], meta: object) -> tuple[str, int, str]:
        """A one-line item (banner, device, access, note, cuda_failure, verify, mismatch,
        simple_step, simple_result): its rule's name, its line's index and its text."""
        return str(data), children[0].line - 1 if children[0].line else 0, str(children[0])

    def connectivity(self, items: list[object]) -> _Matrix:
        return self.matrix(items)

    def matrix(self, items: list[object]) -> _Matrix:
        head = items[0]
        assert isinstance(head, Token)
        tables = tuple(i for i in items[1:] if isinstance(i, _Table))
        return _Matrix(str(head).strip(), (head.line or 1) - 1, tables)

    def table(self, items: list[object]) -> _Table:
        head = items[0]
        assert isinstance(head, Token)
        columns = tuple(int(c) for c in str(head).split()[1:])
        return _Table(columns, tuple(i for i in items[1:] if isinstance(i, _Row)))

    def row(self, items: list[Token]) -> _Row:
        parts = str(items[0]).split()
        return _Row((items[0].line or 1) - 1, int(parts[0]), tuple(parts[1:]))


def parse_lines(lines: list[str]) -> list[object] | None:
    """The items of a sample's output (its lines, prefixes stripped), or None if not understood."""
    try:
        tree: Tree[Token] = load_parser("cuda_p2p").parse("\n".join(lines) + "\n")
    except LarkError:
        return None
    result = _ToModel().transform(tree)
    assert isinstance(result, list)
    return result


def _body(region: Region) -> list[str]:
    """The region's lines of the sample's shape, prefixes stripped, up to the first other line
    (trailing blank lines dropped)."""
    body: list[str] = []
    for raw in region.lines:
        msg = split_prefix(raw).message.rstrip("\r")
        if not _SHAPE.match(msg):
            break
        body.append(msg)
        if msg.startswith("Cuda failure "):
            break  # the sample's cudaCheckError exits
    while body and not body[-1].strip():
        body.pop()
    return body


def _counterpart(header: str) -> str | None:
    """The P2P=Disabled matrix an enabled bandwidth matrix is measured against."""
    if "P2P=Enabled" not in header or not header.endswith("(GB/s)"):
        return None
    return "Bidirectional" if header.startswith("Bidirectional") else "Unidirectional"


def _disabled(matrices: list[_Matrix], direction: str) -> _Table | None:
    found = next((m for m in matrices if m.header.startswith(f"{direction} P2P=Disabled") and m.header.endswith("(GB/s)")), None)
    return found.tables[0] if found and found.tables else None


def _access(items: list[object], matrices: list[_Matrix]) -> dict[tuple[int, int], bool]:
    """Which pairs can reach each other, from the access lines and the connectivity matrix."""
    access: dict[tuple[int, int], bool] = {}
    for item in items:
        if isinstance(item, tuple) and item[0] == "access" and (m := _ACCESS.search(item[2])):
            access[(int(m.group(1)), int(m.group(3)))] = m.group(2) == "CAN"
    for matrix in matrices:
        if matrix.header == "P2P Connectivity Matrix" and matrix.tables:
            table = matrix.tables[0]
            for row in table.rows:
                if len(row.cells) == len(table.columns):
                    for j, cell in zip(table.columns, row.cells, strict=True):
                        if row.device != j and cell in ("0", "1"):
                            access.setdefault((row.device, j), cell == "1")
    return access


def _bandwidth_fields(items: list[object]) -> tuple[dict[str, object], int]:
    """The fields of a p2pBandwidthLatencyTest run, and the index of the line its event cites."""
    matrices = [i for i in items if isinstance(i, _Matrix)]
    access = _access(items, matrices)
    devices = {d for pair in access for d in pair}
    for m in matrices:
        for t in m.tables:
            devices.update(t.columns)
    slow: list[tuple[float, str, int, int, float, float, int]] = []
    checked: set[tuple[int, int]] = set()
    complete = False
    for m in matrices:
        direction = _counterpart(m.header)
        base = _disabled(matrices, direction) if direction else None
        if not m.tables or base is None:
            continue
        table = m.tables[0]
        complete = complete or all(table.cell(i, j) and base.cell(i, j) for i in table.columns for j in table.columns)
        for (i, j), can in sorted(access.items()):
            enabled, disabled = table.cell(i, j), base.cell(i, j)
            if not can or enabled is None or disabled is None or disabled[0] <= 0:
                continue
            checked.add((i, j))
            ratio = enabled[0] / disabled[0]
            if ratio < SLOW_RATIO:
                slow.append((ratio, m.header, i, j, enabled[0], disabled[0], enabled[1]))
    pairs = sorted({(i, j) for _, _, i, j, *_ in slow})
    fields: dict[str, object] = {
        "p2p_sample": "p2pBandwidthLatencyTest",
        "p2p_gpus": len(devices),
        "p2p_matrices": [m.header for m in matrices],
        "p2p_no_access": [f"{i}-{j}" for (i, j), can in sorted(access.items()) if not can],
        "p2p_complete": complete,
        "p2p_pairs_checked": len(checked),
        "p2p_slow_pairs": len(pairs),
        "p2p_pairs": [f"{i}-{j}" for i, j in pairs],
    }
    failure = next((str(i[2]) for i in items if isinstance(i, tuple) and i[0] == "cuda_failure"), None)
    if failure:
        fields["p2p_cuda_failure"] = failure
    cite = 0
    if slow:
        ratio, header, i, j, enabled_bw, disabled_bw, cite = min(slow, key=lambda s: (s[0], s[2], s[3]))
        fields.update(
            p2p_dev_a=i,
            p2p_dev_b=j,
            p2p_matrix=header,
            p2p_enabled_gbps=enabled_bw,
            p2p_disabled_gbps=disabled_bw,
            p2p_ratio=round(ratio, 3),
        )
    return fields, cite


def _simple_fields(items: list[object]) -> tuple[dict[str, object], int] | None:
    """The fields of simpleP2P's check, and the index of the line its event cites."""
    marks = [i for i in items if isinstance(i, tuple) and i[0] in ("verify", "mismatch", "simple_result")]
    if not marks:
        return None
    errors = [i for i in marks if i[0] == "mismatch"]
    fields: dict[str, object] = {"p2p_sample": "simpleP2P", "p2p_verification_errors": len(errors)}
    result = next((i[2] for i in marks if i[0] == "simple_result"), None)
    if result:
        fields["p2p_result"] = "failed" if "failed" in result else "passed"
    return fields, int((errors or marks)[0][1])


def parse_region(region: Region) -> list[Event]:
    body = _body(region)
    if not body:
        return [unparsed(region, 0, "CUDA P2P sample output not understood")]
    items = parse_lines(body)
    if items is None:
        return [unparsed(region, 0, "CUDA P2P sample output not understood")]
    found: list[tuple[dict[str, object], int]] = []
    if any(isinstance(i, _Matrix) or (isinstance(i, tuple) and i[0] in ("banner", "access")) for i in items):
        found.append(_bandwidth_fields(items))
    simple = _simple_fields(items)
    if simple:
        found.append(simple)
    events = []
    end = region.start + len(body) - 1
    for fields, index in found:
        p = split_prefix(region.lines[index])
        events.append(
            Event(
                kind=EventKind.P2P_TEST,
                loc=Location(region.file, region.line_no(index)),
                text=region.lines[index],
                message=p.message.strip(),
                rank=p.rank_or(region.source_rank),
                host=p.host or region.source_host,
                pid=p.pid,
                time_text=p.time_text,
                fields=fields,
                end_line=end,
            )
        )
    return events or [unparsed(region, 0, "CUDA P2P sample output not understood")]


# its output sits in a training log (or a file of its own, sniffed as one); the first parser of that
# kind, python_traceback, stays the one `postmortem parse auto` picks
PARSER = GrammarParser("cuda_p2p", (SourceKind.TRAINING_LOG,), TRIGGERS, parse_region, None)
