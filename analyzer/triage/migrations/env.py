"""Alembic environment: the connection comes from the caller (analyzer.triage.store)."""

from __future__ import annotations

from alembic import context

from analyzer.triage.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
