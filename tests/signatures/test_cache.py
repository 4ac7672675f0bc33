"""The parsed signature database is cached (JSON, private dir) and never served stale."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analyzer.signatures.loader import load_all

from ..conftest import REPO


def test_cache_is_used_and_invalidated_by_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("POSTMORTEM_NO_CACHE", raising=False)
    root = tmp_path / "signatures"
    shutil.copytree(REPO / "signatures", root)
    first, problems = load_all(root)
    assert not problems and list((tmp_path / "cache" / "postmortem" / "signatures").glob("*.json"))
    second, _ = load_all(root)
    assert [s.title for s in second] == [s.title for s in first]
    target = root / "shm" / "shm.dataloader_worker_bus_error.yaml"
    target.write_text(target.read_text().replace("title: DataLoader worker killed by a Bus error", "title: Edited title"))
    third, _ = load_all(root)
    assert any(s.title == "Edited title" for s in third)
