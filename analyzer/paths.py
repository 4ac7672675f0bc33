"""The one module that knows where the data files (grammars/, signatures/) live.

In a source checkout they sit at the top of the repository; in an installed wheel they are
carried inside the package (hatchling force-include maps them to analyzer/_data/).
"""

from __future__ import annotations

import os
import stat
from functools import cache
from pathlib import Path
from typing import Any

_PKG = Path(__file__).resolve().parent


@cache
def data_root() -> Path:
    for candidate in (_PKG / "_data", _PKG.parent):
        if (candidate / "grammars").is_dir() and (candidate / "signatures").is_dir():
            return candidate
    raise FileNotFoundError("grammars/ and signatures/ not found next to the analyzer package")


def grammar_path(stem: str) -> Path:
    return data_root() / "grammars" / f"{stem}.lark"


def signatures_dir() -> Path:
    return data_root() / "signatures"


def read_yaml(path: Path) -> Any:
    """A YAML data file of our own (safe loading; libyaml's loader when it is there: several of
    these files are read by every analysis and the pure-Python loader took a tenth of a second)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)


def report_schema_path() -> Path:
    return _PKG / "report" / "report.schema.json"


def cache_dir(kind: str) -> Path | None:
    """A private cache directory (created 0700, owned by the user) for built artefacts of our own
    data: compiled grammars, the compiled scan database. None when there is none to be had, or
    when POSTMORTEM_NO_CACHE is set; nothing from a run dir is ever cached.

    Every directory on the way (after symlinks are resolved) must be owned by the user or root
    and not writable by group or others, except a sticky one such as /tmp, where nobody else can
    rename or remove what the user made: otherwise someone else could swap the entries."""
    if os.environ.get("POSTMORTEM_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "postmortem" / kind
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        real = path.resolve(strict=True)
        if not all(_private_dir(d, last=d == real) for d in (real, *real.parents)):
            return None  # never load a cache someone else could have written
        return real
    except (OSError, RuntimeError):
        return None


def _private_dir(path: Path, last: bool) -> bool:
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (os.getuid(), 0):
        return False
    if last:
        return st.st_uid == os.getuid() and not st.st_mode & 0o022
    return not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX)
