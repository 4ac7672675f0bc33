"""The batch on 150+ run dirs made from the corpus (copies on other hosts and pids, healthy
jobs, a new failure repeated with other numbers, a binary-only dir, a missing path)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pandas", reason="triage needs the triage extra (pandas, sqlalchemy, alembic, drain3)")

from analyzer.pipeline import analyze  # noqa: E402
from analyzer.triage.run import job_name, triage  # noqa: E402
from analyzer.triage.store import Store  # noqa: E402
from analyzer.triage.summary import build  # noqa: E402
from corpora.fleet import Fleet, make_fleet  # noqa: E402

from ..conftest import REPO  # noqa: E402

pytestmark = pytest.mark.slow
SCHEMA = REPO / "analyzer" / "triage" / "result.schema.json"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return make_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def result(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = tmp_path_factory.mktemp("db") / "history.sqlite"
    store = Store(f"sqlite:///{db}")
    assert fleet.missing is not None
    batch = triage([*map(str, fleet.jobs), str(fleet.missing)], jobs=2, store=store)
    assert batch.analyzed == len(fleet.jobs) and batch.reused == 0
    again = triage([*map(str, fleet.jobs), str(fleet.missing)], jobs=2, store=store)
    assert again.analyzed == 0 and again.reused == len(fleet.jobs)  # unchanged jobs are not analyzed again
    assert store.count() == len(fleet.jobs)  # two triages, one row per job
    store.close()
    out = build(batch)
    assert [(g["fingerprint"], g["jobs"]) for g in build(again)["groups"]] == [
        (g["fingerprint"], g["jobs"]) for g in out["groups"]
    ]
    return out


def test_there_are_150_jobs(fleet: Fleet) -> None:
    assert len(fleet.jobs) + 1 >= 150


def test_result_follows_its_schema(result: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(result, json.loads(SCHEMA.read_text()))


def test_each_category_is_what_analyze_says_alone(fleet: Fleet, result: dict[str, Any]) -> None:
    by_job = {j["job"]: j for j in result["jobs"]}
    for job in fleet.jobs:
        alone = analyze(job).verdict
        got = by_job[job_name(job)]
        assert (got["category"], got["subcategory"]) == (alone.category.value, alone.subcategory), job


def test_every_copy_of_one_failure_is_one_group(fleet: Fleet, result: dict[str, Any]) -> None:
    by_job = {j["job"]: j for j in result["jobs"]}
    groups: dict[str, set[str]] = defaultdict(set)
    for job, origin in fleet.origin.items():
        if origin not in ("healthy", "binary"):
            groups[origin].add(by_job[job_name(job)]["group"])
    split = {origin: sorted(g) for origin, g in groups.items() if len(g) != 1}
    assert not split, split


def test_no_group_mixes_categories(result: dict[str, Any]) -> None:
    by_job = {j["job"]: j for j in result["jobs"]}
    for g in result["groups"]:
        assert {by_job[j]["category"] for j in g["jobs"]} == {g["category"]}
    fps = defaultdict(set)
    for j in result["jobs"]:
        fps[j["fingerprint"]].add(j["category"])
    assert all(len(c) == 1 for c in fps.values())


def test_new_unknown_failure_is_one_group_with_its_template(fleet: Fleet, result: dict[str, Any]) -> None:
    new = sorted(job_name(j) for j, o in fleet.origin.items() if o == "unknown")
    groups = [g for g in result["groups"] if set(new) & set(g["jobs"])]
    assert len(groups) == 1 and groups[0]["jobs"] == new and groups[0]["category"] == "unknown"
    assert "EngineCore failed to start" in groups[0]["title"]


def test_missing_path_is_under_failed(fleet: Fleet, result: dict[str, Any]) -> None:
    assert [f["job"] for f in result["failed"]] == [job_name(fleet.missing)]
    assert "no such file" in result["failed"][0]["reason"]


def test_groups_are_fewer_than_jobs(result: dict[str, Any]) -> None:
    assert len(result["groups"]) < len(result["jobs"]) / 2
    assert sum(g["count"] for g in result["groups"]) == len(result["jobs"])


def test_every_corpus_case_keeps_its_fingerprint_on_other_hosts_and_pids(tmp_path: Path) -> None:
    """Two copies of every labeled case, each with other host names and pids: one verdict and
    one fingerprint per case."""
    import random

    from corpora.fleet import cases, copy_case, names_in

    rnd = random.Random(11)
    unstable, rewritten = [], 0
    for case in cases():
        hosts, pids = names_in(case)
        rewritten += bool(hosts or pids)
        seen = set()
        for c in range(2):
            job = tmp_path / f"{case.name}-{c}"
            host_map = {h: f"x{c}-{rnd.randrange(100, 999)}-n{i}" for i, h in enumerate(sorted(hosts))}
            copy_case(case, job, host_map, {p: str(rnd.randrange(10000, 4000000)) for p in sorted(pids)})
            v = analyze(job).verdict
            seen.add((v.category.value, v.subcategory, v.fingerprint))
        if len(seen) != 1:
            unstable.append((case.name, seen))
    assert rewritten >= 50  # the test means something: many cases name hosts or pids
    assert not unstable, unstable
