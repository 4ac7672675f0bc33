"""`signatures check`: every validator, then every signature's inline tests, all problems at once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from analyzer.events.ingest import build_scanner, events_from_text
from analyzer.model import Event, EventKind, Location
from analyzer.paths import signatures_dir
from analyzer.signatures.fields import field_problems
from analyzer.signatures.loader import Problem, Signature, line_patterns, load_all, signature_files
from analyzer.signatures.matcher import match_event
from analyzer.signatures.taxonomy import problems as taxonomy_problems


def test_events(sig: Signature, case: Any, scanner: Any) -> list[Event]:
    """The events a test case stands for: text goes through the real scan and parsers;
    a mapping is one event with those fields (for signatures over parsed records)."""
    if isinstance(case, dict):
        fields = dict(case)
        kind = EventKind(str(fields.pop("kind", "line")))
        message = str(fields.pop("message", ""))
        rank = fields.pop("rank", None)
        return [Event(kind, Location("<test>", 1), message, message, rank=rank, fields=fields)]
    return events_from_text(str(case), scanner)


def run_tests(sig: Signature, scanner: Any) -> list[Problem]:
    problems = []
    for i, case in enumerate(sig.tests.get("match", ())):
        events = test_events(sig, case, scanner)
        if not any(match_event(sig, e) is not None for e in events):
            problems.append(Problem(sig.file, None, f"tests.match[{i}] does not match: {str(case)[:120]!r}"))
    for i, case in enumerate(sig.tests.get("no_match", ())):
        events = test_events(sig, case, scanner)
        if any(match_event(sig, e) is not None for e in events):
            problems.append(Problem(sig.file, None, f"tests.no_match[{i}] matches: {str(case)[:120]!r}"))
    return problems


def schema_problems(root: Path | None = None) -> list[Problem]:
    """Every file against signatures/schema.json (jsonschema, when installed)."""
    try:
        import jsonschema
    except ImportError:
        return []
    import json

    import yaml

    base = root or signatures_dir()
    schema_path = base / "schema.json"
    if not schema_path.is_file():
        schema_path = signatures_dir() / "schema.json"
    validator = jsonschema.Draft202012Validator(json.loads(schema_path.read_text(encoding="utf-8")))
    out = []
    for path in signature_files(base):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue  # the loader reports these
        rel = path.relative_to(base.parent).as_posix()
        for err in validator.iter_errors(data):
            where = ".".join(str(x) for x in err.absolute_path) or "(file)"
            out.append(Problem(rel, None, f"schema: {where}: {err.message[:200]}"))
    return out


def check_all(root: Path | None = None) -> tuple[list[Problem], int]:
    sigs, problems = load_all(root)
    problems.extend(schema_problems(root))
    problems.extend(Problem("signatures/taxonomy.yaml", None, p) for p in taxonomy_problems(root))
    problems.extend(field_problems(sigs))
    scanner = build_scanner(line_patterns(sigs))
    for sig in sigs:
        problems.extend(run_tests(sig, scanner))
        for regex, _ in sig.line_patterns:
            if re.search(r"\(\?[aiLmsux]+\)", regex):
                problems.append(Problem(sig.file, None, f"global inline flags in {regex!r}: use the `|i` modifier instead"))
    return problems, len(sigs)
