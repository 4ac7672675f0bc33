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

from analyzer.redact.catalogue import MASK, RULES, Rule

T = TypeVar("T")

# a quick test before the rules: most lines hold none of these and are left alone
_MAYBE = re.compile(
    r"(?i)key|token|secret|pass|auth|cred|sig|session|cookie|bearer|basic|login|://|-----BEGIN|MII|hf_|sk-|[sr]k_|"
    r"A[KSBCGINPR][A-Z]A|gh[pousr]_|github_pat_|gl[a-z]+-|xox|AIza|ya29\.|npm_|pypi-|eyJ"
)


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
    """`text` with every secret of the catalogue replaced by [REDACTED]."""
    if not text or not _MAYBE.search(text):
        return text
    for rule in RULES:
        text = _apply(rule, text)
    return text


def redact_value(value: T) -> T:
    """Every string inside `value` (dataclasses, tuples, lists, dicts) redacted; a new value."""
    return redact_together(value)[0]  # type: ignore[no-any-return]


def redact_together(*values: Any) -> tuple[Any, ...]:
    """`redact_value` of each, with shared objects staying shared (a finding held both by the
    list of findings and by the decision is one object afterwards too)."""
    memo: dict[int, Any] = {}
    return tuple(_walk(v, memo) for v in values)


def _walk(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, Enum) or value is None or isinstance(value, int | float | bytes):
        return value
    if isinstance(value, str):
        return redact_text(value)
    key = id(value)
    if key in memo:
        return memo[key]
    out: Any = value
    if isinstance(value, tuple):
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
