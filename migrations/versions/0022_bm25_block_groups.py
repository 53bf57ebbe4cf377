"""Posting blocks stored eight to a row: a full group of 8 blocks is one ``bm25_block`` row.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-24

Reading a long query's posting lists at 1M pairs costs PostgreSQL about one tuple per
row (docs/preselection.md, "Rows of eight blocks"). A token's full blocks, 8 at a time from
a block number that is a multiple of 8, are now one row (``block_no``: the first; its bytes
are the 8 blocks' bytes in order, so whole lists read the same), 6 KiB stored uncompressed
in the heap (``STORAGE PLAIN``: no pglz on reads). The blocks after the last full group
stay one row each; ingest rewrites them with its new postings and merges a group when it
fills (scoi/core/bm25blocks.py). The directory (``bm25_dir``) keeps one record per block.
``bm25_block_unpacked`` shows one row per block, as before.
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE bm25_block ALTER COLUMN ids SET STORAGE PLAIN, ALTER COLUMN tfdl SET STORAGE PLAIN;
-- rows an earlier rebuild stored compressed: rewrite them plain
UPDATE bm25_block SET ids = ids || ''::bytea, tfdl = tfdl || ''::bytea
WHERE pg_column_compression(ids) IS NOT NULL OR pg_column_compression(tfdl) IS NOT NULL;
CREATE TEMP TABLE bm25_group ON COMMIT DROP AS
    SELECT token_id, block_no / 8 * 8 AS block_no,
           string_agg(ids, ''::bytea ORDER BY block_no) AS ids, string_agg(tfdl, ''::bytea ORDER BY block_no) AS tfdl
    FROM bm25_block
    GROUP BY token_id, block_no / 8
    HAVING count(*) = 8 AND sum(length(tfdl)) = 2 * 8 * 128;
DELETE FROM bm25_block b USING bm25_group g
WHERE b.token_id = g.token_id AND b.block_no >= g.block_no AND b.block_no < g.block_no + 8;
INSERT INTO bm25_block (token_id, block_no, ids, tfdl) SELECT token_id, block_no, ids, tfdl FROM bm25_group;
CREATE VIEW bm25_block_unpacked AS
    SELECT r.token_id, r.block_no + k AS block_no,
           substr(r.ids, 1 + 4 * 128 * k, 4 * 128) AS ids, substr(r.tfdl, 1 + 2 * 128 * k, 2 * 128) AS tfdl
    FROM bm25_block r CROSS JOIN LATERAL generate_series(0, (length(r.tfdl) / 2 - 1) / 128) AS k;
COMMENT ON VIEW bm25_block_unpacked IS
    'The posting blocks one row per block of 128 postings (bm25_block stores full groups of 8 in one row).';
"""

DOWNGRADE = """
DROP VIEW bm25_block_unpacked;
CREATE TEMP TABLE bm25_single ON COMMIT DROP AS
    SELECT r.token_id, r.block_no + k AS block_no,
           substr(r.ids, 1 + 4 * 128 * k, 4 * 128) AS ids, substr(r.tfdl, 1 + 2 * 128 * k, 2 * 128) AS tfdl
    FROM bm25_block r CROSS JOIN LATERAL generate_series(0, 7) AS k
    WHERE length(r.tfdl) = 2 * 8 * 128;
DELETE FROM bm25_block WHERE length(tfdl) = 2 * 8 * 128;
INSERT INTO bm25_block (token_id, block_no, ids, tfdl) SELECT token_id, block_no, ids, tfdl FROM bm25_single;
ALTER TABLE bm25_block ALTER COLUMN ids SET STORAGE EXTENDED, ALTER COLUMN tfdl SET STORAGE EXTENDED;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
