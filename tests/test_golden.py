"""Every parser's output on its reference inputs and every report format of the examples, as
kept in tests/golden/ (regenerate with `python -m tests.golden --update`, review the diff)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer.parse.registry import LINE_PARSERS
from analyzer.paths import report_schema_path

from .golden import (
    PARSE_INPUTS,
    REPO,
    REPORT_FORMATS,
    cases,
    examples,
    model_with_taxonomy_categories,
    schema_with_taxonomy_enums,
)

CASES = cases()


@pytest.mark.parametrize(("name", "path", "make"), CASES, ids=[c[0] for c in CASES])
def test_golden(name: str, path: Path, make: Callable[[], str]) -> None:
    assert path.is_file(), f"{path} missing: run `python -m tests.golden --update`"
    assert make() == path.read_text(encoding="utf-8"), (
        f"{name} changed: run `python -m tests.golden --update` and review the diff"
    )


def test_every_parser_and_format_has_golden_outputs() -> None:
    assert {p for p, _ in PARSE_INPUTS} == set(LINE_PARSERS)
    assert examples() and set(REPORT_FORMATS) == {"text", "json", "markdown", "html"}


def test_report_schema_enums_are_generated_from_the_taxonomy() -> None:
    assert report_schema_path().read_text(encoding="utf-8") == schema_with_taxonomy_enums()


def test_model_categories_are_generated_from_the_taxonomy() -> None:
    assert (REPO / "analyzer" / "model" / "__init__.py").read_text(encoding="utf-8") == model_with_taxonomy_categories()
