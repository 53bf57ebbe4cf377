"""Translation-memory columns: pair metadata, match % on recorded picks and candidates, and
where each job output came from.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26

- ``pair.meta``: what the source file said about a pair besides its two texts (TMX header
  and ``<tu>``/``<tuv>`` properties, notes, dates, creation/change ids, usage counts; extra
  TSV/JSONL fields), as JSONB, so selections, lookups and jobs can be restricted to a
  client or a domain (``--where domain=legal``). A GIN index (jsonb_path_ops) serves the
  containment filter ``meta @> '{"domain": "legal"}'``.
- ``selection_pick.match`` / ``selection_candidate.match``: the match % (0-100, word-level
  edit-distance similarity, docs/method.md) of the example's source against the query, as
  CAT tools report it; NULL for selections recorded before this migration.
- ``job_item.origin`` / ``job_item.origin_pair_id``: ``llm`` when the model wrote the output,
  ``tm`` when the stored translation of an exact match was reused (then the pair it came
  from); NULL while the item is not done.
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE pair ADD COLUMN meta jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX pair_meta_idx ON pair USING gin (meta jsonb_path_ops);
COMMENT ON COLUMN pair.meta IS
    'What the source file said about the pair besides its texts (TMX props, notes, dates, ids, usage counts; extra TSV/JSONL fields); {} when nothing.';
ALTER TABLE selection_pick ADD COLUMN match real;
COMMENT ON COLUMN selection_pick.match IS
    'Match % (0-100) of the example''s source against the query: word-level edit-distance similarity (docs/method.md).';
ALTER TABLE selection_candidate ADD COLUMN match real;
COMMENT ON COLUMN selection_candidate.match IS
    'Match % (0-100) of the candidate''s source against the query (docs/method.md).';
ALTER TABLE job_item ADD COLUMN origin text, ADD COLUMN origin_pair_id bigint,
    ADD CONSTRAINT job_item_origin_check CHECK (origin IN ('llm', 'tm'));
COMMENT ON COLUMN job_item.origin IS
    'Where the output came from: llm (the model) or tm (the stored translation of an exact match, origin_pair_id); NULL until done.';
COMMENT ON COLUMN job_item.origin_pair_id IS
    'The pair whose translation was reused when origin = tm, else NULL.';
"""

DOWNGRADE = """
ALTER TABLE job_item DROP CONSTRAINT job_item_origin_check, DROP COLUMN origin_pair_id, DROP COLUMN origin;
ALTER TABLE selection_candidate DROP COLUMN match;
ALTER TABLE selection_pick DROP COLUMN match;
DROP INDEX pair_meta_idx;
ALTER TABLE pair DROP COLUMN meta;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
