"""Training and cross-validation of the classifier (scikit-learn, imported here only).

`postmortem train` analyzes every labeled case once, fits a multinomial logistic regression on
structured + tf-idf text features, fits the calibration tables on held-out folds, and writes
the model as plain JSON (never pickle). `postmortem eval` uses the same folds to report what the
whole system (rules + model + calibration) does on cases it was not trained on.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.classify.combine import combine
from analyzer.classify.cues import CueLead
from analyzer.classify.model import Model, from_dict
from analyzer.classify.rules import Decision
from analyzer.corpus.evaluate import CaseResult, EvalResult, find_cases
from analyzer.corpus.labels import has_failure_line, is_decidable
from analyzer.model import Category, Event, Finding
from analyzer.pipeline import Options, collect
from analyzer.report.build import first_rank

ML_HINT = "pip install 'postmortem[ml]' (scikit-learn, numpy, matplotlib)"


def ml_missing() -> str | None:
    """None when scikit-learn imports; else what is missing, for a message that says how to install it."""
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:
        return str(exc) or "scikit-learn is not installed"
    return None


SEED = 0
MIN_DF = 2
C = 4.0


@dataclass
class Sample:
    case: str
    group: str
    label: str
    structured: dict[str, float]
    tokens: Counter[str]
    rule: Decision
    findings: list[Finding]
    expected_rank: int | None
    split: str
    decidable: bool = True  # `decidable: false` in case.yaml: the logs cannot name the cause
    failure_line: bool = True  # `failure_line: false` in case.yaml: no kept line says anything failed
    single_process: bool = False
    events: list[Event] = field(default_factory=list)
    failed: bool = True  # the analysis found failure evidence (classify/abstain.py)
    finished: bool = False
    supported: frozenset[Category] = frozenset()
    lead: CueLead | None = None  # the cue of the failure lines no finding names (classify/cues.py)


def load_samples(root: Path, errors: list[str] | None = None) -> list[Sample]:
    samples = []
    for case_dir in find_cases(root):
        try:
            label = yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))
            category = Category(label["category"]).value
            a = collect(case_dir, Options(core_timeout=30.0))
        except Exception as exc:
            if errors is not None:
                errors.append(f"{case_dir}: {type(exc).__name__}: {exc}")
            continue
        prov = label.get("provenance") or {}
        group = str(prov.get("url") or prov.get("script") or case_dir.name)
        structured, tokens = a.features()
        ff = label.get("first_failure") or {}
        samples.append(
            Sample(
                case_dir.relative_to(root).as_posix() if case_dir != root else case_dir.name,
                group,
                category,
                structured,
                tokens,
                a.rule,
                a.findings,
                ff.get("rank"),
                str(label.get("split", "")),
                is_decidable(label),
                has_failure_line(label),
                a.single_process,
                a.events,
                a.failed,
                a.finished,
                a.supported,
                a.lead,
            )
        )
    return samples


def fit(samples: list[Sample], calibration: dict[str, list[list[float]]] | None = None) -> Model:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    # the model chooses between failure categories; a healthy job's `none` is the abstention's call
    samples = [s for s in samples if s.label != Category.NONE.value]
    df: Counter[str] = Counter()
    for s in samples:
        df.update(set(s.tokens))
    n = len(samples)
    idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items() if d >= MIN_DF}
    rows = [_row(s, idf) for s in samples]
    vec = DictVectorizer(sort=True)
    x = vec.fit_transform(rows)
    y = [s.label for s in samples]
    clf = LogisticRegression(C=C, max_iter=2000, class_weight="balanced", random_state=SEED)
    clf.fit(x, y)
    features = list(vec.get_feature_names_out())
    classes = [str(c) for c in clf.classes_]
    coef = clf.coef_.tolist()
    intercept = clf.intercept_.tolist()
    if len(classes) == 2:  # binary: sklearn keeps one row
        coef = [[-v for v in coef[0]], coef[0]]
        intercept = [-intercept[0], intercept[0]]
    data = {
        "classes": classes,
        "features": features,
        "idf": {t: round(v, 6) for t, v in idf.items() if t in set(features)},
        "coef": [[round(v, 6) for v in row] for row in coef],
        "intercept": [round(v, 6) for v in intercept],
        "calibration": calibration or {},
        "meta": {"cases": n, "C": C, "min_df": MIN_DF, "seed": SEED},
    }
    return from_dict(data)


def _row(s: Sample, idf: dict[str, float]) -> dict[str, float]:
    row = dict(s.structured)
    weights = {t: c * idf[t] for t, c in s.tokens.items() if t in idf}
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    row.update({t: w / norm for t, w in weights.items()})
    return row


def to_json(model: Model) -> dict[str, Any]:
    features = sorted(model.index, key=model.index.__getitem__)
    return {
        "classes": list(model.classes),
        "features": features,
        "idf": model.idf,
        "coef": [list(r) for r in model.coef],
        "intercept": list(model.intercept),
        "calibration": model.calibration,
        "meta": model.meta,
    }


def folds(samples: list[Sample], k: int) -> list[list[int]]:
    """k groups of sample indices; samples of one group (source) never split; deterministic."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        groups.setdefault(s.group, []).append(i)
    keys = sorted(groups)
    random.Random(SEED).shuffle(keys)
    keys.sort(key=lambda g: -len(groups[g]))  # big groups first, then fill the smallest fold
    out: list[list[int]] = [[] for _ in range(k)]
    for g in keys:
        min(out, key=len).extend(groups[g])
    return [sorted(f) for f in out if f]


def _decide(model: Model | None, s: Sample) -> Decision:
    return combine(s.rule, s.findings, model, s.structured, s.tokens, s.failed, s.finished, set(s.supported), s.lead)


def out_of_fold(samples: list[Sample], k: int, calibrated: bool) -> list[tuple[Sample, Decision, str, float]]:
    """Each sample decided by a model that never saw its group: (sample, decision, source, raw)."""
    results: list[tuple[Sample, Decision, str, float]] = []
    for test_idx in folds(samples, k):
        test = set(test_idx)
        train = [s for i, s in enumerate(samples) if i not in test]
        if len({s.label for s in train}) < 2:  # nothing to learn from: the rules decide alone
            for i in test_idx:
                s = samples[i]
                d = _decide(None, s)
                results.append((s, d, d.decided_by, d.confidence))
            continue
        calibration = fit_calibration(train, max(2, min(k, 3))) if calibrated else None
        model = fit(train, calibration)
        raw_model = fit(train) if calibrated else model
        for i in test_idx:
            s = samples[i]
            d = _decide(model, s)
            results.append((s, d, d.decided_by, _decide(raw_model, s).confidence))
    return results


def fit_calibration(samples: list[Sample], k: int) -> dict[str, list[list[float]]]:
    """Isotonic maps from raw confidence to accuracy, per deciding part, on held-out folds."""
    by_source: dict[str, list[tuple[float, float]]] = {"rules": [], "model": []}
    for s, d, source, raw in out_of_fold(samples, k, calibrated=False):
        if source not in by_source:
            continue  # an abstention is not calibrated
        guess = d.alternatives[0][0].value if d.category is Category.UNKNOWN and d.alternatives else d.category.value
        by_source[source].append((raw, 1.0 if guess == s.label else 0.0))
    tables: dict[str, list[list[float]]] = {}
    for source, pairs in by_source.items():
        if len(pairs) < 5:
            continue
        tables[source] = binned_isotonic_table(pairs)
    return tables


def binned_isotonic_table(pairs: list[tuple[float, float]], prior: float = 5.0) -> list[list[float]]:
    """Accuracy over raw confidence, per tenth of the raw scale, made monotone.

    Each bin's accuracy is shrunk toward its own raw confidence with the weight of `prior`
    verdicts, so a bin of three lucky verdicts cannot turn a weak signature (a bare Bus error at
    0.5) into a certainty, while a bin of a hundred right verdicts moves to what it earned.
    Plain isotonic regression on a few hundred held-out verdicts overfits single cases, and a
    two-parameter curve cannot follow the step between weak and strong signatures; this does
    neither. Bins are then merged by pool-adjacent-violators and joined by straight lines.
    """
    bins: dict[int, list[float]] = {}
    for x, y in pairs:
        b = bins.setdefault(min(9, int(x * 10)), [0.0, 0.0, 0.0])
        b[0] += x
        b[1] += y
        b[2] += 1
    merged: list[list[float]] = []  # [sum_x, shrunk_sum_y, weight]
    for key in sorted(bins):
        sx, sy, n = bins[key]
        mean_x = sx / n
        merged.append([mean_x * (n + prior), sy + prior * mean_x, n + prior])
        while len(merged) > 1 and merged[-2][1] / merged[-2][2] > merged[-1][1] / merged[-1][2]:
            top = merged.pop()
            merged[-1] = [a + c for a, c in zip(merged[-1], top, strict=True)]
    return [[round(sx / w, 4), round(min(0.99, max(0.05, sy / w)), 4)] for sx, sy, w in merged]


def cross_validate(root: Path, k: int = 5, exclude_splits: tuple[str, ...] = ()) -> EvalResult:
    """Out-of-fold verdicts for every case (folds grouped by source); cases whose `split` is in
    `exclude_splits` (e.g. `heldout`) are left out of both training and scoring."""
    result = EvalResult()
    samples = [s for s in load_samples(root, result.errors) if s.split not in exclude_splits]
    for s, d, _, _ in out_of_fold(samples, k, calibrated=True):
        rank, _host = first_rank(d, s.single_process, s.events, s.findings)
        result.results.append(
            CaseResult(
                s.case,
                s.label,
                d.category.value,
                d.confidence,
                s.expected_rank,
                rank,
                [],
                sorted({f.signature for f in d.root_findings}),
                s.split,
                s.decidable,
                s.failure_line,
            )
        )
    result.results.sort(key=lambda r: r.case)
    return result


def train(root: Path, k: int = 5) -> tuple[Model, int]:
    samples = load_samples(root)
    calibration = fit_calibration(samples, k)
    return fit(samples, calibration), len(samples)
