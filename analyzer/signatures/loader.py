"""Loading and validating the signature database (signatures/<family>/<id>.yaml).

Validation is a set of small checks that each collect problems (with file and line) instead of
stopping at the first, so `postmortem signatures check` shows everything at once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from analyzer.cachefile import read_json, write_json
from analyzer.model import Category, Role, Scope
from analyzer.parse.condition import Cond, ConditionError, parse_condition
from analyzer.paths import cache_dir, read_yaml, signatures_dir

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MODIFIERS = {"contains", "startswith", "endswith", "re", "equals", "exists", "all", "i", "gte", "lte"}
REQUIRED = ("id", "title", "category", "subcategory", "role", "confidence", "source", "detection", "summary", "tests")


@dataclass(frozen=True, slots=True)
class Matcher:
    field: str
    modifiers: frozenset[str]
    values: tuple[Any, ...]

    def regexes(self) -> list[re.Pattern[str]]:
        """The compiled `re` values (compiled on first use; ones that do not compile never match)."""
        flags = re.I if "i" in self.modifiers else 0
        return [rx for v in self.values if (rx := compiled_regex(str(v), flags)) is not None]


@cache
def compiled_regex(pattern: str, flags: int) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, flags)
    except re.error:
        return None


@dataclass(frozen=True, slots=True)
class Source:
    """The program that prints what a signature matches: project, source file, versions read."""

    project: str
    file: str
    versions: tuple[str, ...]


def parse_sources(value: Any) -> tuple[Source, ...]:
    """The `source:` of a signature (one mapping or a list of them); malformed entries are left out
    (the schema validator reports them)."""
    out = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and item.get("project") and item.get("file"):
            versions = tuple(str(v) for v in _as_tuple(item.get("versions")))
            out.append(Source(str(item["project"]), str(item["file"]), versions))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Signature:
    id: str
    title: str
    category: Category
    subcategory: str
    role: Role
    confidence: float
    scope: Scope
    selections: dict[str, tuple[Matcher, ...]]
    condition: Cond
    summary: str
    remediation: tuple[str, ...]
    falsepositives: tuple[str, ...]
    references: tuple[str, ...]
    tests: dict[str, tuple[Any, ...]]
    file: str
    line_patterns: tuple[tuple[str, bool], ...]  # (regex, ignore_case) for the scan stage
    extra: dict[str, Any] = field(default_factory=dict)
    sources: tuple[Source, ...] = ()

    @property
    def standalone(self) -> bool:
        """A symptom that may decide the verdict when no root-cause signature fired."""
        return bool(self.extra.get("standalone"))

    @property
    def supports(self) -> bool:
        """A context line that makes its category a candidate cause of a failure found elsewhere
        (memory pressure before a crash that no line explains): never failure evidence itself."""
        return bool(self.extra.get("supports"))

    @property
    def ambiguous(self) -> bool:
        """A failure whose message, by its emitter's own definition, has causes in several
        categories (a CUDA kernel exception that names none): a verdict resting on it alone is
        `unknown`, with its category among the candidates (classify/combine.py)."""
        return bool(self.extra.get("ambiguous"))

    @property
    def last_words(self) -> bool:
        """A waiting or retrying message that counts only among the last lines of its file."""
        return bool(self.extra.get("last_words"))


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    line: int | None
    message: str
    code: str = ""  # the issue type (the validator that found it), e.g. "regex", "schema"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.code}: {self.message}" if self.code else f"{where}: {self.message}"


@cache
def _taxonomy_file(root: Path | None = None) -> dict[str, Any]:
    data: dict[str, Any] = read_yaml((root or signatures_dir()) / "taxonomy.yaml")
    return data


@cache
def load_taxonomy(root: Path | None = None) -> dict[str, set[str]]:
    """Category -> its sub-categories."""
    cats = _taxonomy_file(root)["categories"]
    return {cat: set((spec or {}).get("subcategories") or {}) for cat, spec in cats.items()}


def category_titles(root: Path | None = None) -> dict[str, str]:
    """Category -> its human title."""
    return {cat: (spec or {}).get("title", cat) for cat, spec in _taxonomy_file(root)["categories"].items()}


class _LazyLines:
    """Line numbers of the top-level keys, computed only when a problem needs one."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lines: dict[str, int] | None = None

    def get(self, key: str) -> int | None:
        if self._lines is None:
            try:
                self._lines = _key_lines(self._path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                self._lines = {}
        return self._lines.get(key)


def _key_lines(text: str) -> dict[str, int]:
    """Line (1-based) of each top-level key, for problem messages."""
    lines: dict[str, int] = {}
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return lines
    if isinstance(node, yaml.MappingNode):
        for key, _ in node.value:
            lines[str(key.value)] = key.start_mark.line + 1
    return lines


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)


def _compile_selection(
    name: str, spec: Any, where: str, line: Callable[[], int | None], problems: list[Problem], validate: bool = True
) -> tuple[Matcher, ...]:
    if not isinstance(spec, dict) or not spec:
        problems.append(Problem(where, line(), f"selection {name!r} must be a mapping of field|modifier: value"))
        return ()
    matchers = []
    for key, value in spec.items():
        fieldname, *mods = str(key).split("|")
        unknown = set(mods) - MODIFIERS
        if unknown:
            problems.append(Problem(where, line(), f"selection {name!r}: unknown modifier(s) {sorted(unknown)}"))
        values = _as_tuple(value)
        if "re" in mods and validate:
            for v in values:
                try:
                    re.compile(str(v), re.I if "i" in mods else 0)
                except re.error as exc:
                    problems.append(Problem(where, line(), f"selection {name!r}: regex {v!r} does not compile: {exc}"))
        matchers.append(Matcher(fieldname, frozenset(mods), values))
    return tuple(matchers)


def _line_patterns(selections: dict[str, tuple[Matcher, ...]], positive: set[str]) -> tuple[tuple[str, bool], ...]:
    out: list[tuple[str, bool]] = []
    for name in sorted(positive):
        for m in selections.get(name, ()):
            if m.field not in ("message", "text"):
                continue
            if "re" in m.modifiers:
                out.extend((str(v), "i" in m.modifiers) for v in m.values)
            elif m.modifiers & {"contains", "startswith", "endswith", "equals"} or not m.modifiers:
                out.extend((re.escape(str(v)), True) for v in m.values)
            break  # one line-level matcher per selection is enough to find its lines
    return tuple(out)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root.parent).as_posix() if root.parent in path.parents else str(path)


def read_file(path: Path, root: Path, problems: list[Problem]) -> Any:
    """The parsed YAML of one signature file (None, with a problem, when it cannot be read)."""
    rel = _rel(path, root)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(rel, None, f"cannot read: {exc}"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.append(Problem(rel, mark.line + 1 if mark else None, f"invalid YAML: {exc}"))
    return None


def load_file(
    path: Path, root: Path, taxonomy: dict[str, set[str]], problems: list[Problem], validate: bool = True, parsed: Any = None
) -> Signature | None:
    """One signature from its file (or from `parsed`, its already parsed YAML)."""
    rel = _rel(path, root)
    data = parsed if parsed is not None else read_file(path, root, problems)
    if data is None:
        return None
    if not isinstance(data, dict):
        problems.append(Problem(rel, 1, "a signature file must hold one mapping"))
        return None
    lines = _LazyLines(path)
    before = len(problems)
    for key in REQUIRED:
        if key not in data:
            problems.append(Problem(rel, None, f"missing required key {key!r}"))
    if len(problems) > before:
        return None
    sid = str(data["id"])
    if path.stem != sid:
        problems.append(Problem(rel, lines.get("id"), f"id {sid!r} differs from the file name {path.stem!r}"))
    cat = str(data["category"])
    if cat not in taxonomy:
        problems.append(Problem(rel, lines.get("category"), f"unknown category {cat!r}"))
        return None
    sub = str(data["subcategory"])
    if sub not in taxonomy[cat]:
        problems.append(
            Problem(rel, lines.get("subcategory"), f"subcategory {sub!r} is not listed under {cat!r} in taxonomy.yaml")
        )
    try:
        role = Role(str(data["role"]))
        scope = Scope(str(data.get("scope", "line")))
    except ValueError as exc:
        problems.append(Problem(rel, lines.get("role"), str(exc)))
        return None
    conf = data["confidence"]
    if not isinstance(conf, int | float) or not 0 < conf <= 1:
        problems.append(Problem(rel, lines.get("confidence"), "confidence must be a number in (0, 1]"))
        conf = 0.5
    detection = data["detection"]

    def dline() -> int | None:
        return lines.get("detection")

    if not isinstance(detection, dict) or "condition" not in detection:
        problems.append(Problem(rel, dline(), "detection needs named selections and a condition"))
        return None
    selections = {
        name: _compile_selection(name, spec, rel, dline, problems, validate)
        for name, spec in detection.items()
        if name != "condition"
    }
    try:
        cond = parse_condition(str(detection["condition"]))
    except ConditionError as exc:
        problems.append(Problem(rel, dline(), str(exc)))
        return None
    missing = {n for n in cond.referenced() if n not in selections}
    if missing:
        problems.append(Problem(rel, dline(), f"condition names unknown selection(s) {sorted(missing)}"))
    tests = data.get("tests") or {}
    if not isinstance(tests, dict) or not tests.get("match") or "no_match" not in tests:
        problems.append(Problem(rel, lines.get("tests"), "tests need at least one `match` and a `no_match` list"))
        tests = {"match": tests.get("match", []) if isinstance(tests, dict) else [], "no_match": []}
    names = list(selections)
    return Signature(
        id=sid,
        title=str(data["title"]),
        category=Category(cat),
        subcategory=sub,
        role=role,
        confidence=float(conf),
        scope=scope,
        selections=selections,
        condition=cond,
        summary=str(data["summary"]),
        remediation=tuple(str(r) for r in _as_tuple(data.get("remediation"))),
        falsepositives=tuple(str(r) for r in _as_tuple(data.get("falsepositives"))),
        references=tuple(str(r) for r in _as_tuple(data.get("references"))),
        tests={"match": _as_tuple(tests.get("match")), "no_match": _as_tuple(tests.get("no_match"))},
        file=rel,
        line_patterns=_line_patterns(selections, cond.positive_names(names)),
        sources=parse_sources(data["source"]),
        extra={
            k: v
            for k, v in data.items()
            if k not in REQUIRED and k not in ("scope", "remediation", "falsepositives", "references")
        },
    )


def signature_files(root: Path | None = None) -> Iterable[Path]:
    """Every signature file: <category>/<id>.yaml (emitters/ holds the message catalogs)."""
    base = root or signatures_dir()
    return sorted(p for p in base.rglob("*.yaml") if p.parent != base and p.relative_to(base).parts[0] != "emitters")


def load_all(root: Path | None = None, validate: bool = True) -> tuple[list[Signature], list[Problem]]:
    """Every signature under `root`, and every problem found; `validate=False` skips compiling
    the regexes up front (analyze compiles them when first needed; check compiles them all)."""
    base = root or signatures_dir()
    taxonomy = load_taxonomy(base)
    problems: list[Problem] = []
    sigs: list[Signature] = []
    seen: dict[str, str] = {}
    files = list(signature_files(base))
    cached = _parsed_cache(files)
    parsed = cached if cached is not None else {str(path): read_file(path, base, problems) for path in files}
    for path in files:
        sig = load_file(path, base, taxonomy, problems, validate, parsed[str(path)])
        if sig is None:
            continue
        if sig.id in seen:
            problems.append(Problem(sig.file, None, f"duplicate id {sig.id!r} (also in {seen[sig.id]})"))
            continue
        seen[sig.id] = sig.file
        sigs.append(sig)
    if cached is None and not problems:
        _store_parsed(files, parsed)
    return sigs, problems


def _cache_key(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:24]


def _parsed_cache(files: list[Path]) -> dict[str, Any] | None:
    """The parsed YAML of an unchanged database, from the private cache (JSON checked against its
    hash, see analyzer.cachefile; YAML parsing was half of a small analysis). Only a database that
    loaded without problems is ever stored."""
    directory = cache_dir("signatures")
    if directory is None:
        return None
    data = read_json(directory, f"{_cache_key(files)}.json")
    return data if isinstance(data, dict) and len(data) == len(files) else None


def _store_parsed(files: list[Path], parsed: dict[str, Any]) -> None:
    directory = cache_dir("signatures")
    if directory is None or len(parsed) != len(files):
        return
    try:
        plain = json.loads(json.dumps(parsed, default=str))
    except (TypeError, ValueError):
        return
    write_json(directory, f"{_cache_key(files)}.json", plain)


@cache
def database() -> tuple[Signature, ...]:
    """The shipped signatures (problems are reported by `signatures check`, not here)."""
    sigs, _ = load_all(validate=False)
    return tuple(sigs)


def line_patterns(signatures: Iterable[Signature]) -> list[tuple[str, bool]]:
    """The (regex, ignore_case) pairs the scan stage looks for on behalf of these signatures."""
    return [p for s in signatures for p in s.line_patterns]
