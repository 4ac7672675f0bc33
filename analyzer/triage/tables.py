"""The history database's tables (SQLAlchemy Core). Alembic migrations under `migrations/`
create and change them; a test checks that the migrations and these tables agree."""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job", String(4096), nullable=False, unique=True),  # the run dir's absolute path
    Column("state", String(64), nullable=False),  # digest of the run dir's files and the tool version
    Column("category", String(32), nullable=False),
    Column("subcategory", String(128)),
    Column("confidence", Float, nullable=False),
    Column("fingerprint", String(64), nullable=False),  # the group's fingerprint
    Column("title", Text, nullable=False),
    Column("record", Text, nullable=False),  # the job's triage record as JSON
    Column("first_seen", DateTime(timezone=True), nullable=False),
    Column("last_seen", DateTime(timezone=True), nullable=False),
)
Index("ix_jobs_fingerprint", jobs.c.fingerprint)

job_hosts = Table(
    "job_hosts",
    metadata,
    Column("job_id", Integer, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("gpus", Text, nullable=False),  # JSON list of PCI bus ids seen failing on this host
)
Index("ix_job_hosts_host", job_hosts.c.host)
