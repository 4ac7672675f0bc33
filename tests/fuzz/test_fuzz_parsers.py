"""Property tests of every parser that reads text from a run dir: whatever the input, each
returns its documented result type and never raises. Budgets: the `ci` profile by default,
`--hypothesis-profile=long` for a longer run (see tests/conftest.py)."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given
from hypothesis import strategies as st

from analyzer.events.clock import format_time, parse_time, year_of
from analyzer.model import Event, SourceKind
from analyzer.parse import dmesg, nccl, python_traceback, torchelastic
from analyzer.parse.base import Region
from analyzer.parse.condition import ConditionError, parse_condition
from analyzer.parse.gdb_backtrace import parse_text as gdb_parse_text
from analyzer.parse.gdb_event import fault_from_text
from analyzer.parse.prefix import split_prefix
from analyzer.parse.registry import parsers, region_parser
from analyzer.sources import safe_json
from analyzer.sources.coredump import _frame, parse_mappings
from analyzer.sources.discover import sniff
from analyzer.sources.gdbmi import mi_record

from .strategies import log_line, log_lines

STEMS = sorted(parsers())


@given(st.sampled_from(STEMS), log_lines(), st.integers(1, 10**6))
def test_every_region_parser(stem: str, lines: list[str], start: int) -> None:
    events = region_parser(stem)(Region("f.log", start, tuple(lines), stem))
    assert isinstance(events, list) and all(isinstance(e, Event) for e in events)
    for e in events:
        assert e.loc.line is None or e.loc.line >= start


@given(st.lists(log_line(), max_size=30).map("\n".join))
def test_whole_text_parsers(text: str) -> None:
    assert isinstance(python_traceback.parse_text(text), list)
    assert isinstance(nccl.parse_text(text), dict)
    assert isinstance(dmesg.parse_text(text), dict)
    json.dumps(dmesg.parse_text(text))
    with contextlib.suppress(ValueError):  # not a backtrace: said so, as ingest notes it
        gdb_parse_text(text)
    assert isinstance(fault_from_text(text), dict)


@given(st.text(max_size=120))
def test_condition_grammar(text: str) -> None:
    with contextlib.suppress(ConditionError):
        parse_condition(text)


@given(st.binary(max_size=4096), st.text(max_size=40))
def test_sniffer_on_bytes(head: bytes, name: str) -> None:
    assert isinstance(sniff(head, name), SourceKind)


@given(log_lines(40).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")), st.sampled_from(["x.log", "dmesg", "a.bt"]))
def test_sniffer_on_logs(head: bytes, name: str) -> None:
    assert isinstance(sniff(head, name), SourceKind)


@given(log_line())
def test_prefix_parser(line: str) -> None:
    p = split_prefix(line)
    assert isinstance(p.message, str) and p.message in line or p.message.strip() in line
    assert p.rank is None or isinstance(p.rank, int)


@given(
    st.one_of(
        st.none(), log_line(), st.from_regex(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", fullmatch=True)
    )
)
def test_clock_parsers(text: str | None) -> None:
    t, approx = parse_time(text)
    assert t is None or isinstance(t, float)
    assert isinstance(approx, bool)
    format_time(t)
    y = year_of(text)
    assert y is None or isinstance(y, int)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["message", "extraInfo", "py_callstack", "timestamp", "errorTraits", "x"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@given(_JSON)
def test_error_json_structures(value: object) -> None:
    events = torchelastic.parse_error_json(json.dumps(value), "error.json", None, None)
    assert len(events) == 1 and isinstance(events[0], Event)
    assert events[0].time is None or 0 < events[0].time < 1e10


@given(st.text(max_size=300))
def test_error_json_text(text: str) -> None:
    assert len(torchelastic.parse_error_json(text, "error.json", 0, None)) == 1


@given(st.integers(0, 5000), st.sampled_from("[{"))
def test_json_depth_is_bounded(depth: int, bracket: str) -> None:
    close = "]" if bracket == "[" else "}"
    body = (bracket if bracket == "[" else '{"a":') * depth + "1" + close * depth
    try:
        safe_json.loads(body)
    except safe_json.JSONLimit:
        assert depth > safe_json.MAX_DEPTH


@given(st.text(max_size=300))
def test_gdb_mi_reader(line: str) -> None:
    rec = mi_record(line.encode("utf-8", "surrogatepass"))
    assert isinstance(rec, dict)


_MI_VALUE = st.one_of(st.none(), st.text(max_size=20), st.integers(), st.sampled_from(["0x4005d6", "??", "²", "12", "-1"]))


@given(st.dictionaries(st.sampled_from(["func", "file", "line", "from", "addr", "level", "fullname"]), _MI_VALUE))
def test_gdb_mi_frames(raw: dict[str, object]) -> None:
    f = _frame(raw)
    assert f.line is None or isinstance(f.line, int)


@given(st.lists(log_line(), max_size=20).map("\n".join))
def test_gdb_mappings(text: str) -> None:
    assert isinstance(parse_mappings(text), list)
