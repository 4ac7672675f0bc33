"""Validators of the signature database, in the manner of pySigma: small functions that each look
at one aspect of a file and return every issue they find, each issue with its own type, its file
and its line. `signatures check` runs them all on every file, so one run shows every problem.

A validator takes a `Doc` (one parsed signature file) and the shared `Context`, and yields
`Problem`s whose `code` names the validator. Database-wide checks (duplicate ids) and the Xid
table (`xid.yaml`) have their own functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analyzer.parse.condition import ConditionError, parse_condition
from analyzer.signatures.loader import MODIFIERS, Problem, Signature

# the issue types, one per validator (the first word of every problem line)
YAML = "yaml"
SCHEMA = "schema"
IDENTITY = "identity"
TAXONOMY = "taxonomy"
DETECTION = "detection"
REGEX = "regex"
SOURCE = "source"
FIELDS = "fields"
TESTS = "tests"
DUPLICATE = "duplicate"
XID = "xid"

_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
# a back-reference, named or numbered (not an escaped backslash followed by a digit): the scan turns
# named groups into plain ones, so such a pattern would match in Python alone, never in a log
_BACKREFERENCE = re.compile(r"\(\?P=\w+\)|(?<!\\)(?:\\\\)*\\[1-9]")


@dataclass(slots=True)
class Doc:
    """One signature file: where it is, its parsed YAML and its node tree (for line numbers)."""

    path: Path
    rel: str
    data: Any
    node: yaml.Node | None
    signature: Signature | None = None

    def line(self, *keys: str | int) -> int | None:
        """The line (1-based) of the deepest node of `keys` that exists, or of the file's start."""
        return node_line(self.node, keys)


def node_line(node: yaml.Node | None, keys: Iterable[str | int]) -> int | None:
    if node is None:
        return None
    best = node.start_mark.line + 1
    for key in keys:
        found = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == str(key):
                    best, found = k.start_mark.line + 1, v
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            found = node.value[key]
            best = found.start_mark.line + 1
        if found is None:
            break
        node = found
    return best


@dataclass(slots=True)
class Context:
    """What the validators share: the taxonomy, the JSON Schema and the scanner the tests run through."""

    taxonomy: dict[str, set[str]]
    schema: dict[str, Any] | None
    run_tests: Callable[[Signature], list[Problem]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Validator = Callable[[Doc, Context], Iterable[Problem]]


def _p(doc: Doc, code: str, message: str, *keys: str | int) -> Problem:
    return Problem(doc.rel, doc.line(*keys), message, code)


def validate_schema(doc: Doc, ctx: Context) -> Iterator[Problem]:
    if ctx.schema is None:
        return
    import jsonschema

    validator = jsonschema.Draft202012Validator(ctx.schema)
    for err in sorted(validator.iter_errors(doc.data), key=lambda e: [str(x) for x in e.absolute_path]):
        path = list(err.absolute_path)
        where = ".".join(str(x) for x in path) or "(file)"
        yield _p(doc, SCHEMA, f"{where}: {err.message[:200]}", *path)


def validate_identity(doc: Doc, ctx: Context) -> Iterator[Problem]:
    sid = doc.data.get("id")
    if sid is None:
        return
    if doc.path.stem != str(sid):
        yield _p(doc, IDENTITY, f"id {sid!r} differs from the file name {doc.path.stem!r}", "id")
    cat = doc.data.get("category")
    if cat is not None and not str(sid).startswith(f"{cat}."):
        yield _p(doc, IDENTITY, f"id {sid!r} does not start with its category {cat!r}", "id")
    if cat is not None and doc.path.parent.name != str(cat):
        yield _p(doc, IDENTITY, f"file is in {doc.path.parent.name}/, not in its category's folder {cat}/", "category")


def validate_taxonomy(doc: Doc, ctx: Context) -> Iterator[Problem]:
    cat = doc.data.get("category")
    if cat is None:
        return
    if str(cat) not in ctx.taxonomy:
        yield _p(doc, TAXONOMY, f"unknown category {cat!r}", "category")
        return
    sub = doc.data.get("subcategory")
    if sub is not None and str(sub) not in ctx.taxonomy[str(cat)]:
        yield _p(doc, TAXONOMY, f"subcategory {sub!r} is not listed under {cat!r} in taxonomy.yaml", "subcategory")
    if doc.data.get("supports") and (doc.data.get("role") != "context" or str(cat) in ("none", "unknown")):
        yield _p(doc, TAXONOMY, "`supports` is for a context line of a cause category (role: context)", "supports")


def validate_detection(doc: Doc, ctx: Context) -> Iterator[Problem]:
    detection = doc.data.get("detection")
    if detection is None:
        return
    if not isinstance(detection, dict) or "condition" not in detection:
        yield _p(doc, DETECTION, "detection needs named selections and a condition", "detection")
        return
    names = [n for n in detection if n != "condition"]
    for name in names:
        spec = detection[name]
        if not isinstance(spec, dict) or not spec:
            yield _p(doc, DETECTION, f"selection {name!r} must be a mapping of field|modifier: value", "detection", name)
            continue
        for key in spec:
            unknown = set(str(key).split("|")[1:]) - MODIFIERS
            if unknown:
                yield _p(doc, DETECTION, f"selection {name!r}: unknown modifier(s) {sorted(unknown)}", "detection", name, key)
    try:
        cond = parse_condition(str(detection["condition"]))
    except ConditionError as exc:
        yield _p(doc, DETECTION, f"condition: {exc}", "detection", "condition")
        return
    missing = sorted(n for n in cond.referenced() if n not in names)
    if missing:
        yield _p(doc, DETECTION, f"condition names unknown selection(s) {missing}", "detection", "condition")
    unused = sorted(set(names) - set(cond.referenced()))
    if unused and "them" not in str(detection["condition"]) and " of " not in str(detection["condition"]):
        yield _p(doc, DETECTION, f"selection(s) {unused} are not used by the condition", "detection", unused[0])


def validate_regexes(doc: Doc, ctx: Context) -> Iterator[Problem]:
    detection = doc.data.get("detection")
    if not isinstance(detection, dict):
        return
    for name, spec in detection.items():
        if name == "condition" or not isinstance(spec, dict):
            continue
        for key, value in spec.items():
            mods = str(key).split("|")[1:]
            if "re" not in mods:
                continue
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values):
                where: tuple[str | int, ...] = (
                    ("detection", name, key, i) if isinstance(value, list) else ("detection", name, key)
                )
                try:
                    re.compile(str(v), re.I if "i" in mods else 0)
                except re.error as exc:
                    yield _p(doc, REGEX, f"selection {name!r}: regex {v!r} does not compile: {exc}", *where)
                    continue
                if _INLINE_FLAGS.search(str(v)):
                    yield _p(doc, REGEX, f"global inline flags in {v!r}: use the `|i` modifier instead", *where)
                if _BACKREFERENCE.search(str(v)):
                    yield _p(doc, REGEX, f"back-reference in {v!r}: the scan cannot take back-references", *where)


def validate_source(doc: Doc, ctx: Context) -> Iterator[Problem]:
    """Beyond the schema's shape: a version list names versions, not the same one twice."""
    value = doc.data.get("source")
    items = value if isinstance(value, list) else [value] if value is not None else []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        versions = item.get("versions")
        keys: tuple[str | int, ...] = ("source", i, "versions") if isinstance(value, list) else ("source", "versions")
        if isinstance(versions, list) and len(set(map(str, versions))) != len(versions):
            yield _p(doc, SOURCE, f"source {item.get('project')!r}: a version is listed twice", *keys)


def validate_fields(doc: Doc, ctx: Context) -> Iterator[Problem]:
    """Selections only on fields that the event kinds the signature can match declare."""
    if doc.signature is None:
        return
    from analyzer.signatures.fields import field_problems

    for problem in field_problems([doc.signature]):
        m = re.match(r"selection '([^']+)'", problem.message)
        yield Problem(doc.rel, doc.line("detection", m.group(1)) if m else doc.line("detection"), problem.message, FIELDS)


def validate_tests(doc: Doc, ctx: Context) -> Iterator[Problem]:
    tests = doc.data.get("tests")
    if not isinstance(tests, dict) or not tests.get("match") or not isinstance(tests.get("no_match"), list):
        yield _p(doc, TESTS, "tests need at least one `match` and a `no_match` list", "tests")
        return
    if doc.signature is None or ctx.run_tests is None:
        return
    for problem in ctx.run_tests(doc.signature):
        m = re.match(r"tests\.(match|no_match)\[(\d+)\]", problem.message)
        line = doc.line("tests", m.group(1), int(m.group(2))) if m else doc.line("tests")
        yield Problem(doc.rel, line, problem.message, TESTS)


# Every validator of one signature file, in the order their issues are listed. New validators
# (e.g. signature selections checked against the fields each event kind declares) join here.
VALIDATORS: list[Validator] = [
    validate_schema,
    validate_identity,
    validate_taxonomy,
    validate_detection,
    validate_regexes,
    validate_source,
    validate_fields,
    validate_tests,
]


def read_doc(path: Path, rel: str) -> tuple[Doc | None, list[Problem]]:
    """The parsed file, or the YAML issue that stops every other validator for it."""
    node, data, unread = read_table(path, rel, YAML)
    if unread:
        return None, unread
    if not isinstance(data, dict):
        return None, [Problem(rel, 1, "a signature file must hold one mapping", YAML)]
    return Doc(path, rel, data, node), []


def validate_duplicates(docs: list[Doc]) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    for doc in docs:
        sid = str(doc.data.get("id"))
        if sid in seen:
            yield _p(doc, DUPLICATE, f"duplicate id {sid!r} (also in {seen[sid]})", "id")
        else:
            seen[sid] = doc.rel


def load_schema(base: Path, fallback: Path) -> dict[str, Any]:
    path = base / "schema.json" if (base / "schema.json").is_file() else fallback / "schema.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- the Xid table ----------------------------------------------------------------------------

_XID_KEYS = ("name", "meaning", "cause_class", "category", "confidence", "action")


def read_table(path: Path, rel: str, code: str) -> tuple[yaml.Node | None, Any, list[Problem]]:
    """A YAML file of the database (a signature, xid.yaml, cues.yaml): its node tree (for lines),
    its data, or the problem that kept it from being read (issue type `code`)."""
    try:
        text = path.read_text(encoding="utf-8")
        return yaml.compose(text, Loader=yaml.SafeLoader), yaml.safe_load(text), []
    except (OSError, UnicodeDecodeError) as exc:
        return None, None, [Problem(rel, None, f"cannot read: {exc}", code)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return None, None, [Problem(rel, mark.line + 1 if mark else None, f"invalid YAML: {' '.join(str(exc).split())}", code)]


def validate_xid_table(path: Path, rel: str, taxonomy: dict[str, set[str]]) -> list[Problem]:
    """Every issue of signatures/xid.yaml: YAML, keys, cause classes, categories, confidences."""
    from analyzer.signatures.xid import CAUSE_CLASSES

    node, data, unread = read_table(path, rel, XID)
    if unread:
        return unread
    if not isinstance(data, dict) or not isinstance(data.get("xids"), dict):
        return [Problem(rel, 1, "xid.yaml needs an `xids` mapping of number: entry", XID)]
    out: list[Problem] = []

    def issue(message: str, *keys: str | int) -> None:
        out.append(Problem(rel, node_line(node, keys), message, XID))

    for number, raw in data["xids"].items():
        if not isinstance(number, int) or number <= 0:
            issue(f"xid {number!r}: the key must be a positive Xid number", "xids", number)
            continue
        if not isinstance(raw, dict):
            issue(f"xid {number}: the entry must be a mapping", "xids", number)
            continue
        for key in _XID_KEYS:
            if key not in raw:
                issue(f"xid {number}: missing key {key!r}", "xids", number)
        if "cause_class" in raw and raw["cause_class"] not in CAUSE_CLASSES:
            issue(f"xid {number}: cause_class {raw['cause_class']!r} is not one of {list(CAUSE_CLASSES)}", "xids", number)
        cat = raw.get("category")
        if cat is not None and str(cat) not in taxonomy:
            issue(f"xid {number}: unknown category {cat!r}", "xids", number)
        sub = raw.get("subcategory")
        if sub is not None and cat is not None and str(cat) in taxonomy and str(sub) not in taxonomy[str(cat)]:
            issue(f"xid {number}: subcategory {sub!r} is not listed under {cat!r} in taxonomy.yaml", "xids", number)
        if raw.get("role", "context") != "context":
            issue(f"xid {number}: role may only be `context` (a corrected or harmless-alone event)", "xids", number)
        conf = raw.get("confidence")
        if conf is not None and (isinstance(conf, bool) or not isinstance(conf, int | float) or not 0 < conf <= 1):
            issue(f"xid {number}: confidence must be a number in (0, 1]", "xids", number)
    for code, raw in (data.get("recovery_actions") or {}).items():
        if not isinstance(raw, dict) or not {"name", "action"} <= set(raw):
            issue(f"recovery action {code!r}: needs `name` and `action`", "recovery_actions", code)
    return out
