"""The Python matcher: the portable engine, and the patterns Hyperscan leaves over.

Each pattern's required literals (`literals.py`) are looked for in the chunk through a small
vocabulary of shared substrings, so that a chunk costs a few dozen `in` tests; a pattern
without a usable literal is searched with `re` over the chunk.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

from analyzer.scan.literals import required_literals

_VOCAB_LEN = 3  # length of the shared substrings tested first (shorter: fewer of them, fewer passes)


def _vocabulary(strings: Iterable[bytes]) -> dict[bytes, list[bytes]]:
    """A few substrings that cover all `strings` (each string contains one of them), greedily:
    testing the chunk for these first spares a test per string."""
    todo = set(strings)
    vocab: dict[bytes, list[bytes]] = {}
    while todo:
        count: dict[bytes, int] = {}
        for s in todo:
            k = min(len(s), _VOCAB_LEN)
            for sub in {s[i : i + k] for i in range(len(s) - k + 1)}:
                count[sub] = count.get(sub, 0) + 1
        best = max(count, key=lambda sub: (count[sub], len(sub), sub))
        covered = [s for s in todo if best in s]
        vocab[best] = covered
        todo.difference_update(covered)
    return vocab


class PyMatcher:
    """Candidate lines of a chunk for some patterns, found with their required literals."""

    def __init__(self, items: list[tuple[int, Any, bytes]]) -> None:
        lits: dict[bytes, list[int]] = {}  # lowered literal -> pattern ids
        self.searched: list[tuple[int, re.Pattern[bytes]]] = []  # patterns without literals
        for pid, p, rx in items:
            req = required_literals(p.regex, p.ignore_case)
            if req is None:
                with contextlib.suppress(re.error):  # a pattern that does not compile never matches
                    self.searched.append((pid, re.compile(rx, re.M | (re.I if p.ignore_case else 0))))
                continue
            for s in req[0]:
                lits.setdefault(s.lower(), []).append(pid)
        self.lits = lits
        self.vocab = _vocabulary(lits)
        self._finders: dict[tuple[bytes, ...], re.Pattern[bytes]] = {}

    def candidates(self, buf: bytes, found: dict[int, set[int]]) -> None:
        """Add to `found` (line start -> candidate pattern ids) the lines of `buf` worth checking."""
        if self.lits:
            low = buf.lower()  # ASCII only, same length: offsets hold
            present = tuple(sorted(s for w, ss in self.vocab.items() if w in low for s in ss if s in low))
            if present:
                finder = self._finders.get(present)
                if finder is None:
                    if len(self._finders) > 64:
                        self._finders.clear()
                    alt = b"|".join(re.escape(s) for s in sorted(present, key=len, reverse=True))
                    finder = self._finders[present] = re.compile(alt)
                pos = 0
                while True:
                    m = finder.search(low, pos)
                    if m is None:
                        break
                    start = low.rfind(b"\n", 0, m.start()) + 1
                    end = low.find(b"\n", m.end())
                    end = len(low) if end < 0 else end
                    line = low[start:end]
                    ids = found.setdefault(start, set())
                    for s in present:
                        if s in line:
                            ids.update(self.lits[s])
                    pos = end + 1
        for pid, rx in self.searched:
            _search_lines(rx, pid, buf, found)


def _search_lines(rx: re.Pattern[bytes], pid: int, buf: bytes, found: dict[int, set[int]]) -> None:
    """Every line that a match of `rx` touches becomes a candidate for pattern `pid`."""
    pos = 0
    n = len(buf)
    while pos < n:
        m = rx.search(buf, pos)
        if m is None or m.start() >= n:
            break
        start = buf.rfind(b"\n", 0, m.start()) + 1
        end = buf.find(b"\n", m.end() - 1 if m.end() > m.start() else m.start())
        end = n if end < 0 else end
        s = start
        while True:  # a match may run over several lines: each is checked on its own
            found.setdefault(s, set()).add(pid)
            e = buf.find(b"\n", s, end)
            if e < 0:
                break
            s = e + 1
        pos = end + 1
