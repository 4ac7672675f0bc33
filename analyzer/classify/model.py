"""The learned model as plain data (JSON), and inference without scikit-learn.

The shipped file analyzer/classify/model.json holds: the classes, the feature index, the idf
of text features, the coefficients and intercepts of a multinomial logistic regression, and
the calibration tables (isotonic steps fitted on held-out folds). Inference is a sparse dot
product, so `analyze` never imports scikit-learn or numpy.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).resolve().parent / "model.json"


@dataclass(frozen=True)
class Model:
    classes: tuple[str, ...]
    index: dict[str, int]
    idf: dict[str, float]
    coef: tuple[tuple[float, ...], ...]  # [class][feature]
    intercept: tuple[float, ...]
    calibration: dict[str, list[list[float]]]
    meta: dict[str, Any]

    def vector(self, structured: dict[str, float], tokens: Counter[str]) -> dict[int, float]:
        x: dict[int, float] = {}
        for name, value in structured.items():
            i = self.index.get(name)
            if i is not None:
                x[i] = value
        weights = {t: c * self.idf[t] for t, c in tokens.items() if t in self.idf and t in self.index}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        for t, w in weights.items():
            x[self.index[t]] = w / norm
        return x

    def predict_proba(self, structured: dict[str, float], tokens: Counter[str]) -> dict[str, float]:
        x = self.vector(structured, tokens)
        scores = [b + sum(row[i] * v for i, v in x.items()) for row, b in zip(self.coef, self.intercept, strict=True)]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def calibrate(self, source: str, raw: float) -> float:
        return calibrate(self.calibration.get(source), raw)


def calibrate(table: list[list[float]] | None, raw: float) -> float:
    """Piecewise-linear interpolation over (raw, calibrated) points sorted by raw."""
    if not table:
        return raw
    if raw <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in zip(table, table[1:], strict=False):
        if raw <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)
    return table[-1][1]


def from_dict(data: dict[str, Any]) -> Model:
    features = data["features"]
    return Model(
        classes=tuple(data["classes"]),
        index={name: i for i, name in enumerate(features)},
        idf=dict(data["idf"]),
        coef=tuple(tuple(row) for row in data["coef"]),
        intercept=tuple(data["intercept"]),
        calibration=dict(data.get("calibration", {})),
        meta=dict(data.get("meta", {})),
    )


@cache
def shipped_model() -> Model | None:
    if not MODEL_PATH.is_file():
        return None
    try:
        return from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError):
        return None
