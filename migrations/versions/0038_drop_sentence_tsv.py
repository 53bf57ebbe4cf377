"""The stored ``sentence.tsv`` column goes; a view computes it for people's own full-text search.

Revision ID: 0038
Revises: 0034
Create Date: 2026-11-26

``sentence.tsv`` (0001) was a generated, stored ``tsvector`` with a GIN index, kept "for
people's own ``@@`` queries" after scoi's BM25 moved to the posting blocks (0016): no query
of scoi reads it. It held 166 bytes a sentence at 1M pairs, a sixth of the table, plus its
index, and every ingest computed and indexed it. ``sentence_search`` gives the same column,
computed when read; who searches often adds the expression index docs/schema.md names.

The table is rewritten (CLUSTER on its primary key, allowed in the migration's
transaction): a dropped column keeps its bytes in every row until the row is rewritten.
"""

from alembic import op

revision = "0038"
down_revision = "0034"
branch_labels = None
depends_on = None

UPGRADE = """
DROP INDEX IF EXISTS sentence_tsv_idx;
ALTER TABLE sentence DROP COLUMN tsv;
CLUSTER sentence USING sentence_pkey;
ALTER TABLE sentence SET WITHOUT CLUSTER;
CREATE VIEW sentence_search AS
SELECT id, lang, text, to_tsvector('simple', text) AS tsv FROM sentence;
COMMENT ON VIEW sentence_search IS 'Every stored sentence with its simple-config tsvector, for your own full-text queries (tsv @@ plainto_tsquery(''simple'', ...)); computed when read: CREATE INDEX ON sentence USING gin (to_tsvector(''simple'', text)) makes @@ on it fast. scoi ranks by BM25 from the posting blocks, not from this.';
"""

DOWNGRADE = """
DROP VIEW sentence_search;
ALTER TABLE sentence ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED;
CREATE INDEX sentence_tsv_idx ON sentence USING gin (tsv);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
