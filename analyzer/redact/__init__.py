"""Redaction, a stage of its own: secrets seen in logs (tokens, keys, passwords, env dumps)
never reach a report.

`redact_text` applies the catalogue (`catalogue.py`) to one string. The pipeline calls
`redact_analysis` on everything the stages found (every event's text and message, every
finding's summary, file names, notes) before the report is built, so no string is cut before it
is redacted, and `redact_report` once more over every string of the finished report, so that
nothing that reaches a renderer is left out.
"""

from __future__ import annotations

import dataclasses
import re
from enum import Enum
from typing import Any, TypeVar

from analyzer.model import Event
from analyzer.redact.catalogue import MASK, RULES, Rule

T = TypeVar("T")

# a quick test before the rules: what every rule needs somewhere in the line (a secret-like
# name before a separator, an option, a URL, a key header, a token prefix); most lines hold none
_GATE_WORDS = (
    r"(?i)(?:key|token|secret|pass|auth|cred|sig|session|cookie)[\w.-]*['\"`]?\s*(?:=|:)",
    r"(?i)(?:bearer|basic|token)\s+\S{16}",
    r"(?i)wandb\s+login",
    r"://",
    r"-----BEGIN ",
    r"(?i)--?[\w-]*(?:password|passwd|passphrase|token|secret|key|credential)",
)
_GATE_PREFIXES = (
    r"MII[A-Za-z0-9+/]{60}|hf_|sk-|[sr]k_(?:live|test)_|A[KSBCGINPR][A-Z]A[0-9A-Z]{16}|gh[pousr]_|github_pat_"
    r"|gl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct|imt|agent|ft)-|xox[a-z]-|AIza|ya29\.|npm_|pypi-|eyJ"
)
_MAYBE = re.compile(
    "|".join(f"(?i:{p.removeprefix('(?i)')})" if p.startswith("(?i)") else f"(?:{p})" for p in (*_GATE_WORDS, _GATE_PREFIXES))
)


def _gate_scanner() -> Any:
    global _SCANNER
    if _SCANNER is None:
        from analyzer.scan import Pattern, Scanner

        _SCANNER = Scanner(
            [Pattern(p.removeprefix("(?i)"), "redact", 0, p.startswith("(?i)")) for p in (*_GATE_WORDS, _GATE_PREFIXES)]
        )
    return _SCANNER


_SCANNER: Any = None


def _flagged(strings: list[str]) -> set[str]:
    """Those of `strings` that pass the quick test, found in one scan over all of them."""
    single = [t for t in strings if t and "\n" not in t and "\r" not in t]
    out = {t for t in strings if t and ("\n" in t or "\r" in t) and _MAYBE.search(t)}
    if single:
        hits = _gate_scanner().scan([("\n".join(single) + "\n").encode("utf-8", "surrogatepass")]).hits
        out.update(single[h.line_no - 1] for h in hits)
    return out


def _apply(rule: Rule, text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        groups = m.groupdict()
        name = "secret" if groups.get("secret") is not None else "secret2"
        value = groups.get(name)
        s, e = m.span(name)
        if not value or m.string.startswith(MASK, s) or (rule.accept is not None and not rule.accept(value)):
            return m.group(0)
        return m.group(0)[: s - m.start()] + MASK + m.group(0)[e - m.start() :]

    return rule.regex.sub(sub, text)


def redact_text(text: str) -> str:
    """`text` with every secret of the catalogue replaced by [REDACTED] (the same object when
    there is none)."""
    if not text or (text not in _ONLY if _ONLY is not None else not _MAYBE.search(text)):
        return text
    out = text
    for rule in RULES:
        out = _apply(rule, out)
    return text if out == text else out


def redact_value(value: T) -> T:
    """Every string inside `value` (dataclasses, tuples, lists, dicts) redacted; a new value."""
    return redact_together(value)[0]  # type: ignore[no-any-return]


def redact_together(*values: Any) -> tuple[Any, ...]:
    """`redact_value` of each, with shared objects staying shared (a finding held both by the
    list of findings and by the decision is one object afterwards too)."""
    strings: list[str] = []
    for v in values:
        _strings(v, strings, set())
    memo: dict[int, Any] = {}
    global _ONLY
    _ONLY = _flagged(strings)
    try:
        return tuple(_walk(v, memo) for v in values)
    finally:
        _ONLY = None


_ONLY: set[str] | None = None  # during redact_together: the strings that passed the quick test


def _strings(value: Any, out: list[str], seen: set[int]) -> None:
    if isinstance(value, str):
        if not isinstance(value, Enum):
            out.append(value)
        return
    if value is None or isinstance(value, int | float | bytes | Enum) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Event):
        out += (value.text, value.message)
    elif isinstance(value, tuple | list):
        for v in value:
            _strings(v, out, seen)
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(k, out, seen)
            _strings(v, out, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.init:
                _strings(getattr(value, f.name), out, seen)


def _walk(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, Enum) or value is None or isinstance(value, int | float | bytes):
        return value
    if isinstance(value, str):
        return redact_text(value)
    key = id(value)
    if key in memo:
        return memo[key]
    out: Any = value
    if isinstance(value, Event):  # many of them: only their text and message are ever shown
        text, message = redact_text(value.text), redact_text(value.message)
        if text is not value.text or message is not value.message:
            out = dataclasses.replace(value, text=text, message=message)
    elif isinstance(value, tuple):
        out = tuple(_walk(v, memo) for v in value)
    elif isinstance(value, list):
        out = [_walk(v, memo) for v in value]
    elif isinstance(value, dict):
        out = {_walk(k, memo) if isinstance(k, str) else k: _walk(v, memo) for k, v in value.items()}
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = _walk(old, memo)
            if new is not old:
                changes[f.name] = new
        out = dataclasses.replace(value, **changes) if changes else value
    memo[key] = out
    return out


def redact_report(report: T) -> T:
    """The finished report with every string in it redacted."""
    return redact_value(report)


# kept for callers of the former single-module API
redact = redact_report
