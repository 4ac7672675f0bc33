"""The shipped signature database: valid, covering the taxonomy, and every inline test holds.

Each signature's `tests.match` / `tests.no_match` run here one by one (one pytest case per
signature), through the real scan and parsers.
"""

from __future__ import annotations

from collections import Counter

import pytest

from analyzer.events.ingest import build_scanner
from analyzer.model import MAIN_CATEGORIES, Category
from analyzer.signatures.check import run_tests
from analyzer.signatures.loader import line_patterns, load_all, load_taxonomy

SIGS, PROBLEMS = load_all()
SCANNER = build_scanner(line_patterns(SIGS))


def test_database_loads_without_problems() -> None:
    assert [str(p) for p in PROBLEMS] == []


def test_size_and_coverage() -> None:
    assert len(SIGS) >= 60
    per_cat = Counter(s.category for s in SIGS)
    for cat in Category:
        if cat is not Category.UNKNOWN:
            assert per_cat[cat] >= 1, cat
    for cat in MAIN_CATEGORIES:
        assert per_cat[cat] >= 5, cat
        subs = {s.subcategory for s in SIGS if s.category is cat and s.role.value == "root_cause"}
        assert len(subs) >= 3, (cat, subs)


def test_taxonomy_lists_every_category() -> None:
    assert set(load_taxonomy()) == {c.value for c in Category}


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_inline_tests(sig) -> None:  # type: ignore[no-untyped-def]
    assert sig.tests["match"] and "no_match" in sig.tests
    problems = run_tests(sig, SCANNER)
    assert [str(p) for p in problems] == []


def test_healthy_lines_fire_no_root_cause() -> None:
    """Lines every healthy NCCL/PyTorch job writes (from the real cases' logs) never name a cause."""
    from analyzer.events.ingest import events_from_text
    from analyzer.signatures.matcher import find

    healthy = "\n".join(
        [
            "node0:15325:16199 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC/read",
            "node0:15325:16199 [2] NCCL INFO Channel 01 : 2[2] -> 3[3] via SHM/direct/direct",
            "node0:15325:16199 [2] NCCL INFO Connected all rings",
            "node0:15325:16199 [2] NCCL INFO comm 0x55d5 rank 2 nranks 8 cudaDev 2 busId 3d000 - Init COMPLETE",
            "node0:15325:16199 [2] NCCL INFO NCCL_P2P_DISABLE set by environment to 0.",
            "node0:15325:16199 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
            "node0:15325:16199 [2] NCCL INFO Using network IB",
            "[rank0]: {'loss': 1.234, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}",
        ]
    )
    findings = find(SIGS, events_from_text(healthy, SCANNER))
    assert [f.signature for f in findings if f.role.value == "root_cause"] == []


def test_every_file_follows_the_json_schema() -> None:
    import json

    import jsonschema
    import yaml

    from analyzer.paths import signatures_dir
    from analyzer.signatures.loader import signature_files

    schema = json.loads((signatures_dir() / "schema.json").read_text())
    for path in signature_files():
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
