"""Loading of the Lark grammars, compiled once per process.

Building an LALR parser from a grammar costs tens to hundreds of milliseconds, which is most of a
small analysis. The built parser's tables are cached as JSON (never pickle: Lark's own `cache=`
unpickles its file) in the user's private cache directory, keyed by a hash of the grammar, the
options and Lark's version, and checked against their content hash before use (see
`analyzer.cachefile`). When no private cache directory can be made, nothing is cached.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from analyzer.cachefile import read_json, write_json
from analyzer.paths import cache_dir, grammar_path


def _encode(obj: Any) -> Any:
    """Lark's serialized tables as JSON: tuples and dicts (whose keys may be ints) are tagged."""
    if isinstance(obj, dict):
        return {"d": [[_encode(k), _encode(v)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"t": [_encode(v) for v in obj]}
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


def _decode(obj: dict[str, Any]) -> Any:
    """One tagged JSON object back to its dict or tuple (json's object_hook: called inside out,
    so its members are already decoded)."""
    if "d" in obj:
        return {k: v for k, v in obj["d"]}
    return tuple(obj["t"])


@cache
def load_parser(stem: str, start: str = "start", parser: str = "lalr", **options: Any) -> Lark:
    """The compiled parser of grammars/<stem>.lark."""
    text = grammar_path(stem).read_text(encoding="utf-8")
    kwargs: dict[str, Any] = dict(start=start, parser=parser, maybe_placeholders=False, **options)
    directory = cache_dir("lark") if parser == "lalr" and not options else None
    if directory is None:
        return Lark(text, **kwargs)
    key = hashlib.sha256((lark.__version__ + "\0" + text + repr(sorted(kwargs.items()))).encode()).hexdigest()[:24]
    name = f"{stem}-{key}.json"
    stored = read_json(directory, name, object_hook=_decode)
    if stored is not None:
        try:
            return Lark.load(stored)
        except Exception:  # a stale or odd entry (the hash matched: written by us): rebuild
            pass
    built = Lark(text, **kwargs)
    try:
        data, memo = built.memo_serialize([TerminalDef, Rule])
        write_json(directory, name, _encode({"data": data, "memo": memo}))
    except TypeError:
        pass
    return built
