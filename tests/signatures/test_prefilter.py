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
    events, _ = normalize(ingest(discover(case.parent), build_scanner(line_patterns(sigs))).events)
    fast = {(f.signature, f.event.loc.file, f.event.loc.line) for f in find(sigs, events)}
    slow = {(s.id, e.loc.file, e.loc.line) for e in events for s in sigs if match_event(s, e) is not None}
    assert fast == slow


def test_a_database_with_the_same_ids_gets_its_own_prefilter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An edited copy of the database (same ids, other patterns) is matched with its own
    signatures, not those of the database the prefilter was first built for."""
    import shutil

    from analyzer.model import Event, EventKind, Location
    from analyzer.paths import signatures_dir
    from analyzer.signatures.loader import load_all

    copy = tmp_path / "signatures"
    shutil.copytree(signatures_dir(), copy)
    nan = copy / "user_code" / "user_code.nan_loss.yaml"
    text = nan.read_text(encoding="utf-8")
    kept = [ln for ln in text.splitlines() if "(?:=|[ \\t]+)(?:tensor" not in ln]
    assert len(kept) == len(text.splitlines()) - 1
    nan.write_text("\n".join(kept) + "\n", encoding="utf-8")
    edited, _ = load_all(copy, validate=False)
    line = "epoch 1, iteration 0, loss nan"
    events = [Event(EventKind.LINE, Location("train.log", 1), line, line)]

    def fired(sigs) -> set[str]:  # type: ignore[no-untyped-def]
        return {f.signature for f in find(list(sigs), events)}

    assert "user_code.nan_loss" in fired(database())
    assert "user_code.nan_loss" not in fired(edited)
    assert "user_code.nan_loss" in fired(database())
