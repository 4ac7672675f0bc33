"""The matcher's prefilter (one multi-pattern scan over all events' lines) finds exactly what
evaluating every signature on every event finds."""

from __future__ import annotations

import pytest

from analyzer.events.ingest import build_scanner, ingest
from analyzer.events.normalize import normalize
from analyzer.signatures.loader import database, line_patterns
from analyzer.signatures.matcher import find, match_event
from analyzer.sources.discover import discover

from ..conftest import REPO

CASES = sorted((REPO / "corpora").glob("*/*/case.yaml"))[::7]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.parent.name)
def test_prefiltered_find_equals_exhaustive(case) -> None:  # type: ignore[no-untyped-def]
    sigs = list(database())
    events = normalize(ingest(discover(case.parent), build_scanner(line_patterns(sigs))).events)
    fast = {(f.signature, f.event.loc.file, f.event.loc.line) for f in find(sigs, events)}
    slow = {(s.id, e.loc.file, e.loc.line) for e in events for s in sigs if match_event(s, e) is not None}
    assert fast == slow
