"""The validators of `signatures check`: each finds its own issue type, with the line, and they
all run on a file however many issues it has."""

from __future__ import annotations

from pathlib import Path

from analyzer.paths import signatures_dir
from analyzer.signatures import validators as v
from analyzer.signatures.check import check_all
from analyzer.signatures.loader import load_taxonomy

GOOD = """id: shm.example
title: an example
category: shm
subcategory: shm.dataloader_bus_error
role: root_cause
confidence: 0.5
source: {project: pytorch, file: "torch/csrc/DataLoader.cpp", versions: ["2.5.0"]}
detection:
  sel:
    message|re: 'Bus error'
  condition: sel
summary: s
tests:
  match: ["Bus error (core dumped)"]
  no_match: ["all good"]
"""


def _doc(tmp_path: Path, text: str, name: str = "shm.example") -> v.Doc:
    path = tmp_path / "shm" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    doc, issues = v.read_doc(path, f"shm/{name}.yaml")
    assert doc is not None and issues == []
    return doc


def _ctx() -> v.Context:
    return v.Context(taxonomy=load_taxonomy(), schema=v.load_schema(signatures_dir(), signatures_dir()))


def test_a_good_file_has_no_issue(tmp_path: Path) -> None:
    doc = _doc(tmp_path, GOOD)
    assert [str(p) for validator in v.VALIDATORS for p in validator(doc, _ctx())] == []


def test_each_validator_names_its_issue_and_line(tmp_path: Path) -> None:
    text = (
        GOOD.replace("id: shm.example", "id: shm.other")
        .replace("shm.dataloader_bus_error", "shm.nope")
        .replace("'Bus error'", "'(Bus'")
        .replace('versions: ["2.5.0"]', 'versions: ["2.5.0", "2.5.0"]')
        .replace("condition: sel", "condition: sel and other")
    )
    doc = _doc(tmp_path, text)
    ctx = _ctx()
    got = {(p.code, p.line) for validator in v.VALIDATORS for p in validator(doc, ctx)}
    assert (v.IDENTITY, 1) in got
    assert (v.TAXONOMY, 4) in got
    assert (v.SOURCE, 7) in got
    assert (v.REGEX, 10) in got
    assert (v.DETECTION, 11) in got


def test_back_references_are_refused(tmp_path: Path) -> None:
    ctx = _ctx()
    for bad in (r"'scale: (?P<s>\d+), to (?P=s)'", r"'scale: (\d+), to \1'"):
        doc = _doc(tmp_path, GOOD.replace("'Bus error'", bad))
        assert [p.line for p in v.validate_regexes(doc, ctx)] == [10], bad
    for good in (r"'a\\1 b'", r"'(?P<s>\d+) \d'"):
        doc = _doc(tmp_path, GOOD.replace("'Bus error'", good))
        assert list(v.validate_regexes(doc, ctx)) == [], good


def test_schema_requires_a_source(tmp_path: Path) -> None:
    doc = _doc(tmp_path, GOOD.replace('source: {project: pytorch, file: "torch/csrc/DataLoader.cpp", versions: ["2.5.0"]}\n', ""))
    issues = list(v.validate_schema(doc, _ctx()))
    assert [p.message for p in issues] == ["(file): 'source' is a required property"]
    bad = _doc(tmp_path, GOOD.replace('versions: ["2.5.0"]', "versions: []"))
    assert [p.line for p in v.validate_schema(bad, _ctx())] == [7]


def test_xid_table_issues(tmp_path: Path) -> None:
    path = tmp_path / "xid.yaml"
    path.write_text("xids:\n  79: {name: X, meaning: m, cause_class: hardware, category: nowhere, confidence: 0.9, action: a}\n")
    assert [str(p) for p in v.validate_xid_table(path, "xid.yaml", load_taxonomy())] == [
        "xid.yaml:2: xid: xid 79: unknown category 'nowhere'"
    ]


def test_the_shipped_database_and_xid_table_pass() -> None:
    problems, count = check_all()
    assert [str(p) for p in problems] == []
    assert count >= 200


def test_fields_validator_names_the_selection_line(tmp_path: Path) -> None:
    from analyzer.signatures.loader import load_file

    text = GOOD.replace("  condition: sel", "  other:\n    no_such_field: x\n  condition: sel and not other")
    doc = _doc(tmp_path, text)
    doc.signature = load_file(doc.path, tmp_path, load_taxonomy(), [], validate=False, parsed=doc.data)
    issues = list(v.validate_fields(doc, _ctx()))
    assert [(p.code, p.line) for p in issues] == [(v.FIELDS, 11)]
    assert "no_such_field" in issues[0].message
