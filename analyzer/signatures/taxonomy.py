"""The parts of signatures/taxonomy.yaml that the rules and the report read as data: which
category outranks which (`outranks`), and what to collect next time (`missing_evidence`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from analyzer.paths import read_yaml, signatures_dir


@dataclass(frozen=True, slots=True)
class Outranks:
    """One precedence rule: `winners` outrank `losers` (see taxonomy.yaml for the fields)."""

    name: str
    winners: tuple[str, ...]
    losers: tuple[str, ...]
    note: str
    min_confidence: float = 0.0
    loser_below: float | None = None
    loser_subcategories: tuple[str, ...] = ()
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Hint:
    """One missing-evidence hint and the conditions under which the report gives it."""

    name: str
    hint: str
    no_files: bool = False
    missing_source: str | None = None
    missing_event: tuple[str, ...] = ()
    missing_text: str | None = None
    present_text: str | None = None
    signatures: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()


@cache
def _read(root: Path | None) -> dict[str, Any]:
    data: dict[str, Any] = read_yaml((root or signatures_dir()) / "taxonomy.yaml")
    return data


def categories(root: Path | None = None) -> tuple[str, ...]:
    """Every category of the taxonomy, in its order."""
    return tuple(_read(root)["categories"])


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or ()))


@cache
def outranks(root: Path | None = None) -> tuple[Outranks, ...]:
    out = []
    for spec in _read(root).get("outranks") or ():
        below = spec.get("loser_below")
        out.append(
            Outranks(
                name=str(spec["name"]),
                winners=_tuple(spec.get("winners")),
                losers=_tuple(spec.get("losers")),
                note=str(spec["note"]),
                min_confidence=float(spec.get("min_confidence", 0.0)),
                loser_below=None if below is None else float(below),
                loser_subcategories=_tuple(spec.get("loser_subcategories")),
                when=spec.get("when"),
            )
        )
    return tuple(out)


@cache
def missing_evidence_hints(root: Path | None = None) -> tuple[Hint, ...]:
    out = []
    for spec in _read(root).get("missing_evidence") or ():
        out.append(
            Hint(
                name=str(spec["name"]),
                hint=str(spec["hint"]),
                no_files=bool(spec.get("no_files", False)),
                missing_source=spec.get("missing_source"),
                missing_event=_tuple(spec.get("missing_event")),
                missing_text=spec.get("missing_text"),
                present_text=spec.get("present_text"),
                signatures=_tuple(spec.get("signatures")),
                categories=_tuple(spec.get("categories")),
            )
        )
    return tuple(out)


def problems(root: Path | None = None) -> list[str]:
    """What is wrong with the outranks and missing_evidence sections: unknown categories,
    source kinds, event kinds or context names, duplicate names, missing fields."""
    from analyzer.model import EventKind, SourceKind

    cats = set(categories(root))
    out: list[str] = []
    try:
        rules, hints = outranks(root), missing_evidence_hints(root)
    except (KeyError, TypeError, ValueError) as exc:
        return [f"taxonomy.yaml: outranks/missing_evidence: {type(exc).__name__}: {exc}"]
    seen: set[str] = set()
    for r in rules:
        if r.name in seen:
            out.append(f"taxonomy.yaml: outranks: duplicate name {r.name!r}")
        seen.add(r.name)
        for c in (*r.winners, *r.losers):
            if c not in cats:
                out.append(f"taxonomy.yaml: outranks {r.name}: unknown category {c!r}")
        if r.when not in (None, "core_regular_file", "core_dev_shm"):
            out.append(f"taxonomy.yaml: outranks {r.name}: unknown context {r.when!r}")
        if not r.winners or not r.losers:
            out.append(f"taxonomy.yaml: outranks {r.name}: winners and losers must not be empty")
    seen.clear()
    for h in hints:
        if h.name in seen:
            out.append(f"taxonomy.yaml: missing_evidence: duplicate name {h.name!r}")
        seen.add(h.name)
        if h.missing_source is not None and h.missing_source not in set(SourceKind):
            out.append(f"taxonomy.yaml: missing_evidence {h.name}: unknown source kind {h.missing_source!r}")
        for k in h.missing_event:
            if k not in set(EventKind):
                out.append(f"taxonomy.yaml: missing_evidence {h.name}: unknown event kind {k!r}")
        for c in h.categories:
            if c not in cats:
                out.append(f"taxonomy.yaml: missing_evidence {h.name}: unknown category {c!r}")
    return out
