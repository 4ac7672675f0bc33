"""JSON from a run dir, parsed with bounds: size, nesting depth (checked before parsing, so a
file of 2,000 nested `[` is refused instead of exhausting the recursion limit)."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
MAX_SIZE = 16 << 20

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class JSONLimit(ValueError):
    """Valid or not, the text is beyond the bounds and was not parsed."""


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects, strings left out (no recursion)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(accumulate(1 if c in "[{" else -1 for c in brackets))


def loads(text: str, max_depth: int = MAX_DEPTH, max_size: int = MAX_SIZE) -> Any:
    """json.loads within bounds; ValueError (JSONLimit, or json's own) when it cannot be had."""
    if len(text) > max_size:
        raise JSONLimit(f"JSON of {len(text)} characters, more than {max_size}")
    if nesting_depth(text) > max_depth:
        raise JSONLimit(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError as exc:  # cannot happen below MAX_DEPTH; stay safe anyway
        raise JSONLimit("JSON nested too deep") from exc
