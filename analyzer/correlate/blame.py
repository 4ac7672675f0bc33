"""The rank a hang is blamed on, where the messages name it.

A collective timeout is reported by the ranks that waited, not by the one that never came. Some
messages name that one: the monitored barrier (`Rank 2 failed to pass monitoredBarrier`), NCCL's
`Mismatched collective detected ... at and around rank 39`, and PyTorch's desync check, which
prints `Rank X is running collective: ..., but Rank Y is running collective: ...` from every rank
pair: the rank named in every pair is the odd one out.
"""

from __future__ import annotations

import re
from collections import Counter

from analyzer.model import Finding

_BARRIER = re.compile(r"\bRank (\d+) failed to pass monitoredBarrier")
_AROUND = re.compile(r"at and around rank (\d+)")
_RUNNING = re.compile(r"\bRank (\d+) is running collective")


def blamed_rank(findings: list[Finding]) -> int | None:
    running: Counter[int] = Counter()
    messages = 0
    for f in findings:
        text = f.event.message
        m = _BARRIER.search(text) or _AROUND.search(text)
        if m:
            return int(m.group(1))
        ranks = [int(r) for r in _RUNNING.findall(text)]
        if len(ranks) >= 2:
            messages += 1
            running.update(set(ranks))
    if messages >= 2 and running:
        (top, count), *rest = running.most_common(2) + [(None, 0)]
        if top is not None and count == messages and (not rest or rest[0][1] < count):
            return top
    return None
