"""The taxonomy is the one list of categories: the model's enum and the report schema's enums
agree with it, and its rules and hints name only what exists."""

from __future__ import annotations

import json

from analyzer.model import Category
from analyzer.paths import report_schema_path
from analyzer.signatures.taxonomy import categories, missing_evidence_hints, outranks, problems


def _enums(node: object, key: str) -> list[list[str]]:
    found: list[list[str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, dict) and "enum" in v:
                found.append(v["enum"])
            found.extend(_enums(v, key))
    elif isinstance(node, list):
        for v in node:
            found.extend(_enums(v, key))
    return found


def test_the_model_enum_is_the_taxonomy() -> None:
    assert [c.value for c in Category] == list(categories())


def test_the_report_schema_category_enums_are_the_taxonomy() -> None:
    schema = json.loads(report_schema_path().read_text(encoding="utf-8"))
    enums = _enums(schema, "category")
    assert len(enums) >= 2  # verdict and alternatives
    for enum in enums:
        assert enum == list(categories())


def test_rules_and_hints_are_valid() -> None:
    assert problems() == []
    assert outranks() and missing_evidence_hints()
