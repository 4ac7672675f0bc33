"""job_hosts: the hosts (and their failing GPUs) of each job, for per-node history

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_hosts",
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("host", sa.String(255), primary_key=True),
        sa.Column("gpus", sa.Text(), nullable=False),
    )
    op.create_index("ix_job_hosts_host", "job_hosts", ["host"])


def downgrade() -> None:
    op.drop_index("ix_job_hosts_host", table_name="job_hosts")
    op.drop_table("job_hosts")
