"""Every parser fills only the fields its event kind declares (analyzer/model/fields.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.events.ingest import build_scanner, events_from_text
from analyzer.model import Event, EventKind, Location
from analyzer.model.fields import FIELDS, undeclared
from analyzer.pipeline import collect
from analyzer.signatures.loader import database, line_patterns

from ..conftest import REPO

FIXTURES = sorted(p for p in (REPO / "tests" / "fixtures" / "parse").rglob("*") if p.is_file() and p.suffix != ".source")


def _check(events: list[Event]) -> list[str]:
    return [f"{e.loc.file}:{e.loc.line} {e.kind}: {bad}" for e in events if (bad := undeclared(e.kind, e.fields))]


def test_every_kind_is_declared() -> None:
    assert set(FIELDS) == set(EventKind)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_parser_fixture_fields_are_declared(path: Path) -> None:
    scanner = build_scanner(line_patterns(database()))
    events = events_from_text(path.read_text(encoding="utf-8", errors="replace"), scanner, path.name)
    assert _check(events) == []


@pytest.mark.parametrize("example", sorted(p for p in (REPO / "examples").iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_example_fields_are_declared(example: Path) -> None:
    assert _check(collect(example).events) == []


def test_signature_test_lines_give_declared_fields() -> None:
    scanner = build_scanner(line_patterns(database()))
    bad: list[str] = []
    for sig in database():
        for case in (*sig.tests.get("match", ()), *sig.tests.get("no_match", ())):
            if isinstance(case, str):
                bad += _check(events_from_text(case, scanner, sig.id))
    assert bad == []


def test_fields_are_read_only() -> None:
    e = Event(EventKind.LINE, Location("x", 1), "t", fields={"generic": True})
    with pytest.raises(TypeError):
        e.fields["generic"] = False
