"""Shared test helpers: where the repository and its third-party reference data are; the
suite's own cache directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# fuzz budgets: `ci` (the default) is bounded so the suite stays quick; `long` is for a run on
# demand: python -m pytest tests/fuzz --hypothesis-profile=long --hypothesis-show-statistics
_FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=40, derandomize=True, **_FUZZ)  # type: ignore[arg-type]
settings.register_profile("long", max_examples=3000, **_FUZZ)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("POSTMORTEM_HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
_CACHE: str | None = None


def write_run(run: Path, files: dict[str, str]) -> Path:
    """A run dir at `run` holding these files (relative name -> text)."""
    for name, text in files.items():
        path = run / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return run


def traceback_of(exc_line: str, code: str = "main()") -> str:
    """A Python traceback of one frame in /app/train.py that ends in `exc_line`."""
    return f'Traceback (most recent call last):\n  File "/app/train.py", line 12, in <module>\n    {code}\n{exc_line}\n'


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
