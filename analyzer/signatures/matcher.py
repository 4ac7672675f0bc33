"""Matching signatures against events, and the summary text of a match."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import Any

from analyzer.model import Event, Finding
from analyzer.signatures.loader import Matcher, Signature


def _values_of(event: Event, field: str) -> list[Any]:
    value = event.get(field)
    if value is None:
        return []
    if isinstance(value, list | tuple | set):
        return list(value)
    return [value]


def _match_one(m: Matcher, event: Event, groups: dict[str, str]) -> bool:
    values = _values_of(event, m.field)
    mods = m.modifiers
    if "exists" in mods:
        want = bool(m.values[0]) if m.values else True
        return bool(values) == want
    if not values:
        return False
    combine = all if "all" in mods else any
    if "re" in mods:
        def test_re(rx: re.Pattern[str]) -> bool:
            for v in values:
                found = rx.search(str(v))
                if found:
                    groups.update({k: g for k, g in found.groupdict().items() if g is not None})
                    return True
            return False

        return combine(test_re(rx) for rx in m.regexes)
    if "gte" in mods or "lte" in mods:
        def num_test(expected: Any) -> bool:
            for v in values:
                try:
                    if ("gte" in mods and float(v) >= float(expected)) or ("lte" in mods and float(v) <= float(expected)):
                        return True
                except (TypeError, ValueError):
                    continue
            return False

        return combine(num_test(x) for x in m.values)

    def str_test(expected: Any) -> bool:
        for v in values:
            if isinstance(expected, bool) or isinstance(v, bool):
                if v == expected:
                    return True
                continue
            if isinstance(expected, int | float) and not isinstance(expected, bool):
                try:
                    if float(v) == float(expected):
                        return True
                except (TypeError, ValueError):
                    pass
                continue
            a, b = str(v).lower(), str(expected).lower()
            if "contains" in mods:
                ok = b in a
            elif "startswith" in mods:
                ok = a.startswith(b)
            elif "endswith" in mods:
                ok = a.endswith(b)
            else:
                ok = a == b
            if ok:
                return True
        return False

    return combine(str_test(x) for x in m.values)


def match_event(sig: Signature, event: Event) -> dict[str, str] | None:
    """The named groups of the match (possibly empty) when `sig` matches `event`, else None."""
    groups: dict[str, str] = {}
    cache: dict[str, bool] = {}

    def test(name: str) -> bool:
        if name not in cache:
            cache[name] = all(_match_one(m, event, groups) for m in sig.selections.get(name, ()))
        return cache[name]

    if sig.condition.evaluate(test, list(sig.selections)):
        return groups
    return None


class _Safe(string.Formatter):
    def get_value(self, key: int | str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:  # type: ignore[override]
        value = kwargs.get(str(key))
        return "?" if value is None else value

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


def summarize(sig: Signature, event: Event, groups: dict[str, str]) -> str:
    values: dict[str, Any] = {k: v for k, v in event.fields.items() if isinstance(v, str | int | float)}
    values.update(rank=event.rank, host=event.host, pid=event.pid, message=event.message, file=event.loc.file, line=event.loc.line)
    values.update(groups)
    try:
        return _Safe().format(sig.summary, **values)
    except (ValueError, IndexError, KeyError):
        return sig.summary


def find(signatures: Iterable[Signature], events: Iterable[Event]) -> list[Finding]:
    """Every (signature, event) match, once per signature and file line."""
    sigs = list(signatures)
    findings: list[Finding] = []
    seen: set[tuple[str, str, int | None]] = set()
    for event in events:
        for sig in sigs:
            groups = match_event(sig, event)
            if groups is None:
                continue
            key = (sig.id, event.loc.file, event.loc.line)
            if key in seen:
                continue
            seen.add(key)
            findings.append(
                Finding(
                    signature=sig.id,
                    title=sig.title,
                    category=sig.category,
                    subcategory=sig.subcategory,
                    role=sig.role,
                    confidence=sig.confidence,
                    summary=summarize(sig, event, groups),
                    event=event,
                    remediation=sig.remediation,
                )
            )
    return findings
