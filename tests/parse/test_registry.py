"""The parser registry: one PARSER per log family, and what it drives."""

from __future__ import annotations

from pathlib import Path

from analyzer.events.ingest import ingest
from analyzer.model import EventKind, SourceKind, SourceStatus
from analyzer.parse.registry import ALIASES, LINE_PARSERS, by_name, for_source, names, parsers
from analyzer.paths import grammar_path
from analyzer.sources.discover import discover

from ..conftest import EXTERNAL


def test_every_family_has_a_parser_with_its_grammar() -> None:
    assert list(parsers()) == list(LINE_PARSERS)
    for stem, p in parsers().items():
        assert p.stem == stem and p.triggers and p.source_kinds
        assert grammar_path(stem).is_file(), stem


def test_names_and_aliases() -> None:
    assert set(names()) == set(LINE_PARSERS) | set(ALIASES)
    assert by_name("gdb").stem == "gdb_backtrace" and by_name("kernel").stem == "dmesg"


def test_whole_file_kinds() -> None:
    assert {k for k in SourceKind if (p := for_source(k)) is not None and p.whole_file is not None} == {
        SourceKind.ELASTIC_ERROR,
        SourceKind.GDB_BACKTRACE,
    }


def test_ingest_reads_a_saved_backtrace_whole(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "crash.bt").write_bytes((EXTERNAL / "satyr" / "gdb_stacktraces" / "rhbz-803600").read_bytes())
    sources = discover(run)
    assert [s.kind for s in sources] == [SourceKind.GDB_BACKTRACE]
    got = ingest(sources, scanner=None)  # type: ignore[arg-type]  # a whole-file kind never scans
    assert [e.kind for e in got.events] == [EventKind.BACKTRACE]
    assert got.events[0].fields["source_kind"] == "gdb_backtrace"
    assert got.sources[0].status is SourceStatus.PARSED


def test_a_broken_error_json_is_an_error_with_its_text_kept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "error.json").write_text('{"message": "x", "extraInfo": ')
    got = ingest(discover(run), scanner=None)  # type: ignore[arg-type]
    assert got.sources[0].status is SourceStatus.ERROR and got.sources[0].note == "invalid JSON"
    assert [e.kind for e in got.events] == [EventKind.UNPARSED]
