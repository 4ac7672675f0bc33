"""History of triaged jobs in a database: SQLAlchemy, a SQLite file by default, PostgreSQL by
URL. The schema is created and upgraded by Alembic migrations, so a database made by an older
version opens with a newer one. Each job's row is written in its own transaction: an
interrupted batch leaves complete rows only, and a re-run finds them."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, delete, event, select, update

from analyzer.triage.tables import job_hosts, jobs

MIGRATIONS = Path(__file__).with_name("migrations")


class StoreError(Exception):
    """The history database cannot be opened or written."""


def default_url() -> str:
    """POSTMORTEM_DB, else a SQLite file in the user's data dir."""
    env = os.environ.get("POSTMORTEM_DB")
    if env:
        return env
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'postmortem' / 'history.sqlite'}"


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Stored:
    job: str
    state: str
    record: dict[str, Any]
    first_seen: datetime
    last_seen: datetime


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` with Alembic (creates it in an empty database)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


class Store:
    def __init__(self, url: str | None = None, migrate: bool = True) -> None:
        self.url = url or default_url()
        if self.url.startswith("sqlite:///") and self.url != "sqlite:///:memory:":
            Path(self.url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
        if self.url.startswith("postgresql://"):  # psycopg 3 is the driver of the postgres extra
            self.url = "postgresql+psycopg://" + self.url.removeprefix("postgresql://")
        try:
            self.engine = create_engine(self.url, future=True)
            if self.engine.dialect.name == "sqlite":
                event.listen(self.engine, "connect", _sqlite_pragmas)
            if migrate:
                upgrade(self.engine)
        except Exception as exc:
            raise StoreError(f"history database {_safe(self.url)}: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self.engine.dispose()

    def states(self, names: Iterable[str]) -> dict[str, Stored]:
        """Stored rows of these jobs, by job."""
        wanted = list(dict.fromkeys(names))
        out: dict[str, Stored] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(wanted), 500):
                rows = conn.execute(select(jobs).where(jobs.c.job.in_(wanted[i : i + 500])))
                for r in rows:
                    out[r.job] = Stored(r.job, r.state, json.loads(r.record), _utc(r.first_seen), _utc(r.last_seen))
        return out

    def save(self, record: dict[str, Any], state: str, now: datetime | None = None) -> None:
        """Insert or update one job's row (and its hosts) in one transaction."""
        now = now or datetime.now(UTC)
        values = {
            "state": state,
            "category": record["category"],
            "subcategory": record["subcategory"],
            "confidence": float(record["confidence"]),
            "fingerprint": record["fingerprint"],
            "title": record["title"],
            "record": json.dumps(record, sort_keys=True),
            "last_seen": now,
        }
        with self.engine.begin() as conn:
            job_id = conn.execute(select(jobs.c.id).where(jobs.c.job == record["job"])).scalar()
            if job_id is None:
                key = conn.execute(jobs.insert().values(job=record["job"], first_seen=now, **values)).inserted_primary_key
                assert key is not None
                job_id = key[0]
            else:
                conn.execute(update(jobs).where(jobs.c.id == job_id).values(**values))
                conn.execute(delete(job_hosts).where(job_hosts.c.job_id == job_id))
            gpus = record.get("gpus") or {}
            for host in record["hosts"]:
                conn.execute(job_hosts.insert().values(job_id=job_id, host=host, gpus=json.dumps(sorted(gpus.get(host, [])))))

    def touch(self, job: str, now: datetime | None = None) -> None:
        with self.engine.begin() as conn:
            conn.execute(update(jobs).where(jobs.c.job == job).values(last_seen=now or datetime.now(UTC)))

    def rows(self, since: datetime | None = None, host: str | None = None) -> Iterator[Stored]:
        """Every stored job (last seen after `since`, on `host`), oldest first."""
        q = select(jobs).order_by(jobs.c.first_seen, jobs.c.job)
        if since is not None:
            q = q.where(jobs.c.last_seen >= since)
        if host is not None:
            q = q.where(jobs.c.id.in_(select(job_hosts.c.job_id).where(job_hosts.c.host == host)))
        with self.engine.connect() as conn:
            for r in conn.execute(q):
                yield Stored(r.job, r.state, json.loads(r.record), _utc(r.first_seen), _utc(r.last_seen))

    def first_seen(self) -> dict[str, datetime]:
        """The earliest first_seen of every fingerprint in the history."""
        from sqlalchemy import func

        with self.engine.connect() as conn:
            q = select(jobs.c.fingerprint, func.min(jobs.c.first_seen)).group_by(jobs.c.fingerprint)
            return {fp: _utc(t) for fp, t in conn.execute(q)}

    def daily(self, since: datetime | None = None) -> list[dict[str, Any]]:
        """Jobs per day (first seen) and category in the history: [{day, category, jobs}]."""
        counts: dict[tuple[str, str], int] = {}
        q = select(jobs.c.first_seen, jobs.c.category)
        if since is not None:
            q = q.where(jobs.c.first_seen >= since)
        with self.engine.connect() as conn:
            for first, category in conn.execute(q):
                key = (_utc(first).date().isoformat(), category)
                counts[key] = counts.get(key, 0) + 1
        return [{"day": d, "category": c, "jobs": n} for (d, c), n in sorted(counts.items())]

    def count(self) -> int:
        from sqlalchemy import func

        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(jobs)).scalar() or 0)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _safe(url: str) -> str:
    """The URL without its password."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<url>"
