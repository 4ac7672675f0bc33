"""`postmortem eval`: analyze every labeled case under a directory and score the verdicts."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.corpus.labels import accepted, has_failure_line, is_decidable
from analyzer.model import Category
from analyzer.pipeline import Options, analyze


@dataclass
class CaseResult:
    case: str
    expected: str
    predicted: str
    confidence: float
    expected_rank: int | None
    predicted_rank: int | None
    expected_signatures: list[str]
    fired: list[str]
    split: str
    decidable: bool = True
    failure_line: bool = True

    @property
    def scored(self) -> str:
        """The prediction as scored, as in the blind-set scorer: a verdict that counts as right
        (`labels.accepted`: `unknown` where the logs cannot decide, `none` where no kept line says
        anything failed) counts as the expected category."""
        return self.expected if accepted(self.expected, self.predicted, self.decidable, self.failure_line) else self.predicted

    @property
    def right(self) -> bool:
        return self.scored == self.expected

    @property
    def confidence_held(self) -> bool:
        """Whether the verdict's confidence was borne out: a `none` verdict's confidence says how
        often a run dir without failure evidence is a healthy job, so it holds only on a healthy
        case (also where `none` is scored right because no kept line says anything failed)."""
        return self.predicted == self.expected if self.predicted == "none" else self.right


@dataclass
class EvalResult:
    results: list[CaseResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def accuracy(self) -> float:
        return sum(r.right for r in self.results) / len(self.results) if self.results else 0.0

    def per_category(self) -> dict[str, dict[str, float]]:
        cats = sorted({r.expected for r in self.results} | {r.scored for r in self.results})
        out = {}
        for c in cats:
            tp = sum(r.expected == c and r.scored == c for r in self.results)
            fp = sum(r.expected != c and r.scored == c for r in self.results)
            fn = sum(r.expected == c and r.scored != c for r in self.results)
            p = tp / (tp + fp) if tp + fp else 0.0
            rc = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
            out[c] = {"precision": round(p, 3), "recall": round(rc, 3), "f1": round(f1, 3), "support": tp + fn}
        return out

    def macro_f1(self) -> float:
        per = [v["f1"] for v in self.per_category().values() if v["support"]]
        return sum(per) / len(per) if per else 0.0

    def confusion(self) -> dict[str, dict[str, int]]:
        m: dict[str, Counter[str]] = defaultdict(Counter)
        for r in self.results:
            m[r.expected][r.scored] += 1
        return {k: dict(v) for k, v in sorted(m.items())}

    def rank_accuracy(self) -> tuple[float, int]:
        labeled = [r for r in self.results if r.expected_rank is not None]
        if not labeled:
            return 0.0, 0
        return sum(r.expected_rank == r.predicted_rank for r in labeled) / len(labeled), len(labeled)

    def signature_recall(self) -> tuple[float, int]:
        pairs = [(s, r) for r in self.results for s in r.expected_signatures]
        if not pairs:
            return 0.0, 0
        return sum(s in r.fired for s, r in pairs) / len(pairs), len(pairs)

    def reliability(self, bins: int = 10) -> list[dict[str, Any]]:
        """Per confidence bin, how often the verdicts were right; `unknown` verdicts name no
        category, so their confidence is no probability of being right and they are left out; a
        `none` verdict counts as right only on a healthy case (`confidence_held`)."""
        named = [r for r in self.results if r.predicted != "unknown"]
        rows = []
        for b in range(bins):
            lo, hi = b / bins, (b + 1) / bins
            members = [r for r in named if lo <= r.confidence < hi or (b == bins - 1 and r.confidence == 1.0)]
            if members:
                rows.append(
                    {
                        "bin": f"{lo:.1f}-{hi:.1f}",
                        "n": len(members),
                        "mean_confidence": round(sum(r.confidence for r in members) / len(members), 3),
                        "accuracy": round(sum(r.confidence_held for r in members) / len(members), 3),
                    }
                )
        return rows

    def decidable(self) -> EvalResult:
        """The cases whose logs can name their cause: how well the analysis attributes what it can
        see, apart from the failed excerpts that hold no failure line (`decidable: false`)."""
        return EvalResult([r for r in self.results if r.decidable])

    def to_dict(self) -> dict[str, Any]:
        rank_acc, rank_n = self.rank_accuracy()
        dec = self.decidable()
        sig_rec, sig_n = self.signature_recall()
        return {
            "cases": len(self.results),
            "accuracy": round(self.accuracy(), 4),
            "macro_f1": round(self.macro_f1(), 4),
            "first_failure_rank_accuracy": round(rank_acc, 4),
            "cases_with_rank": rank_n,
            "undecidable": sum(not r.decidable for r in self.results),
            "undecidable_unknown": sum(not r.decidable and r.predicted == "unknown" for r in self.results),
            "no_failure_line": sum(not r.failure_line for r in self.results),
            "no_failure_line_none": sum(not r.failure_line and r.predicted == "none" for r in self.results),
            "decidable_accuracy": round(dec.accuracy(), 4),
            "decidable_macro_f1": round(dec.macro_f1(), 4),
            "expected_signature_recall": round(sig_rec, 4),
            "per_category": self.per_category(),
            "confusion": self.confusion(),
            "reliability": self.reliability(),
            "misses": [
                {"case": r.case, "expected": r.expected, "predicted": r.predicted, "confidence": r.confidence}
                for r in self.results
                if not r.right
            ],
            "errors": self.errors,
        }


def find_cases(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("case.yaml"))


def evaluate(root: Path) -> EvalResult:
    out = EvalResult()
    for case_dir in find_cases(root):
        try:
            label = yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))
            expected = Category(label["category"]).value
        except Exception as exc:
            out.errors.append(f"{case_dir}: bad case.yaml: {exc}")
            continue
        try:
            report = analyze(case_dir, Options(core_timeout=30.0))
        except Exception as exc:
            out.errors.append(f"{case_dir}: analyze failed: {type(exc).__name__}: {exc}")
            continue
        ff = label.get("first_failure") or {}
        fired = set(report.verdict.signatures) | {e.signature for e in report.evidence if e.signature}
        out.results.append(
            CaseResult(
                case=case_dir.relative_to(root).as_posix() if case_dir != root else case_dir.name,
                expected=expected,
                predicted=report.verdict.category.value,
                confidence=report.verdict.confidence,
                expected_rank=ff.get("rank"),
                predicted_rank=report.verdict.first_failure.rank,
                expected_signatures=list(label.get("expected_signatures") or []),
                fired=sorted(fired),
                split=str(label.get("split", "")),
                decidable=is_decidable(label),
                failure_line=has_failure_line(label),
            )
        )
    return out


def render_text(result: EvalResult) -> str:
    d = result.to_dict()
    lines = [
        f"cases: {d['cases']}",
        f"top-1 category accuracy: {d['accuracy']:.1%}",
        f"macro-F1: {d['macro_f1']:.3f}",
        f"first failing rank accuracy: {d['first_failure_rank_accuracy']:.1%} (of {d['cases_with_rank']} cases with a labeled rank)",
        f"undecidable cases (the logs cannot name the cause; `unknown` counts as right): {d['undecidable']}, "
        f"answered unknown: {d['undecidable_unknown']}",
        f"of them without any failure line (`none` counts as right): {d['no_failure_line']}, "
        f"answered none: {d['no_failure_line_none']}",
        f"decidable cases only ({d['cases'] - d['undecidable']}): accuracy {d['decidable_accuracy']:.1%}, "
        f"macro-F1 {d['decidable_macro_f1']:.3f}",
        "",
        f"{'category':<18}{'precision':>10}{'recall':>8}{'f1':>7}{'n':>5}",
    ]
    for c, v in d["per_category"].items():
        lines.append(f"{c:<18}{v['precision']:>10.2f}{v['recall']:>8.2f}{v['f1']:>7.2f}{v['support']:>5}")
    cats = sorted(d["per_category"])
    short = {c: c[:6] for c in cats}
    lines += ["", "confusion (rows: expected, columns: predicted)", " " * 18 + "".join(f"{short[c]:>8}" for c in cats)]
    for c in cats:
        row = d["confusion"].get(c, {})
        lines.append(f"{c:<18}" + "".join(f"{row.get(p, 0):>8}" for p in cats))
    if d["reliability"]:
        lines += ["", "reliability of named verdicts (confidence bin: n, mean confidence, accuracy)"]
        lines += [f"  {r['bin']}: {r['n']:>4}  {r['mean_confidence']:.2f}  {r['accuracy']:.2f}" for r in d["reliability"]]
    if d["misses"]:
        lines += ["", "misses:"]
        lines += [f"  {m['case']}: expected {m['expected']}, got {m['predicted']} ({m['confidence']:.2f})" for m in d["misses"]]
    if d["errors"]:
        lines += ["", "errors:"] + [f"  {e}" for e in d["errors"]]
    return "\n".join(lines) + "\n"
