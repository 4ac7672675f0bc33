"""The bundled examples' reports are exactly the reviewed golden files (regenerate with
`python -m tests.golden` and review the diff)."""

from __future__ import annotations

import pytest

from . import FORMATS, HERE, examples, render_all


@pytest.mark.parametrize("name", examples())
def test_reports_match_the_golden_files(name: str) -> None:
    rendered = render_all(name)
    assert len(rendered) == len(FORMATS)
    for file, text in rendered.items():
        golden = HERE / file
        assert golden.exists(), f"{file} is missing: run `python -m tests.golden`"
        assert text == golden.read_text(encoding="utf-8"), f"{file} differs: run `python -m tests.golden` and review the diff"


def test_golden_text_fits_its_width() -> None:
    for name in examples():
        for width in (80, 100):
            lines = (HERE / f"{name}.text-{width}.txt").read_text(encoding="utf-8").splitlines()
            assert max(len(line) for line in lines) <= width
