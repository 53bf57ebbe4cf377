"""Languages without a parser, and natasha's trees.

Revision ID: 0018
Revises: 0015
Create Date: 2026-11-24

* ``parser.tree_tokens`` may be 'none' (sentences stored without trees: their language had
  no parser at ingest; ``scoi reanalyze --lang L`` adds trees later) and 'razdel'
  (natasha's trees for Russian, over razdel's tokens).
"""

from alembic import op

revision = "0018"
down_revision = "0015"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE parser DROP CONSTRAINT parser_tree_tokens_check;
ALTER TABLE parser ADD CONSTRAINT parser_tree_tokens_check
    CHECK (tree_tokens IN ('moses', 'spacy', 'razdel', 'none'));

"""

DOWNGRADE = """
ALTER TABLE parser DROP CONSTRAINT parser_tree_tokens_check;
ALTER TABLE parser ADD CONSTRAINT parser_tree_tokens_check CHECK (tree_tokens IN ('moses', 'spacy'));
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    # Only possible while no parser row is 'none' or 'razdel'.
    op.execute(DOWNGRADE)
