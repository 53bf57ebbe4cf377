"""BM25 posting blocks: the index the selector scores in numpy, stored in PostgreSQL.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24

Why (docs/preselection.md): exact BM25 top n at a million pairs and more needs every
posting that a bound cannot rule out, and PostgreSQL's executor costs ~0.2-1 us per
posting row. Packed, a token's postings are read as a few ``bytea`` values and scored in
numpy, and bounds per block of 128 let most blocks of common tokens go unread.

- ``bm25_block(token_id, block_no, ids, tfdl)``: a token's postings in sentence id order,
  128 per block (the last may be shorter); the byte layout is scoi/core/bm25blocks.py's.
- ``bm25_dir(token_id, n_blocks, tail_n, meta)``: per token, one record per block (first
  and last sentence id, size, (tf, dl) extremes, from which the selector computes each
  block's bound with the current idf and avgdl), and the size of its last block.

Ingest appends in the batch's transaction (a token's last block is rewritten with the new
postings, further blocks added, its directory row replaced): readers see the old or the
new row versions, never a mix, and never wait. ``posting`` stays: the plain-SQL
preselection (``Bm25Params(engine="sql")``) and ``scoi db check`` read it, and the
upgrade builds the blocks from it (scoi/db/sql/bm25.sql, rebuild_blocks; 4.5 s for 3.7M
postings here, so a migration, not a separate re-index command).
"""

from alembic import op

from scoi.db.queries import load

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE bm25_block (
    token_id integer NOT NULL,
    block_no integer NOT NULL,
    ids bytea NOT NULL,
    tfdl bytea NOT NULL,
    PRIMARY KEY (token_id, block_no)
);
CREATE TABLE bm25_dir (
    token_id integer PRIMARY KEY,
    n_blocks integer NOT NULL,
    tail_n smallint NOT NULL,
    meta bytea NOT NULL
);
-- Directories of common tokens run to tens of kB: stored out of line uncompressed, so
-- that reading one costs a copy, not a decompression, and rewriting one no compression.
ALTER TABLE bm25_dir ALTER COLUMN meta SET STORAGE EXTERNAL;
"""

DOWNGRADE = "DROP TABLE bm25_block, bm25_dir;"


def upgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql(UPGRADE)
    bind.exec_driver_sql(load("bm25")["rebuild_blocks"])


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
