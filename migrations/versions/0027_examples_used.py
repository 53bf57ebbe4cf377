"""How many examples each job item's prompt really held.

Revision ID: 0027
Revises: 0023
Create Date: 2026-11-26

- ``job_item.examples_used``: the number of selected examples the item's prompt kept. A
  prompt that would not fit the model's context (prompt tokens + max_new_tokens) drops
  its last-ranked examples until it fits (docs/jobs.md), so this can be below the job's
  ``k``; NULL while the item is not done, and for items done before this migration.
"""

from alembic import op

revision = "0027"
down_revision = "0023"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE job_item ADD COLUMN examples_used integer CHECK (examples_used >= 0);
COMMENT ON COLUMN job_item.examples_used IS
    'Examples the prompt kept: below the job''s k when examples were dropped (last-ranked first) to fit the model''s context; NULL until done.';
"""

DOWNGRADE = """
ALTER TABLE job_item DROP COLUMN examples_used;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
