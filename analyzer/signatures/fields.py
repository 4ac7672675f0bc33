"""Signature selections checked against the fields that events declare (model/fields.py)."""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.model import EventKind
from analyzer.model.fields import declared
from analyzer.signatures.loader import Problem, Signature


def field_problems(signatures: Iterable[Signature]) -> list[Problem]:
    """A problem for every selection on a field that no event kind the signature can match
    declares, and for every `kind` value that is not an event kind."""
    out: list[Problem] = []
    known = {str(k) for k in EventKind}
    for sig in signatures:
        kinds = {str(v) for ms in sig.selections.values() for m in ms if m.field == "kind" for v in m.values}
        for bad in sorted(kinds - known):
            out.append(Problem(sig.file, None, f"selection on kind {bad!r}: not an event kind"))
        allowed = declared([EventKind(k) for k in kinds & known] or None)
        for name, matchers in sig.selections.items():
            for m in matchers:
                if m.field not in allowed:
                    where = f"kind {', '.join(sorted(kinds))}" if kinds else "any kind"
                    out.append(Problem(sig.file, None, f"selection {name!r}: field {m.field!r} is not declared for {where}"))
    return out
