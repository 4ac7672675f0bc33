"""`signatures check` reports a selection on a field that the event kinds do not declare."""

from __future__ import annotations

from dataclasses import replace

from analyzer.signatures.fields import field_problems
from analyzer.signatures.loader import Matcher, Signature, database


def _sig(*matchers: Matcher) -> Signature:
    return replace(database()[0], selections={"sel": matchers})


def test_the_database_selects_only_declared_fields() -> None:
    assert field_problems(database()) == []


def test_an_unknown_field_is_a_problem() -> None:
    problems = field_problems([_sig(Matcher("exception_tpye", frozenset(), ("ValueError",)))])
    assert len(problems) == 1 and "'exception_tpye' is not declared for any kind" in problems[0].message


def test_a_field_of_another_kind_is_a_problem() -> None:
    sig = _sig(Matcher("kind", frozenset(), ("xid",)), Matcher("exception_type", frozenset(), ("ValueError",)))
    problems = field_problems([sig])
    assert [p.message for p in problems] == ["selection 'sel': field 'exception_type' is not declared for kind xid"]
    ok = _sig(Matcher("kind", frozenset(), ("traceback",)), Matcher("exception_type", frozenset(), ("ValueError",)))
    assert field_problems([ok]) == []


def test_an_unknown_kind_is_a_problem() -> None:
    problems = field_problems([_sig(Matcher("kind", frozenset(), ("tracebak",)))])
    assert any("not an event kind" in p.message for p in problems)
