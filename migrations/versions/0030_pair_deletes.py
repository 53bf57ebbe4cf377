"""Pairs can be deleted (``scoi corpora rm``, ``scoi pairs rm``, ``scoi ingest --on-conflict
replace``) while recorded selections keep their history.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-26

- ``selection_pick.pair_id`` / ``selection_candidate.pair_id``: nullable, and their foreign
  keys ``ON DELETE SET NULL``: a recorded selection keeps its rows (position, criterion,
  coverage, score, match) when a pair it used is deleted; the link reads NULL ("a pair
  since deleted"). The job item's prompt and output, which hold the examples' texts, stay
  as they were. Refusing the delete instead would make every pair ever picked undeletable.
- An index on each ``pair_id``: the foreign key's ON DELETE looks the deleted pairs up in
  these tables; without one, every deleted pair costs a scan of both tables.

The downgrade deletes the picks and candidates whose pair is gone (NOT NULL again).
"""

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE selection_pick ALTER COLUMN pair_id DROP NOT NULL,
    DROP CONSTRAINT selection_pick_pair_id_fkey,
    ADD CONSTRAINT selection_pick_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES pair(id) ON DELETE SET NULL;
ALTER TABLE selection_candidate ALTER COLUMN pair_id DROP NOT NULL,
    DROP CONSTRAINT selection_candidate_pair_id_fkey,
    ADD CONSTRAINT selection_candidate_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES pair(id) ON DELETE SET NULL;
CREATE INDEX selection_pick_pair_idx ON selection_pick (pair_id);
CREATE INDEX selection_candidate_pair_idx ON selection_candidate (pair_id);
COMMENT ON COLUMN selection_pick.pair_id IS 'The example picked; NULL when that pair was deleted since.';
COMMENT ON COLUMN selection_candidate.pair_id IS 'The candidate; NULL when that pair was deleted since.';
"""

DOWNGRADE = """
DROP INDEX selection_candidate_pair_idx;
DROP INDEX selection_pick_pair_idx;
DELETE FROM selection_candidate WHERE pair_id IS NULL;
DELETE FROM selection_pick WHERE pair_id IS NULL;
ALTER TABLE selection_candidate DROP CONSTRAINT selection_candidate_pair_id_fkey,
    ADD CONSTRAINT selection_candidate_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES pair(id),
    ALTER COLUMN pair_id SET NOT NULL;
ALTER TABLE selection_pick DROP CONSTRAINT selection_pick_pair_id_fkey,
    ADD CONSTRAINT selection_pick_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES pair(id),
    ALTER COLUMN pair_id SET NOT NULL;
COMMENT ON COLUMN selection_pick.pair_id IS NULL;
COMMENT ON COLUMN selection_candidate.pair_id IS NULL;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
