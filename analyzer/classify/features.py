"""Features of one analysis for the classifier: what the rules saw, and the words of the
failing region.

Structured features: every signature that fired (`sig=`), the best root-cause and symptom
confidence per category (`root=`, `sym=`), the rules' own decision (`rule=`), event kinds,
signals and exit codes, source kinds. Text features: the normalized words (numbers, hex,
paths and hosts masked) of every matched or failure-sounding line, as unigrams and bigrams,
weighted by tf-idf at training time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from analyzer.model import Event, Finding, Role

_MASKS = (
    (re.compile(r"0x[0-9a-fA-F]+"), " HEX "),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.@+~-]+){2,}"), " PATH "),
    (re.compile(r"\b\d+(?:\.\d+)*\b"), " NUM "),
    (re.compile(r"\b[\w-]+\.(?:py|cc|cpp|cu|h|hpp|c|so)\b"), " SRCFILE "),
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z_]+")
MAX_TEXT_EVENTS = 300


def normalize(text: str) -> list[str]:
    for rx, repl in _MASKS:
        text = rx.sub(repl, text)
    return [w.lower() for w in _WORD.findall(text) if len(w) < 40]


def text_tokens(events: Iterable[Event]) -> Counter[str]:
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    n = 0
    for e in events:
        msg = e.message
        if msg in seen:
            continue
        seen.add(msg)
        words = normalize(msg[:400])
        counts.update(f"w={w}" for w in words)
        counts.update(f"b={a}_{b}" for a, b in zip(words, words[1:], strict=False))
        n += 1
        if n >= MAX_TEXT_EVENTS:
            break
    return counts


def structured(
    findings: list[Finding], events: list[Event], rule_category: str | None, rule_confidence: float
) -> dict[str, float]:
    feats: dict[str, float] = {}
    for f in findings:
        feats[f"sig={f.signature}"] = 1.0
        key = f"root={f.category.value}" if f.role is Role.ROOT_CAUSE else f"sym={f.category.value}"
        feats[key] = max(feats.get(key, 0.0), f.confidence)
    if rule_category:
        feats[f"rule={rule_category}"] = max(rule_confidence, 0.05)
    for e in events:
        feats[f"kind={e.kind}"] = 1.0
        sig = e.fields.get("signal")
        if isinstance(sig, str):
            feats[f"signal={sig}"] = 1.0
        code = e.fields.get("exitcode")
        if isinstance(code, int):
            feats[f"exit={code}"] = 1.0
        sk = e.fields.get("source_kind")
        if isinstance(sk, str):
            feats[f"src={sk}"] = 1.0
    if not findings:
        feats["no_findings"] = 1.0
    return feats


def case_features(
    findings: list[Finding], events: list[Event], rule_category: str | None, rule_confidence: float
) -> tuple[dict[str, float], Counter[str]]:
    matched = {id(f.event) for f in findings}
    events = [e for e in events if not e.fields.get("bookkeeping")]  # how the job ended, who is who: no cause's wording
    text_events = [e for e in events if id(e) in matched] + [e for e in events if id(e) not in matched]
    return structured(findings, events, rule_category, rule_confidence), text_tokens(text_events)
