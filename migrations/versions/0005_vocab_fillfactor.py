"""vocab keeps free space in its pages, so df updates are HOT updates.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23

Why: every ingest transaction adds to ``vocab.df`` for each distinct token of its
sentences (a few thousand rows per transaction). In full pages an update is a new row
version elsewhere plus new entries in both vocab indexes; with free space on the page
it is a heap-only tuple (HOT) update that touches no index. Measured on the same 16k
parsed pairs: the df update went from 0.007-0.010 to 0.0025-0.003 ms per sentence.
Takes effect for pages written from now on (VACUUM FULL vocab rewrites the old ones).
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE vocab SET (fillfactor = 50)")


def downgrade() -> None:
    op.execute("ALTER TABLE vocab RESET (fillfactor)")
