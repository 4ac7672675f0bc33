"""`postmortem eval --unseen-wording`: the verdicts as if each case's messages had never been read.

The signatures were written from the corpora, so `eval` is in-sample for them. This measures what
the rest of the analysis (cues, abstention, the classifier) makes of a failure whose wording no
signature knows: for every labeled failed case that is right today with a root-cause signature
of its category, those signatures are dropped and the case is analyzed again (with the shipped
model). A verdict is `right` (its category again), `unknown` (no cause named), `none` (the
failure was not seen at all) or `wrong` (another cause named).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.corpus.evaluate import find_cases
from analyzer.model import Category, Role
from analyzer.pipeline import Options, analyze
from analyzer.signatures.loader import database

OUTCOMES = ("right", "unknown", "none", "wrong")


@dataclass
class UnseenCase:
    case: str
    label: str
    dropped: list[str]
    predicted: str
    confidence: float

    @property
    def outcome(self) -> str:
        if self.predicted == self.label:
            return "right"
        return self.predicted if self.predicted in ("unknown", "none") else "wrong"


@dataclass
class UnseenResult:
    cases: list[UnseenCase] = field(default_factory=list)
    skipped: int = 0  # failed cases not right today, or right without a root-cause signature of their own
    errors: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = Counter(x.outcome for x in self.cases)
        return {o: c.get(o, 0) for o in OUTCOMES}

    def per_category(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for x in self.cases:
            out[x.label][x.outcome] += 1
        return {k: {o: v.get(o, 0) for o in OUTCOMES} for k, v in sorted(out.items())}

    def named_precision(self) -> float:
        """Of the verdicts that named a cause, the share that named the right one."""
        c = self.counts()
        named = c["right"] + c["wrong"]
        return c["right"] / named if named else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts(),
            "named_precision": round(self.named_precision(), 3),
            "per_category": self.per_category(),
            "skipped": self.skipped,
            "errors": self.errors,
            "cases": [
                {"case": x.case, "label": x.label, "dropped": x.dropped, "predicted": x.predicted, "confidence": x.confidence}
                for x in self.cases
            ],
        }


def unseen_wording(root: Path, timeout: float = 30.0) -> UnseenResult:
    sigs = list(database())
    by_id = {s.id: s for s in sigs}
    result = UnseenResult()
    opts = Options(core_timeout=timeout)
    for case_dir in find_cases(root):
        rel = case_dir.relative_to(root).as_posix() if case_dir != root else case_dir.name
        try:
            label = str(yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))["category"])
            if label == Category.NONE.value:
                continue
            report = analyze(case_dir, opts)
            own = sorted(
                {
                    e.signature
                    for e in report.evidence
                    if e.role is Role.ROOT_CAUSE and e.signature in by_id and by_id[e.signature].category.value == label
                }
            )
            if report.verdict.category.value != label or not own:
                result.skipped += 1
                continue
            again = analyze(case_dir, opts, signatures=[s for s in sigs if s.id not in own])
        except Exception as exc:  # one unreadable case must not stop the measurement
            result.errors.append(f"{rel}: {type(exc).__name__}: {exc}")
            continue
        result.cases.append(UnseenCase(rel, label, own, again.verdict.category.value, again.verdict.confidence))
    return result


def render_text(result: UnseenResult) -> str:
    c = result.counts()
    n = len(result.cases)
    lines = [
        f"cases: {n} (each right today with root-cause signatures of its own category, analyzed again without them)",
        "outcome: " + ", ".join(f"{o} {c[o]}" for o in OUTCOMES),
        f"named verdicts right: {result.named_precision():.1%} ({c['right']} of {c['right'] + c['wrong']})",
        f"skipped: {result.skipped} (not right today, or right without a root-cause signature of their own)",
        "",
        f"{'category':<18}" + "".join(f"{o:>9}" for o in OUTCOMES),
    ]
    for cat, row in result.per_category().items():
        lines.append(f"{cat:<18}" + "".join(f"{row[o]:>9}" for o in OUTCOMES))
    lines.extend(f"error: {e}" for e in result.errors)
    return "\n".join(lines) + "\n"
