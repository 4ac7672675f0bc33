"""Rules first, the model where the rules are unsure, and calibrated confidence.

When a root-cause signature fired with high confidence, the ordered rules decide. Otherwise
(no signature fired, only weak ones, or several categories close together) the learned model
decides from everything the analysis saw; its other likely classes become the alternatives.
The final confidence goes through the calibration table of whichever part decided, fitted on
held-out folds so that a verdict given confidence c is right about c of the time. Below
UNKNOWN_BELOW the verdict is `unknown`, with the best guess kept as the first alternative.

The model chooses only among the categories that some finding supports (`abstain.candidates`):
with no failure evidence at all the verdict is `none`; with a failure that no finding explains
it is `unknown`, and the model's guesses are only its alternatives, unless the failing lines
name a cause in words (a cue, classify/cues.py): that cause is the verdict then, at no more than
CUE_CAP, with the line as its root-cause row.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from analyzer.classify.abstain import candidates
from analyzer.classify.cues import WEAK_FINDING, CueLead
from analyzer.classify.model import Model
from analyzer.classify.rules import Decision
from analyzer.correlate.order import finding_key, sort_key
from analyzer.model import Category, Finding, Role

RULES_DECIDE_AT = 0.42
UNKNOWN_BELOW = 0.3
# the most a verdict may claim when only a `supports` context line (abstain.candidates) backs it
CONTEXT_ONLY_CAP = 0.4
# the most a verdict may claim when only a cue (the words of a failure line no signature names) backs it.
# It was 0.6; cues are right far more often than that: `postmortem eval corpora/ --unseen-wording`
# (869 cases, each without its own category's signatures) has 224 of 232 cue verdicts at that cap
# right, `postmortem eval corpora/` 14 of the 15 verdicts at 0.6 to 0.7, and the blind rounds 14
# and 15 2 of 2. Their vocabulary was read from the corpora, so the cap sits at the lower edge of
# what those figures say
CUE_CAP = 0.85
# a cue of at least CUE_OVER_WEAK also decides when every finding that supports a category is a
# generic one (confidence below cues.WEAK_FINDING: a Python exception, a bare signal) on the cue's
# line or after it: the failure's own words, or an earlier failure's, name the cause
CUE_OVER_WEAK = 0.8
# a verdict that rests only on an `ambiguous` signature (a CUDA kernel exception that names no
# cause) is `unknown`, its category kept as the best guess at no more than AMBIGUOUS_CAP: on the
# labeled corpora the lone illegal-address, misaligned/illegal-instruction and unspecified-launch
# verdicts named the thread's cause 13 times in 17, and 15 of those 17 cases are labeled
# undecidable from their logs
AMBIGUOUS_CAP = 0.6
# `none` is the abstention's call, not the model's, so it has no calibration table: these are its
# measured accuracies on the labeled corpora, held-out rounds included (`postmortem eval corpora/`:
# a failed job whose logs kept no failure line is what makes it wrong, 38 of 74 `none` verdicts
# without a launcher's word over 869 cases, none of the 4 with it; it was 16 of 52 over 713, before
# the blind rounds 14 and 15 brought more excerpts of failed jobs that stop before their failure)
NONE_FINISHED = 0.97  # no failure evidence, and the launcher said the job finished well
NONE_SILENT = 0.49  # no failure evidence, and no word on how the job ended


def no_failure(finished: bool) -> Decision:
    """The decision for a run dir without failure evidence."""
    note = "no error, non-zero exit, fatal signal or kernel fault in the logs"
    if finished:
        note += "; the launcher reported that the job finished"
    return Decision(Category.NONE, None, NONE_FINISHED if finished else NONE_SILENT, None, [], [], [note], decided_by="abstain")


def combine(
    rule: Decision,
    findings: list[Finding],
    model: Model | None,
    structured: dict[str, float],
    tokens: Counter[str],
    failed: bool = True,
    finished: bool = False,
    supported: set[Category] | None = None,
    cue: CueLead | None = None,
) -> Decision:
    """The final decision. `failed`: the run dir holds failure evidence (abstain.failure_evidence);
    `finished`: a launcher said the job finished well; `supported`: the categories evidence
    supports (abstain.candidates), the only ones the model may choose; `cue`: the cue of the
    failure lines that no finding names (classify/cues.py), for when nothing else supports a cause."""
    if not failed:
        return no_failure(finished)
    notes = list(rule.notes)
    allowed_values = {c.value for c in (supported if supported is not None else candidates(findings))}
    if cue is not None and (not allowed_values or _only_weak_after(cue, findings, allowed_values)):
        return _by_cue(cue, model, structured, tokens, notes)
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
        return _unknown_if_low(_ambiguous_alone(decided, findings, notes), notes)
    allowed = [(c, p) for c, p in ranked if c in allowed_values]
    if not allowed:
        notes.append("no finding supports any category; the classifier's guesses are only alternatives")
        guesses = [_alt(c, p) for c, p in ranked[:3]]
        return Decision(Category.UNKNOWN, None, 0.0, rule.root, [], guesses, notes, decided_by="abstain")
    if allowed[0][0] != ranked[0][0]:
        notes.append(f"the classifier's first guess {ranked[0][0]} has no supporting evidence")
    ranked = allowed + [(c, p) for c, p in ranked if c not in allowed_values]
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
    lead = None if root else next((f for f in sorted(findings, key=finding_key) if f.category is category), None)
    if lead is not None:
        # only a context line before the failure supports the category (memory pressure the
        # program survived, then a crash nothing explains): a lead, named at low confidence; the
        # first failure stays the failure's own line
        confidence = min(confidence, CONTEXT_ONLY_CAP)
        subcategory = lead.subcategory
        notes.append(f"only a line before the failure supports {category}: {lead.summary}")
    alternatives = [_alt(c, p) for c, p in ranked[1:4]]
    decided = Decision(category, subcategory, round(confidence, 2), root, own, alternatives, notes, decided_by="model")
    return _unknown_if_low(_ambiguous_alone(decided, findings, notes), notes)


def _only_weak_after(cue: CueLead, findings: list[Finding], allowed: set[str]) -> bool:
    """Every finding that supports a category is weak, on the cue's line or later."""
    if cue.cue.weight < CUE_OVER_WEAK:
        return False
    backing = [f for f in findings if f.category.value in allowed and f.role is not Role.CONTEXT]
    first = sort_key(cue.event)
    # on the cue's own line, only words that report a failure by themselves outweigh the generic
    # finding (a Python exception that mentions a rendezvous is not a network failure)
    return bool(backing) and all(
        f.confidence < WEAK_FINDING and (finding_key(f) > first or (finding_key(f) == first and cue.cue.says_failure))
        for f in backing
    )


def _by_cue(lead: CueLead, model: Model | None, structured: dict[str, float], tokens: Counter[str], notes: list[str]) -> Decision:
    """No finding supports a cause, and the failure lines name one in words: that cause, capped."""
    cat = lead.cue.category
    notes.append(f"no signature names the cause; the failing line's words ({lead.words!r}, cue {lead.cue.id}) point to {cat}")
    others: list[tuple[Category, str | None, float]] = []
    if model is not None and tokens:
        probs = model.predict_proba(structured, tokens)
        others = [_alt(c, p) for c, p in sorted(probs.items(), key=lambda kv: (-kv[1], kv[0])) if c != cat.value][:3]
    root = lead.finding()
    confidence = round(lead.cue.weight * CUE_CAP, 2)  # a weight is in (0, 1] (signatures/cues.py)
    return Decision(cat, None, confidence, root, [root], others, notes, decided_by="cues")


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


def _ambiguous_alone(decision: Decision, findings: list[Finding], notes: list[str]) -> Decision:
    """`unknown` where the decision's category rests only on findings of `ambiguous` signatures
    (and generic ones below WEAK_FINDING, a Python exception carrying the same message): CUDA
    says an illegal address or an unspecified launch failure happened, not why; a bug in a
    kernel, an extension built for other versions, a failing GPU and broken peer access all give
    it. Its category stays the best guess, at no more than AMBIGUOUS_CAP."""
    if decision.category in (Category.UNKNOWN, Category.NONE):
        return decision
    backing = [f for f in findings if f.category is decision.category and f.role is not Role.CONTEXT]
    lone = [f for f in backing if f.ambiguous]
    if not lone or any(not f.ambiguous and f.confidence >= WEAK_FINDING for f in backing):
        return decision
    lead = min(lone, key=finding_key)
    notes.append(
        f"{lead.title}: the error names no cause (a kernel's bug, an extension built for other versions, a GPU fault "
        f"or broken peer access all give it) and nothing else in the logs supports {decision.category}"
    )
    guess = (decision.category, decision.subcategory, min(decision.confidence, AMBIGUOUS_CAP))
    others = [a for a in decision.alternatives if a[0] is not decision.category]
    return Decision(
        Category.UNKNOWN, None, guess[2], decision.root, decision.root_findings, [guess, *others][:4], notes, decision.decided_by
    )


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
