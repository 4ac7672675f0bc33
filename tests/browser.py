"""A real headless chromium for the tests of HTML pages: the page's DOM as laid out, a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser() -> str:
    """The chromium to use; the test is skipped where there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")


def dump_dom(page: Path, profile: Path, *extra: str) -> str:
    """The DOM chromium builds for `page` (a fresh profile directory each call)."""
    cmd = [browser(), *FLAGS, f"--user-data-dir={profile}", *extra, "--dump-dom", page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout


def screenshot(page: Path, shot: Path, profile: Path) -> bytes:
    """A 1200x900 screenshot of `page` written to `shot`; its bytes."""
    cmd = [browser(), *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120)
    return shot.read_bytes()
