"""Shared test helpers: where the repository and the shared reference data are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    env = os.environ.get("POSTMORTEM_SHARED")
    for candidate in ([Path(env)] if env else []) + [REPO.parent / "shared"]:
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if path is None:
        pytest.skip("../shared (the satyr reference data) is not next to the repository; set POSTMORTEM_SHARED to run this test")
    return path
