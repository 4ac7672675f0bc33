"""Crashes the fuzz tests found, kept as plain tests: a superscript digit is `isdigit()` but not
`int()`-able."""

from __future__ import annotations

from analyzer.model.native import signal_name
from analyzer.sources.coredump import _frame
from analyzer.sources.discover import rank_host_from_path


def test_gdb_mi_frame_with_a_superscript_level_or_line() -> None:
    assert _frame({"func": None, "level": "²"}).index is None
    assert _frame({"func": None, "line": "²"}).line is None
    assert _frame({"level": "3", "line": "12"}).index == 3


def test_a_superscript_directory_under_an_attempt_is_no_rank() -> None:
    assert rank_host_from_path("attempt_0/²/error.json") == (None, None)
    assert rank_host_from_path("attempt_0/3/error.json") == (3, None)


def test_a_superscript_signal_number() -> None:
    assert signal_name("²") == "²"
