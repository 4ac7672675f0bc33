"""Loading of the Lark grammars, compiled once per process.

Building an LALR parser from a grammar costs tens to hundreds of milliseconds, which is most of a
small analysis. The built parser is cached in the user's own cache directory (created 0700,
keyed by a hash of the grammar and options) so later runs load it instead of building it; when
no private cache directory can be made, nothing is cached.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

from lark import Lark

from analyzer.paths import cache_dir, grammar_path


@cache
def load_parser(stem: str, start: str = "start", parser: str = "lalr", **options: Any) -> Lark:
    """The compiled parser of grammars/<stem>.lark."""
    text = grammar_path(stem).read_text(encoding="utf-8")
    kwargs: dict[str, Any] = dict(start=start, parser=parser, maybe_placeholders=False, **options)
    directory = cache_dir("lark") if parser == "lalr" else None
    if directory is not None:
        key = hashlib.sha256((text + repr(sorted(kwargs.items()))).encode()).hexdigest()[:24]
        kwargs["cache"] = str(directory / f"{stem}-{key}.lark")
    return Lark(text, **kwargs)
