"""`postmortem triage` options and formats on a few run dirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas", reason="triage needs the triage extra")

from click.testing import CliRunner  # noqa: E402

from analyzer.cli import main  # noqa: E402

from ..conftest import REPO  # noqa: E402


@pytest.fixture
def runs(tmp_path: Path) -> list[str]:
    out = []
    for case in ("lab-shm-001", "lab-oom-cascade-004", "lab-hang-001"):
        dest = tmp_path / "runs" / case
        shutil.copytree(REPO / "corpora" / "lab" / case, dest, ignore=shutil.ignore_patterns("case.yaml"))
        out.append(str(dest))
    return out


def _triage(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["triage", "--no-db", "--jobs", "1", *args])
    return r.exit_code, r.stdout, r.stderr


def test_formats_render_one_result(runs: list[str], tmp_path: Path) -> None:
    code, out, _ = _triage(*runs, "--format", "json")
    assert code == 0
    data = json.loads(out)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(data, json.loads((REPO / "analyzer" / "triage" / "result.schema.json").read_text()))
    code, out, _ = _triage(*runs, "--format", "csv")
    csv = pd.read_csv(__import__("io").StringIO(out))
    assert list(csv["job"]) == [j["job"] for j in data["jobs"]] and list(csv["category"]) == [j["category"] for j in data["jobs"]]
    code, _, err = _triage(*runs, "--format", "parquet")
    assert code == 2 and "-o" in err
    code, _, _ = _triage(*runs, "--format", "parquet", "-o", str(tmp_path / "jobs.parquet"))
    table = pd.read_parquet(tmp_path / "jobs.parquet")
    assert code == 0 and list(table["fingerprint"]) == [j["fingerprint"] for j in data["jobs"]]
    code, out, _ = _triage(*runs, "--format", "markdown")
    assert code == 0 and "## Groups" in out and all(f"`{g['group']}`" in out for g in data["groups"])
    code, out, _ = _triage(*runs)
    assert code == 0 and "Per category" in out and "oom_cascade" in out
    assert "labnode1" in {n["host"] for n in data["nodes"]}


def test_from_file_progress_and_failed(runs: list[str], tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text("# weekend\n" + "\n".join(runs[1:]) + f"\n{tmp_path / 'gone'}\n")
    code, out, err = _triage(runs[0], "--from-file", str(listing), "--progress", "--format", "json")
    data = json.loads(out)
    assert code == 0 and len(data["jobs"]) == 3 and [f["job"] for f in data["failed"]] == [str(tmp_path / "gone")]
    assert "analyzed 3, from history 0, failed 1" in err


def test_refuses_to_write_inside_a_run_dir_and_bad_since(runs: list[str]) -> None:
    code, _, err = _triage(*runs, "-o", str(Path(runs[0]) / "out.json"))
    assert code == 2 and "never writes inside the run dir" in err
    code, _, err = _triage(*runs, "--tickets", str(Path(runs[1]) / "t"))
    assert code == 2 and "never writes inside the run dir" in err
    code, _, err = _triage(*runs, "--since", "soon")
    assert code == 2 and "--since" in err


def test_a_worker_that_dies_fails_its_job_only(runs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from analyzer.triage import job
    from analyzer.triage.run import triage

    real = job.analyze_job
    victim = os.path.abspath(runs[1])

    def dies_on_one(name: str, state: str | None = None) -> dict:
        if name == victim:
            os._exit(70)  # the worker process really dies (forked workers run this module as patched)
        return real(name, state)

    monkeypatch.setattr(job, "analyze_job", dies_on_one)
    batch = triage([*runs, *runs[:1]], jobs=2)
    assert [f["job"] for f in batch.failed] == [victim] and "killed its worker" in batch.failed[0]["reason"]
    assert sorted(r["job"] for r in batch.records) == sorted(os.path.abspath(r) for r in (runs[0], runs[2]))


def test_gpus_by_pci_bus_id(tmp_path: Path) -> None:
    runs = []
    for case in ("real-p2p-019", "real-xid-006"):
        dest = tmp_path / case
        shutil.copytree(REPO / "corpora" / "real" / case, dest, ignore=shutil.ignore_patterns("case.yaml"))
        runs.append(str(dest))
    code, out, _ = _triage(*runs, "--format", "json")
    data = json.loads(out)
    jobs = {Path(j["job"]).name: j for j in data["jobs"]}
    assert "0000:07:00" in jobs["real-p2p-019"]["gpus"]  # nvidia 0000:07:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT ...]
    assert {"0000:dc:00", "0000:ed:00"} <= set(jobs["real-xid-006"]["gpus"])  # NVRM: Xid (PCI:0000:dc:00): 45 ...
    node = next(n for n in data["nodes"] if n["host"] == "runtime")
    assert node["gpus"] == ["0000:07:00"]
