"""The verdict's and the alternatives' confidences as one distribution.

The rules' calibrated confidence and the classifier's probabilities for the other categories
come from different places; shown side by side they may add up to more than 1 (`0.99` next to
`network 0.89`). The report keeps the verdict's confidence and shares what is left (1 minus it)
among the alternatives in proportion to their scores, each at most the verdict's, rounded down
so that the sum never exceeds 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from analyzer.model import Alternative


def _floor2(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


def as_distribution(confidence: float, alternatives: Iterable[Alternative]) -> tuple[Alternative, ...]:
    """`alternatives` rescaled so that `confidence` + their sum <= 1, each <= `confidence`, best first."""
    alts = sorted(alternatives, key=lambda a: (-a.confidence, a.category.value))
    left = max(0.0, 1.0 - confidence)
    total = sum(max(0.0, a.confidence) for a in alts)
    scale = min(1.0, left / total) if total > 0 else 0.0
    out = []
    for a in alts:
        value = _floor2(min(max(0.0, a.confidence) * scale, confidence))
        out.append(Alternative(a.category, a.subcategory, value))
    return tuple(out)
