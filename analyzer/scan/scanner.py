"""One compiled multi-pattern pass per file.

The patterns are the parsers' triggers and the signatures' line patterns, both declared next to
what uses them; this module keeps no list of its own. All of them are joined into one regular
expression over bytes and run over 1 MiB chunks that end on line boundaries, so a file is read
once and memory stays flat whatever its size. Only the lines that match (and, for block
triggers, the lines that follow them) are decoded and handed to the parsers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

MAX_LINE = 65536  # longer lines are cut before parsing
MAX_REGIONS = 20000  # per file; beyond that the scan keeps counting but stops collecting


@dataclass(frozen=True, slots=True)
class Pattern:
    regex: str  # Python `re` syntax over one line
    owner: str  # the parser stem, or "signatures"
    block: int = 0  # following lines to capture
    ignore_case: bool = False


@dataclass(slots=True)
class Hit:
    line_no: int
    owners: tuple[str, ...]
    lines: list[str]  # the matching line, then the captured following lines
    want: int  # lines still to capture


@dataclass(slots=True)
class ScanResult:
    hits: list[Hit] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    dropped: int = 0  # hits beyond MAX_REGIONS
    long_lines: int = 0


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _compiles(regex: str) -> bool:
    try:
        re.compile(regex.encode("utf-8"))
        re.compile(regex)
        return True
    except re.error:
        return False


def _decode(raw: bytes) -> tuple[str, bool]:
    cut = len(raw) > MAX_LINE
    if cut:
        raw = raw[:MAX_LINE]
    return raw.decode("utf-8", errors="replace").rstrip("\r\n"), cut


class Scanner:
    """Compiled once per analysis from all declared patterns."""

    def __init__(self, patterns: Iterable[Pattern], caps: dict[str, int] | None = None) -> None:
        self.caps = dict(caps or {})  # owner -> most hits kept per file (for broad, low-value patterns)
        self.patterns = [p for p in patterns if _compiles(_NAMED_GROUP.sub("(?:", p.regex))]
        parts = []
        for p in self.patterns:
            flag = "(?i:" if p.ignore_case else "(?:"
            # named groups of different patterns would collide in one expression
            parts.append(flag + _NAMED_GROUP.sub("(?:", p.regex) + ")")
        joined = "|".join(parts) if parts else r"(?!x)x"
        self._any = re.compile(joined.encode("utf-8"), re.M)
        owners: dict[str, list[tuple[re.Pattern[str], int]]] = {}
        for p, part in zip(self.patterns, parts, strict=True):
            owners.setdefault(p.owner, []).append((re.compile(part), p.block))
        self._owner_res = owners

    def owners_of(self, line: str) -> tuple[tuple[str, ...], int]:
        """Which owners' patterns match this line, and the largest block they ask for."""
        found = []
        block = 0
        for owner, res in self._owner_res.items():
            for rx, b in res:
                if rx.search(line):
                    found.append(owner)
                    block = max(block, b)
                    break
        return tuple(found), block

    def scan(self, chunks: Iterable[bytes]) -> ScanResult:
        result = ScanResult()
        pending: list[Hit] = []
        per_owner: dict[str, int] = dict.fromkeys(self.caps, 0)
        line_base = 0  # lines before the current chunk
        for chunk in chunks:
            result.bytes += len(chunk)
            if pending:
                pending = self._feed_pending(pending, chunk, 0)
            pos = 0
            seen_pos, seen_lines = 0, line_base
            while True:
                m = self._any.search(chunk, pos)
                if m is None:
                    break
                start = chunk.rfind(b"\n", 0, m.start()) + 1
                end = chunk.find(b"\n", m.end())
                end = len(chunk) if end < 0 else end
                seen_lines += chunk.count(b"\n", seen_pos, start)
                seen_pos = start
                line_no = seen_lines + 1
                text, cut = _decode(chunk[start:end])
                result.long_lines += cut
                owners, block = self.owners_of(text)
                if per_owner and owners:
                    kept = tuple(o for o in owners if o not in per_owner or per_owner[o] < self.caps[o])
                    for o in kept:
                        if o in per_owner:
                            per_owner[o] += 1
                    owners = kept
                if owners:
                    if len(result.hits) < MAX_REGIONS:
                        hit = Hit(line_no, owners, [text], block)
                        result.hits.append(hit)
                        if block:
                            pending.extend(self._feed_pending([hit], chunk, end + 1))
                    else:
                        result.dropped += 1
                pos = end + 1
                if pos >= len(chunk):
                    break
            line_base += chunk.count(b"\n")
            if chunk and not chunk.endswith(b"\n"):
                line_base += 1
        result.lines = line_base
        return result

    @staticmethod
    def _feed_pending(pending: list[Hit], chunk: bytes, pos: int) -> list[Hit]:
        """Give the following lines of `chunk` (from `pos`) to hits still capturing."""
        still: list[Hit] = []
        for hit in pending:
            p = pos
            while hit.want > 0 and p < len(chunk):
                end = chunk.find(b"\n", p)
                end = len(chunk) if end < 0 else end
                text, _ = _decode(chunk[p:end])
                hit.lines.append(text)
                hit.want -= 1
                p = end + 1
            if hit.want > 0:
                still.append(hit)
        return still


def iter_lines_numbered(chunks: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    """Every line with its number (for small files that are parsed whole)."""
    n = 0
    for chunk in chunks:
        pieces = chunk.split(b"\n")
        if chunk.endswith(b"\n"):
            pieces.pop()
        for raw in pieces:
            n += 1
            yield n, _decode(raw)[0]
