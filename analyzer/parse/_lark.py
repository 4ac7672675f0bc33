"""Loading of the Lark grammars, compiled once per process.

Building an LALR parser from a grammar costs tens to hundreds of milliseconds, which is most of a
small analysis. The built parser is cached in the user's own cache directory (created 0700,
keyed by a hash of the grammar and options) so later runs load it instead of building it; when
no private cache directory can be made, nothing is cached.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark

from analyzer.paths import grammar_path


def _cache_dir() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "postmortem" / "lark"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = path.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None  # never load a cache someone else could have written
        return path
    except OSError:
        return None


@cache
def load_parser(stem: str, start: str = "start", parser: str = "lalr", **options: Any) -> Lark:
    """The compiled parser of grammars/<stem>.lark."""
    text = grammar_path(stem).read_text(encoding="utf-8")
    kwargs: dict[str, Any] = dict(start=start, parser=parser, maybe_placeholders=False, **options)
    directory = _cache_dir() if parser == "lalr" else None
    if directory is not None and not os.environ.get("POSTMORTEM_NO_GRAMMAR_CACHE"):
        key = hashlib.sha256((text + repr(sorted(kwargs.items()))).encode()).hexdigest()[:24]
        kwargs["cache"] = str(directory / f"{stem}-{key}.lark")
    return Lark(text, **kwargs)
