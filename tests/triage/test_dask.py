"""`--scheduler` on a real local Dask cluster (started here, two worker processes): the same
verdicts and groups as the local pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="--scheduler needs the distributed extra (dask[distributed])")
pytest.importorskip("pandas", reason="triage needs the triage extra")

from click.testing import CliRunner  # noqa: E402

from analyzer.cli import main  # noqa: E402
from corpora.fleet import make_fleet  # noqa: E402


def test_dask_cluster_gives_the_pools_result(tmp_path: Path) -> None:
    from distributed import LocalCluster

    fleet = make_fleet(tmp_path / "runs", n_cases=8, copies=2, n_healthy=2, n_unknown=3)
    args = [*map(str, fleet.jobs), str(fleet.missing), "--no-db", "--format", "json"]
    pool = CliRunner().invoke(main, ["triage", *args, "--jobs", "2"])
    assert pool.exit_code == 0, pool.output
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1") as cluster:
        dask = CliRunner().invoke(main, ["triage", *args, "--scheduler", cluster.scheduler_address])
    assert dask.exit_code == 0, dask.output

    def verdicts(out: str) -> tuple[list[tuple[str, str, str | None, str]], list[tuple[str, list[str]]], list[str]]:
        data = json.loads(out)
        jobs = [(j["job"], j["category"], j["subcategory"], j["fingerprint"]) for j in data["jobs"]]
        groups = [(g["fingerprint"], g["jobs"]) for g in data["groups"]]
        return jobs, groups, [f["job"] for f in data["failed"]]

    assert verdicts(dask.stdout) == verdicts(pool.stdout)
    assert len(json.loads(dask.stdout)["jobs"]) == len(fleet.jobs)
