"""`signatures check`: every validator on every file, the Xid table, then every signature's
inline tests; all issues at once, each with its type, file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analyzer.events.ingest import build_scanner, events_from_text
from analyzer.model import Event, EventKind, Location
from analyzer.paths import signatures_dir
from analyzer.signatures import validators as v
from analyzer.signatures.cues import validate_cue_table
from analyzer.signatures.loader import Problem, Signature, line_patterns, load_file, load_taxonomy, signature_files
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


def check_all(root: Path | None = None) -> tuple[list[Problem], int]:
    """Every issue of every file under `root` (the shipped database by default), and the number
    of signature files looked at."""
    base = root or signatures_dir()
    taxonomy = load_taxonomy(base)
    ctx = v.Context(taxonomy=taxonomy, schema=v.load_schema(base, signatures_dir()))
    problems: list[Problem] = []
    docs: list[v.Doc] = []
    files = list(signature_files(base))
    for path in files:
        rel = path.relative_to(base.parent).as_posix()
        doc, issues = v.read_doc(path, rel)
        problems.extend(issues)
        if doc is None:
            continue
        doc.signature = load_file(path, base, taxonomy, [], validate=False, parsed=doc.data)
        docs.append(doc)
    sigs = [d.signature for d in docs if d.signature is not None]
    scanner = build_scanner(line_patterns(sigs))
    ctx.run_tests = lambda sig: run_tests(sig, scanner)
    for doc in docs:
        for validator in v.VALIDATORS:
            problems.extend(validator(doc, ctx))
    problems.extend(v.validate_duplicates(docs))
    taxonomy_file = (base / "taxonomy.yaml").relative_to(base.parent).as_posix()
    problems.extend(Problem(taxonomy_file, None, p, v.TAXONOMY) for p in taxonomy_problems(root))
    xid = base / "xid.yaml"
    if xid.is_file():
        problems.extend(v.validate_xid_table(xid, xid.relative_to(base.parent).as_posix(), taxonomy))
    problems.extend(validate_cue_table(base))
    order = {p: i for i, p in enumerate(problems)}
    problems.sort(key=lambda p: (p.file, p.line or 0, order[p]))
    return problems, len(files)
