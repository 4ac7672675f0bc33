"""The compiled Hyperscan database is cached in a private directory and reused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analyzer.scan import scanner as scan_mod
from analyzer.scan.scanner import Pattern, Scanner

PATTERNS = [
    Pattern(r"CUDA out of memory", "signatures"),
    Pattern(r"Traceback \(most recent call last\):", "python_traceback", block=2),
    Pattern(r"(?<!except )OutOfMemoryError", "signatures"),
]
LOG = b'step 1\nTraceback (most recent call last):\n  File "t.py", line 1\ntorch.OutOfMemoryError: CUDA out of memory.\n'


def test_database_is_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not scan_mod.HAVE_HYPERSCAN:
        pytest.skip("hyperscan is not installed here")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("POSTMORTEM_NO_CACHE", raising=False)
    first = Scanner(PATTERNS)
    files = sorted(p.name for p in (tmp_path / "postmortem" / "scan").iterdir())
    assert any(f.endswith(".hsdb") for f in files) and any(f.endswith(".json") for f in files)
    assert oct((tmp_path / "postmortem" / "scan").stat().st_mode & 0o777) == "0o700"
    second = Scanner(PATTERNS)
    assert second.engine == "hyperscan" and [p.regex for p in second.prefiltered] == [p.regex for p in first.prefiltered]
    a = [(h.line_no, h.owners) for h in first.scan([LOG]).hits]
    b = [(h.line_no, h.owners) for h in second.scan([LOG]).hits]
    assert a == b and (4, ("signatures",)) in a


def test_a_cache_dir_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    shared = tmp_path / "postmortem" / "scan"
    shared.mkdir(parents=True)
    os.chmod(shared, 0o777)
    from analyzer.paths import cache_dir

    assert cache_dir("scan") is None
