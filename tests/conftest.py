"""Shared test helpers: where the repository and its third-party reference data are; the
suite's own cache directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_CACHE: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """The suite never reads or writes the user's cache: compiled scanners and the parsed
    signature database go to a private directory (0700) removed at the end; subprocesses that
    the tests start inherit it."""
    global _CACHE
    _CACHE = tempfile.mkdtemp(prefix="postmortem-test-cache-")
    os.environ["XDG_CACHE_HOME"] = _CACHE


def pytest_unconfigure(config: pytest.Config) -> None:
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)


EXTERNAL = REPO / "tests" / "fixtures" / "external"


@pytest.fixture
def external() -> Path:
    """Third-party reference data kept in the repository (tests/fixtures/external/PROVENANCE.md)."""
    return EXTERNAL
