"""Rules first, the model where the rules are unsure, and calibrated confidence.

When a root-cause signature fired with high confidence, the ordered rules decide. Otherwise
(no signature fired, only weak ones, or several categories close together) the learned model
decides from everything the analysis saw; its other likely classes become the alternatives.
The final confidence goes through the calibration table of whichever part decided, fitted on
held-out folds so that a verdict given confidence c is right about c of the time. Below
UNKNOWN_BELOW the verdict is `unknown`, with the best guess kept as the first alternative.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from analyzer.classify.model import Model
from analyzer.classify.rules import Decision
from analyzer.correlate.order import finding_key
from analyzer.model import Category, Finding, Role

RULES_DECIDE_AT = 0.42
UNKNOWN_BELOW = 0.3


def combine(
    rule: Decision, findings: list[Finding], model: Model | None, structured: dict[str, float], tokens: Counter[str]
) -> Decision:
    notes = list(rule.notes)
    if model is None or (not findings and not tokens):
        return rule  # nothing to weigh: the model must not guess from its intercepts
    probs = model.predict_proba(structured, tokens)
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))
    rules_sure = rule.root is not None and rule.category is not Category.UNKNOWN and rule.confidence >= RULES_DECIDE_AT
    if rules_sure:
        category = rule.category
        confidence = model.calibrate("rules", rule.confidence)
        others = [_alt(c, p) for c, p in ranked if c != category.value][:3]
        decided = replace(rule, confidence=round(confidence, 2), alternatives=_merge(rule.alternatives, others))
        return _unknown_if_low(decided, notes)
    category = Category(ranked[0][0])
    raw = ranked[0][1]
    confidence = model.calibrate("model", raw)
    notes.append(f"the rules were unsure; the classifier says {category} ({raw:.2f} before calibration)")
    own = sorted(
        (f for f in findings if f.category is category and f.role is not Role.CONTEXT),
        key=lambda f: (f.role is not Role.ROOT_CAUSE, finding_key(f), -f.confidence),
    )
    root = own[0] if own else None
    subcategory = root.subcategory if root else None
    alternatives = [_alt(c, p) for c, p in ranked[1:4]]
    decided = Decision(category, subcategory, round(confidence, 2), root, own, alternatives, notes, decided_by="model")
    return _unknown_if_low(decided, notes)


def _alt(category: str, probability: float) -> tuple[Category, str | None, float]:
    return Category(category), None, round(probability, 2)


def _merge(
    a: list[tuple[Category, str | None, float]], b: list[tuple[Category, str | None, float]]
) -> list[tuple[Category, str | None, float]]:
    out: dict[Category, tuple[Category, str | None, float]] = {}
    for item in a + b:
        if item[0] not in out or item[2] > out[item[0]][2]:
            out[item[0]] = item
    return sorted(out.values(), key=lambda t: (-t[2], t[0].value))[:4]


def _unknown_if_low(decision: Decision, notes: list[str]) -> Decision:
    if decision.confidence >= UNKNOWN_BELOW or decision.category is Category.UNKNOWN:
        return replace(decision, notes=notes)
    guess = (decision.category, decision.subcategory, decision.confidence)
    notes.append(f"best guess {decision.category} is below the confidence threshold {UNKNOWN_BELOW}")
    return Decision(
        Category.UNKNOWN,
        None,
        decision.confidence,
        decision.root,
        decision.root_findings,
        [guess, *decision.alternatives][:4],
        notes,
        decision.decided_by,
    )
