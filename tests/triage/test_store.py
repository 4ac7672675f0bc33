"""The history database: migrations, one row per job, SQLite and a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the history needs the triage extra (sqlalchemy, alembic)")

from sqlalchemy import create_engine, inspect, text  # noqa: E402

from analyzer.triage.history import history  # noqa: E402
from analyzer.triage.run import triage  # noqa: E402
from analyzer.triage.store import Store, upgrade  # noqa: E402
from analyzer.triage.tables import metadata  # noqa: E402

from ..conftest import REPO  # noqa: E402

CASES = ["corpora/lab/lab-shm-001", "corpora/lab/lab-oom-cascade-001", "corpora/real/real-p2p-001"]
PG_ENV = "POSTMORTEM_TEST_POSTGRES_URL"


@pytest.fixture
def jobs(tmp_path: Path) -> list[str]:
    out = []
    for c in CASES:
        dest = tmp_path / "runs" / Path(c).name
        shutil.copytree(REPO / c, dest, ignore=shutil.ignore_patterns("case.yaml"))
        out.append(str(dest))
    return out


def _twice(url: str, jobs: list[str]) -> Store:
    store = Store(url)
    first = triage(jobs, jobs=1, store=store)
    (Path(jobs[0]) / "extra.log").write_text("step 1 loss 2.0\n")  # a changed job is analyzed again
    second = triage(jobs, jobs=1, store=store)
    assert (first.analyzed, first.reused) == (3, 0)
    assert (second.analyzed, second.reused) == (1, 2)
    return store


def test_sqlite_two_triages_one_row_per_job(tmp_path: Path, jobs: list[str]) -> None:
    store = _twice(f"sqlite:///{tmp_path / 'h.sqlite'}", jobs)
    assert store.count() == 3
    data = history(store)
    assert sum(f["count"] for f in data["fingerprints"]) == 3
    assert {f["category"] for f in data["fingerprints"]} == {"shm", "oom_cascade", "p2p"}
    store.close()


def test_migrations_create_what_the_tables_declare(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_engine(f"sqlite:///{tmp_path / 'm.sqlite'}")
    upgrade(engine)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []


def test_a_database_from_the_first_schema_opens_and_keeps_its_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    upgrade(engine, "0001")  # the schema as the first version made it
    record = {"job": "/runs/j1", "category": "shm", "subcategory": None, "confidence": 0.9, "fingerprint": "0123456789abcdef"}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO jobs (job, state, category, confidence, fingerprint, title, record, first_seen, last_seen) "
                "VALUES ('/runs/j1', 's', 'shm', 0.9, '0123456789abcdef', 't', :r, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            ),
            {"r": json.dumps({**record, "title": "t", "hosts": []})},
        )
    assert "job_hosts" not in inspect(engine).get_table_names()
    store = Store(url)  # upgrades to the newest schema
    assert "job_hosts" in inspect(store.engine).get_table_names()
    assert [r.job for r in store.rows()] == ["/runs/j1"]
    store.close()


def _postgres_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"no PostgreSQL server: .ci/run starts one on loopback and sets {PG_ENV}; set it to run this test")
    pytest.importorskip("psycopg", reason="PostgreSQL needs the postgres extra (psycopg)")
    return url


def test_postgresql_two_triages_one_row_per_job(jobs: list[str]) -> None:
    url = _postgres_url()
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:  # a clean schema for this test
        conn.execute(text("DROP TABLE IF EXISTS job_hosts, jobs, alembic_version CASCADE"))
    engine.dispose()
    store = _twice(url, jobs)
    assert store.count() == 3
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(DISTINCT job) FROM jobs")).scalar() == 3
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0002"
    store.close()


def test_new_since_and_history_command(tmp_path: Path, jobs: list[str]) -> None:
    from datetime import UTC, datetime, timedelta

    from click.testing import CliRunner

    from analyzer.cli import main
    from analyzer.triage.summary import build

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    store = Store(url)
    triage(jobs[:2], jobs=1, store=store)
    with store.engine.begin() as conn:  # as if the first two had been seen a month ago
        conn.execute(text("UPDATE jobs SET first_seen = :t"), {"t": datetime.now(UTC) - timedelta(days=30)})
    now = datetime.now(UTC)
    batch = triage(jobs, jobs=1, store=store, now=now)
    result = build(batch, cutoff=now - timedelta(days=7))
    new = {g["category"]: g["new"] for g in result["groups"]}
    assert new == {"shm": False, "oom_cascade": False, "p2p": True}
    assert build(batch, cutoff=now - timedelta(days=60))["groups"][0]["new"] is True
    month_ago, today = (now - timedelta(days=30)).date().isoformat(), now.date().isoformat()
    assert sorted((d["day"], d["category"], d["jobs"]) for d in result["daily"]) == sorted(
        [(month_ago, "shm", 1), (month_ago, "oom_cascade", 1), (today, "p2p", 1)]
    )
    from analyzer.report.fleet import render_html

    page = render_html(result)
    assert f"{month_ago} shm: 1" in page and f"{today} p2p: 1" in page  # the bars of both days
    store.close()

    out = CliRunner().invoke(main, ["history", "--db", url, "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert sorted(f["category"] for f in data["fingerprints"]) == ["oom_cascade", "p2p", "shm"]
    assert all(f["count"] == 1 and len(f["jobs"]) == 1 for f in data["fingerprints"])
    hosts = [n["host"] for n in data["nodes"]]
    if hosts:
        one = CliRunner().invoke(main, ["history", "--db", url, "--host", hosts[0], "--format", "json"])
        assert [n["host"] for n in json.loads(one.stdout)["nodes"]] == [hosts[0]]
    table = CliRunner().invoke(main, ["history", "--db", url])
    assert table.exit_code == 0 and "Per fingerprint" in table.output and "p2p" in table.output
