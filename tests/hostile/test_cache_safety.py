"""Caches never run code and are never taken from a place someone else can write."""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path

import pytest

from analyzer.cachefile import read_entry, write_entry
from analyzer.parse import _lark
from analyzer.paths import cache_dir


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path / "cache"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(base))
    monkeypatch.delenv("POSTMORTEM_NO_CACHE", raising=False)
    _lark.load_parser.cache_clear()
    yield base
    _lark.load_parser.cache_clear()


def test_a_pickle_payload_in_the_grammar_cache_runs_nothing(private_cache: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    lark_dir = private_cache / "postmortem" / "lark"
    _lark.load_parser("condition")  # creates the entries under their real names
    _lark.load_parser.cache_clear()
    names = [p.name for p in lark_dir.iterdir()]
    assert names
    payload = b"0" * 64 + b"\n" + pickle.dumps(_Payload(marker))
    # every entry, and every name an older layout (Lark's own pickled `cache=`) would read
    for name in names + [n.rsplit(".", 1)[0] + ".lark" for n in names]:
        (lark_dir / name).write_bytes(payload)
        os.chmod(lark_dir / name, 0o600)
    parser = _lark.load_parser("condition")
    assert not marker.exists()
    assert parser.parse("a and b") is not None


def test_a_tampered_entry_is_rebuilt_with_a_warning(private_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    _lark.load_parser("condition")
    _lark.load_parser.cache_clear()
    (entry,) = (private_cache / "postmortem" / "lark").glob("condition-*.json")
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b'"d"', b'"D"', 1))
    with caplog.at_level(logging.WARNING, logger="analyzer.cache"):
        parser = _lark.load_parser("condition")
    assert "does not match its hash" in caplog.text
    assert parser.parse("a and b") is not None
    assert read_entry(entry.parent, entry.name) is not None  # rebuilt


def test_an_entry_others_can_write_is_not_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    write_entry(d, "x.json", b"{}")
    assert read_entry(d, "x.json") == b"{}"
    os.chmod(d / "x.json", 0o666)
    with caplog.at_level(logging.WARNING, logger="analyzer.cache"):
        assert read_entry(d, "x.json") is None
    assert "writable by others" in caplog.text
    write_entry(d, "y.json", b"{}")
    os.symlink(d / "y.json", d / "z.json")
    assert read_entry(d, "z.json") is None  # never followed


def test_an_entry_owned_by_someone_else_is_not_used(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a file away")
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    write_entry(d, "x.json", b"{}")
    os.chown(d / "x.json", 65534, 65534)
    assert read_entry(d, "x.json") is None


def test_every_directory_on_the_cache_path_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POSTMORTEM_NO_CACHE", raising=False)
    open_parent = tmp_path / "shared"
    (open_parent / "cache").mkdir(parents=True, mode=0o700)
    os.chmod(open_parent, 0o777)  # anyone could rename `cache` away and put their own in its place
    monkeypatch.setenv("XDG_CACHE_HOME", str(open_parent / "cache"))
    assert cache_dir("lark") is None
    os.chmod(open_parent, 0o1777)  # sticky, like /tmp: only the owner may rename or remove
    assert cache_dir("lark") is not None


def test_a_symlinked_cache_path_is_checked_where_it_leads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POSTMORTEM_NO_CACHE", raising=False)
    elsewhere = tmp_path / "open"
    elsewhere.mkdir()
    os.chmod(elsewhere, 0o777)
    (elsewhere / "real").mkdir(mode=0o700)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "cache").symlink_to(elsewhere / "real")
    monkeypatch.setenv("XDG_CACHE_HOME", str(mine / "cache"))
    assert cache_dir("scan") is None


def test_a_tampered_scan_database_is_not_loaded(private_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    from analyzer.scan import scanner as scan_mod

    if not scan_mod.HAVE_HYPERSCAN:
        pytest.skip("hyperscan is not installed here")
    patterns = [scan_mod.Pattern(r"CUDA out of memory", "signatures")]
    scan_mod.Scanner(patterns)
    (db,) = (private_cache / "postmortem" / "scan").glob("*.hsdb")
    raw = bytearray(db.read_bytes())
    raw[-40] ^= 0xFF
    db.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="analyzer.cache"):
        again = scan_mod.Scanner(patterns)
    assert "does not match its hash" in caplog.text
    assert [h.line_no for h in again.scan([b"a\nCUDA out of memory\n"]).hits] == [2]
