"""Required literals of a regular expression: a set of byte strings one of which every match contains.

Used by the portable engine (no Hyperscan) to skip, cheaply, the patterns that cannot match a
chunk or a line: `any(lit in text for lit in required)` is a necessary condition for a match.
Only what is certain is extracted; when nothing is, the pattern is simply always run.
"""

from __future__ import annotations

import itertools
import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

_MAX_SET = 24  # most strings kept in a set built by concatenation
_MAX_BRANCH = 64  # most strings kept in the set of an alternation
_MIN_LEN = 3  # a set whose shortest string is shorter than this is not worth checking

# (exact, strings): exact=True means the node matches exactly one of `strings` (all of its
# text); exact=False means every match of the node contains one of `strings`. None: nothing known.
_Info = tuple[bool, frozenset[bytes]] | None
_EMPTY: _Info = (True, frozenset([b""]))


def _score(info: _Info) -> tuple[int, int]:
    if info is None or not info[1]:
        return (-1, 0)
    return (min(len(s) for s in info[1]), -len(info[1]))


def _best(cands: list[_Info]) -> _Info:
    best: _Info = None
    for cand in cands:
        if cand is not None and _score(cand) > _score(best):
            best = cand
    return best


def _char(code: int, icase: bool) -> frozenset[bytes]:
    b = chr(code).encode("utf-8")
    return frozenset([b.lower() if icase else b])


def _node(op: object, av: Any, icase: bool) -> _Info:
    if op is C.LITERAL:
        return (True, _char(av, icase))
    if op is C.IN:
        items = av
        if all(o is C.LITERAL for o, _ in items) and len(items) <= 8:
            return (True, frozenset().union(*(_char(a, icase) for _, a in items)))
        return None
    if op is C.AT or op in (C.ASSERT, C.ASSERT_NOT):
        return _EMPTY  # zero-width: contributes no text
    if op is C.SUBPATTERN:
        _group, add_flags, _del_flags, sub = av
        return _seq(sub, icase or bool(add_flags & re.IGNORECASE))
    if op is C.BRANCH:
        _, branches = av
        maybe = [_seq(b, icase) for b in branches]
        infos = [i for i in maybe if i is not None]
        if len(infos) < len(maybe):
            return None
        strings = frozenset().union(*(i[1] for i in infos))
        exact = all(i[0] for i in infos)
        if not exact:  # a string that contains another one of the set adds nothing
            strings = frozenset(s for s in strings if not any(t != s and t in s for t in strings))
        if len(strings) > _MAX_BRANCH:
            return None
        return (exact, strings)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        info = _seq(sub, icase)
        if lo == 0 or info is None:
            return _EMPTY if hi == 0 else None
        if lo == hi == 1:
            return info
        return (False, info[1])
    if op is C.ATOMIC_GROUP:
        return _seq(av, icase)
    return None  # ANY, CATEGORY, NOT_LITERAL, GROUPREF, ...


def _seq(items: Any, icase: bool) -> _Info:
    cands: list[_Info] = []
    run: frozenset[bytes] | None = frozenset([b""])
    all_exact = True
    for op, av in items:
        info = _node(op, av, icase)
        if info is not None and info[0]:
            if run is not None:
                prod = frozenset(a + b for a, b in itertools.product(run, info[1]))
                if len(prod) <= _MAX_SET:
                    run = prod
                    continue
                cands.append((False, run))
            run = info[1] if len(info[1]) <= _MAX_SET else None
            all_exact = False
            continue
        all_exact = False
        if run is not None:
            cands.append((False, run))
        run = frozenset([b""])
        if info is not None:
            cands.append(info)
    if all_exact and run is not None:
        return (True, run)
    if run is not None:
        cands.append((False, run))
    return _best(cands)


def required_literals(regex: str, ignore_case: bool = False) -> tuple[frozenset[bytes], bool] | None:
    """(strings, caseless): every match of `regex` (as bytes) contains one of `strings`; when
    `caseless`, the strings are lower case and must be looked for in the lowered text. None when
    no useful set is known."""
    try:
        parsed = P.parse(regex, re.IGNORECASE if ignore_case else 0)
    except (re.error, RecursionError):
        return None
    caseless = ignore_case or bool(parsed.state.flags & re.IGNORECASE) or "(?i" in regex
    info = _seq(parsed.data, caseless)
    if info is None or _score(info)[0] < _MIN_LEN:
        return None
    strings = info[1]
    if caseless:
        strings = frozenset(s.lower() for s in strings)
    return strings, caseless
