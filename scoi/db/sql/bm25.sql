-- The BM25 index's posting blocks (migrations 0016 and 0022, scoi/core/bm25blocks.py for the byte
-- layout, docs/preselection.md for why). Ingest keeps them in the batch's transaction
-- (ingest.sql); this file rebuilds them all from the forward rows (bm25_doc), which hold
-- the same postings by sentence: the migration that adds the blocks runs it, and so does
-- the 1M-pair benchmark after writing forward rows directly.

-- name: rebuild_blocks
-- Every token's postings in sentence id order, cut into blocks of 128 postings; a full
-- group of 8 blocks (numbers from a multiple of 8) is one row (migration 0022); one
-- directory row per token (records as bm25blocks.DIR: first id, last id, size, max tf,
-- and the shortest sentence holding the token once, twice, three times or more, 0 for
-- none). int4send and int2send write big-endian, the layout the selector decodes. 128 and
-- 8 are bm25blocks.BLOCK and GROUP (tests/unit/test_bm25_layout_sql.py checks them).
CREATE TEMP TABLE bm25_rebuild ON COMMIT DROP AS
    SELECT u.token_id, d.sentence_id, u.tf, d.dl,
           (row_number() OVER (PARTITION BY u.token_id ORDER BY d.sentence_id) - 1) / 128 AS block_no
    FROM bm25_doc d CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf);
CREATE TEMP TABLE bm25_rebuild_block ON COMMIT DROP AS
    SELECT token_id, block_no, count(*) AS n,
           string_agg(int4send((sentence_id - first)::int), ''::bytea ORDER BY sentence_id) AS ids,
           string_agg(int2send((tf::int << 8 | dl)::smallint), ''::bytea ORDER BY sentence_id) AS tfdl
    FROM (SELECT r.*, min(sentence_id) OVER (PARTITION BY token_id, block_no) AS first FROM bm25_rebuild r) x
    GROUP BY token_id, block_no;
TRUNCATE bm25_block, bm25_dir;
INSERT INTO bm25_block (token_id, block_no, ids, tfdl)
SELECT token_id, min(block_no), string_agg(ids, ''::bytea ORDER BY block_no), string_agg(tfdl, ''::bytea ORDER BY block_no)
FROM (SELECT b.*, CASE WHEN sum(n) OVER (PARTITION BY token_id, block_no / 8) = 8 * 128
                       THEN block_no / 8 * 8 ELSE block_no END AS row_no
      FROM bm25_rebuild_block b) g
GROUP BY token_id, row_no;
INSERT INTO bm25_dir (token_id, n_blocks, tail_n, meta)
SELECT token_id, count(*), (array_agg(n ORDER BY block_no DESC))[1], string_agg(rec, ''::bytea ORDER BY block_no)
FROM (SELECT token_id, block_no, count(*)::smallint AS n,
             int8send(min(sentence_id)) || int8send(max(sentence_id)) || int2send(count(*)::smallint)
             || int2send(max(tf)) || int2send(coalesce(min(dl) FILTER (WHERE tf = 1), 0)::smallint)
             || int2send(coalesce(min(dl) FILTER (WHERE tf = 2), 0)::smallint)
             || int2send(coalesce(min(dl) FILTER (WHERE tf >= 3), 0)::smallint) AS rec
      FROM bm25_rebuild GROUP BY token_id, block_no) b
GROUP BY token_id;
