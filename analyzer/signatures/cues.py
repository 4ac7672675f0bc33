"""The cue table (signatures/cues.yaml): the words a failure line uses for its cause.

A signature knows one emitter's message; a cue knows a cause's vocabulary ("No space left on
device", "shared memory", "peer access", "undefined symbol"), which every emitter shares. The
classifier reads cues only for failures that no signature names (analyzer/classify/cues.py).

`cues()` is the table in file order; `strongest(text)` the strongest cue a line's words match,
with its match; a cue that `says_failure` is also a scan pattern (`scan_patterns()`), so that
such a line is read even when it holds no "error" word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from analyzer.model import Category
from analyzer.paths import read_yaml, signatures_dir
from analyzer.signatures.loader import Problem, load_taxonomy

CUES = "cues"  # the issue type of `postmortem signatures check`
_KEYS = ("id", "category", "weight", "says_failure", "re", "source", "remediation", "tests")


@dataclass(frozen=True, slots=True)
class Cue:
    id: str
    category: Category
    weight: float
    says_failure: bool
    regex: re.Pattern[str]
    remediation: tuple[str, ...]
    order: int  # its place in the file: ties between equal weights go to the earlier cue
    reads: str = "line"  # line | frames: what `regex` reads (see cues.yaml)


class CueTableError(ValueError):
    """cues.yaml is malformed (the message names the entry); `postmortem signatures check` lists every issue."""


def _path(root: Path | None = None) -> Path:
    return (root or signatures_dir()) / "cues.yaml"


def _entries(data: Any) -> list[Any]:
    entries = data.get("cues") if isinstance(data, dict) else None
    return entries if isinstance(entries, list) else []


@cache
def cues() -> tuple[Cue, ...]:
    """The shipped table, in file order (an invalid entry raises CueTableError)."""
    path = _path()
    if not path.is_file():
        return ()
    out = []
    for i, raw in enumerate(_entries(read_yaml(path))):
        try:
            out.append(
                Cue(
                    id=str(raw["id"]),
                    category=Category(str(raw["category"])),
                    weight=float(raw["weight"]),
                    says_failure=bool(raw.get("says_failure", False)),
                    regex=re.compile(str(raw["re"])),
                    remediation=tuple(str(r) for r in raw.get("remediation") or ()),
                    order=i,
                    reads=str(raw.get("in", "line")),
                )
            )
        except (KeyError, TypeError, ValueError, re.error) as exc:
            raise CueTableError(f"cues.yaml entry {i + 1}: {exc}") from exc
    return tuple(out)


@cache
def _ranked() -> tuple[Cue, ...]:
    """The table strongest first (ties: file order), the order every look-up takes."""
    return tuple(sorted(cues(), key=lambda c: (-c.weight, c.order)))


def strongest(text: str, reads: str = "line", failure_only: bool = False) -> tuple[Cue, re.Match[str]] | None:
    """The strongest cue whose words the text holds, with its match (ties: file order); `reads`:
    what the text is (a failure line, or a traceback's innermost frames); `failure_only`: only
    cues whose words report a failure by themselves."""
    for c in _ranked():
        if c.reads == reads and (c.says_failure or not failure_only):
            m = c.regex.search(text)
            if m:
                return c, m
    return None


def says_failure(text: str) -> Cue | None:
    """The strongest cue of the text whose words by themselves report a failure, if any."""
    found = strongest(text, failure_only=True)
    return found[0] if found else None


def scan_patterns() -> list[tuple[str, bool]]:
    """(regex, ignore_case) scan patterns: the cues whose words report a failure by themselves."""
    return [(c.regex.pattern, False) for c in cues() if c.says_failure and c.reads == "line"]


def validate_cue_table(root: Path | None = None) -> list[Problem]:
    """Every issue of cues.yaml: YAML, keys, ids, categories, weights, regexes, tests."""
    path = _path(root)
    base = root or signatures_dir()
    rel = path.relative_to(base.parent).as_posix()
    if not path.is_file():
        return []
    from analyzer.signatures.validators import read_table

    node, data, unread = read_table(path, rel, CUES)
    if unread:
        return unread
    taxonomy = load_taxonomy(base)
    out: list[Problem] = []
    seen: set[str] = set()
    items = _entries(data)
    if not items:
        return [Problem(rel, 1, "cues.yaml needs a `cues` list of entries", CUES)]
    for i, raw in enumerate(items):
        line = _item_line(node, i)
        where = f"cue {raw.get('id', i + 1) if isinstance(raw, dict) else i + 1}"

        def issue(message: str, line: int | None = line, where: str = where) -> None:
            out.append(Problem(rel, line, f"{where}: {message}", CUES))

        if not isinstance(raw, dict):
            issue("the entry must be a mapping")
            continue
        for key in _KEYS:
            if key not in raw:
                issue(f"missing key {key!r}")
        cid, cat = str(raw.get("id", "")), str(raw.get("category", ""))
        if cid in seen:
            issue("duplicate id")
        seen.add(cid)
        if cat not in taxonomy or cat in ("unknown", "none"):
            issue(f"category {cat!r} is not a cause category of taxonomy.yaml")
        elif not cid.startswith(f"{cat}."):
            issue(f"the id must start with its category ({cat}.)")
        weight = raw.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1:
            issue("weight must be a number in (0, 1]")
        try:
            rx = re.compile(str(raw.get("re", "")))
        except re.error as exc:
            issue(f"regex does not compile: {exc}")
            continue
        if rx.search(""):
            issue("the regex matches the empty line")
        if raw.get("in", "line") not in ("line", "frames"):
            issue("`in` must be `line` or `frames`")
        elif raw.get("in") == "frames" and raw.get("says_failure"):
            issue("a cue that reads frames cannot say a failure by itself")
        tests: dict[str, Any] = raw["tests"] if isinstance(raw.get("tests"), dict) else {}
        if not tests.get("match"):
            issue("needs at least one `match` test")
        for t in tests.get("match") or ():
            if not rx.search(str(t)):
                issue(f"match test does not match: {t!r}")
        for t in tests.get("no_match") or ():
            if rx.search(str(t)):
                issue(f"no_match test matches: {t!r}")
    return out


def _item_line(node: yaml.Node | None, index: int) -> int | None:
    """The 1-based line of the index-th entry of the `cues` list."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if getattr(key, "value", None) == "cues" and isinstance(value, yaml.SequenceNode) and index < len(value.value):
            return int(value.value[index].start_mark.line) + 1
    return None
