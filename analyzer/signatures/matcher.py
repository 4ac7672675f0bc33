"""Matching signatures against events, and the summary text of a match."""

from __future__ import annotations

import fnmatch
import re
import string
from collections.abc import Iterable, Sequence
from typing import Any

from analyzer.model import Event, Finding
from analyzer.parse.condition import Cond, Op
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

        return combine(test_re(rx) for rx in m.regexes())
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
    """A missing value prints as `?`, except inside a run of placeholders written back to back
    (`{conn_peer}{conn_peer2}`): those are alternatives, the groups of different regexes of one
    signature, so the missing ones print nothing while one of them has a value."""

    def __init__(self) -> None:
        super().__init__()
        self._blank: set[str] = set()  # the placeholders of the current call that print nothing

    def vformat(self, format_string: str, args: Sequence[Any], kwargs: Any) -> str:
        runs: list[list[str]] = [[]]
        for literal, name, _spec, _conv in self.parse(format_string):
            if literal:  # text between two placeholders ends a run
                runs.append([])
            if name is not None:
                runs[-1].append(name)
        self._blank = {
            n
            for run in runs
            if len(run) > 1 and any(kwargs.get(m) is not None for m in run)
            for n in run
            if kwargs.get(n) is None
        }
        return super().vformat(format_string, args, kwargs)

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:  # type: ignore[override]
        value = kwargs.get(str(key))
        if value is None:
            return "" if str(key) in self._blank else "?"
        return value

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except (ValueError, TypeError):
            return str(value)


def summarize(sig: Signature, event: Event, groups: dict[str, str]) -> str:
    values: dict[str, Any] = {k: v for k, v in event.fields.items() if isinstance(v, str | int | float)}
    values.update(
        rank=event.rank, host=event.host, pid=event.pid, message=event.message, file=event.loc.file, line=event.loc.line
    )
    values.update(groups)
    try:
        return _Safe().format(sig.summary, **values)
    except (ValueError, IndexError, KeyError):
        return sig.summary


def _gated(cond: Cond, sig: Signature) -> bool:
    """True when the condition cannot hold unless one of the signature's message/text patterns
    matches the event's line: then a prefilter may skip the signature for other lines."""
    if cond.op == "sel":
        return any(m.field in ("message", "text") for m in sig.selections.get(cond.name, ()))
    if cond.op == "and":
        return any(_gated(a, sig) for a in cond.args)
    if cond.op == "or":
        return all(_gated(a, sig) for a in cond.args)
    if cond.op in ("one", "all"):
        names = [n for n in sig.selections if cond.name == "them" or fnmatch.fnmatchcase(n, cond.name)]
        gated = [_gated(Cond(Op.SEL, n), sig) for n in names]
        return bool(gated) and (all(gated) if cond.op == "one" else any(gated))
    return False  # not: says nothing about what must match


_CORE_FIELDS = ("message", "text", "kind", "rank", "host", "pid", "file")


def _present(event: Event) -> frozenset[str]:
    """The fields of the event that hold a value a matcher can test (see _values_of)."""
    names = [n for n in _CORE_FIELDS if event.get(n) is not None]
    names += [k for k, v in event.fields.items() if v is not None and not (isinstance(v, list | tuple | set) and not v)]
    return frozenset(names)


def _fails(m: Matcher, kind: str, present: frozenset[str]) -> bool:
    """True when the matcher cannot hold for an event of this kind with these fields: a test of
    a field that it lacks, or a plain test of `kind` that this kind fails."""
    if "exists" in m.modifiers:
        return False
    if m.field not in present:
        return True
    if m.field != "kind" or not m.modifiers <= {"i"} or not all(isinstance(v, str) for v in m.values):
        return False
    return not any(kind == v.lower() for v in m.values)


def _line_gated(matchers: tuple[Matcher, ...]) -> bool:
    """True when the selection's first message/text matcher gave the signature a line pattern
    (loader._line_patterns): the selection cannot hold unless one of those patterns matches."""
    for m in matchers:
        if m.field in ("message", "text"):
            return "re" in m.modifiers or bool(m.modifiers & {"contains", "startswith", "endswith", "equals"}) or not m.modifiers
    return False


def _possible(cond: Cond, sig: Signature, kind: str, present: frozenset[str], line_hit: bool) -> bool:
    """False when the condition cannot hold for an event of this kind and these fields, whose
    line matched one of the signature's line patterns or not (`line_hit`): a selection it needs
    has a matcher that fails (_fails), or is gated by a line pattern that did not match. True
    says nothing."""
    if cond.op == "sel":
        matchers = sig.selections.get(cond.name, ())
        if not line_hit and _line_gated(matchers):
            return False
        return not any(_fails(m, kind, present) for m in matchers)
    if cond.op == "and":
        return all(_possible(a, sig, kind, present, line_hit) for a in cond.args)
    if cond.op == "or":
        return any(_possible(a, sig, kind, present, line_hit) for a in cond.args)
    if cond.op in ("one", "all"):
        names = [n for n in sig.selections if cond.name == "them" or fnmatch.fnmatchcase(n, cond.name)]
        possible = [_possible(Cond(Op.SEL, n), sig, kind, present, line_hit) for n in names]
        return any(possible) if cond.op == "one" else bool(names) and all(possible)
    return True  # not: says nothing about what must match (and its selections gave no line pattern)


class _Prefilter:
    """One multi-pattern scan over every event's line finds the signatures that can match it;
    the others are not evaluated (most events are matched by none). Signatures without such a
    line gate are evaluated only for the event kinds and fields their condition allows."""

    def __init__(self, sigs: list[Signature]) -> None:
        from analyzer.scan import Pattern, Scanner

        self.always = [s for s in sigs if not (s.line_patterns and _gated(s.condition, s))]
        self._always_for: dict[tuple[str, frozenset[str], frozenset[str]], list[Signature]] = {}
        gated = [s for s in sigs if s.line_patterns and _gated(s.condition, s)]
        self.by_id = {s.id: s for s in gated}
        self.always_ids = frozenset(s.id for s in self.always if s.line_patterns)
        scanned = gated + [s for s in self.always if s.line_patterns]
        self.scanner = Scanner([Pattern(rx, s.id, 0, icase) for s in scanned for rx, icase in s.line_patterns])

    def always_for(self, event: Event, hits: set[str]) -> list[Signature]:
        """The signatures without a line gate that can match an event of this kind and fields,
        whose line matched the line patterns of the signatures `hits`."""
        kind, present, hit = event.kind.value, _present(event), self.always_ids.intersection(hits)
        key = (kind, present, hit)
        sigs = self._always_for.get(key)
        if sigs is None:
            sigs = [s for s in self.always if _possible(s.condition, s, kind, present, s.id in hit)]
            self._always_for[key] = sigs
        return sigs

    def candidates(self, events: list[Event]) -> list[set[str] | None]:
        """Per event, the gated signatures whose patterns match its line (None: evaluate all)."""
        lines: list[bytes] = []
        multi: dict[int, set[str] | None] = {}
        for i, e in enumerate(events):
            if "\n" in e.message or "\n" in e.text or "\r" in e.message:
                # a text of several lines: the signatures whose patterns may match anywhere in it
                in_message, in_text = self.scanner.possible_owners(e.message), self.scanner.possible_owners(e.text)
                multi[i] = None if in_message is None or in_text is None else in_message | in_text
                lines += [b"", b""]
                continue
            lines += [e.message.encode("utf-8", "replace"), e.text.encode("utf-8", "replace")]
        hits = self.scanner.scan([b"\n".join(lines) + b"\n"]).hits if lines else []
        found: list[set[str] | None] = [set() for _ in events]
        for hit in hits:
            i = (hit.line_no - 1) // 2
            bucket = found[i]
            if bucket is not None:
                bucket.update(hit.owners)
        for i, possible in multi.items():
            found[i] = possible
        return found


_PREFILTERS: dict[tuple[int, ...], _Prefilter] = {}


def _prefilter(sigs: list[Signature]) -> _Prefilter:
    # keyed by the signatures themselves, not their ids: two databases with the same ids (the
    # shipped one and an edited copy loaded with `--dir`) must not share a prefilter, which
    # evaluates its own Signature objects; the cached prefilter holds every one of them, so no
    # other object can take their id() while it is cached
    key = tuple(id(s) for s in sigs)
    if key not in _PREFILTERS:
        _PREFILTERS.clear()
        _PREFILTERS[key] = _Prefilter(sigs)
    return _PREFILTERS[key]


def find(signatures: Iterable[Signature], events: Iterable[Event]) -> list[Finding]:
    """Every (signature, event) match, once per signature and file line."""
    sigs = list(signatures)
    evs = list(events)
    pre = _prefilter(sigs)
    order = {sig.id: i for i, sig in enumerate(sigs)}
    per_event = pre.candidates(evs)
    findings: list[Finding] = []
    seen: set[tuple[str, str, int | None]] = set()
    for event, names in zip(evs, per_event, strict=True):
        if names is None:
            candidates = sigs
        else:
            candidates = sorted(
                pre.always_for(event, names) + [pre.by_id[n] for n in names if n in pre.by_id], key=lambda s: order[s.id]
            )
        for sig in candidates:
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
                    scope=sig.scope,
                    ambiguous=sig.ambiguous,
                )
            )
    return findings
