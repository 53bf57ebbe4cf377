-- BM25 posting blocks (migrations 0016, 0022), read by ingest/blocks.py alone: a batch's
-- postings appended to each token's open blocks, and a token's blocks rewritten from the
-- first one that lost a posting when sentences are deleted. Run under the ingest lock
-- (ingest.sql, lock_writes), in the caller's transaction.

-- name: dir_sizes
-- The block count and last block size of the tokens a batch adds postings to: which of
-- their blocks the batch rewrites (scoi.core.bm25blocks.rewrite_from).
SELECT token_id, n_blocks, tail_n FROM bm25_dir WHERE token_id = ANY(%(ids)s::int[]);

-- name: delete_blocks
-- The open blocks a batch rewrites (each token's rows from a block number on, at most
-- a group's worth): primary-key probes (LATERAL; LIMIT keeps the planner from flattening it into
-- a join, which would hash the whole table), then a TID scan: the cost follows the batch,
-- not the table.
DELETE FROM bm25_block WHERE ctid = ANY(ARRAY(
    SELECT x.ctid FROM unnest(%(ids)s::int[], %(block_nos)s::int[]) AS u(token_id, block_no)
    CROSS JOIN LATERAL (SELECT b.ctid FROM bm25_block b WHERE b.token_id = u.token_id AND b.block_no >= u.block_no
                        ORDER BY b.block_no LIMIT %(group)s) x));

-- name: copy_blocks
COPY bm25_block (token_id, block_no, ids, tfdl) FROM STDIN;

-- name: upsert_dirs
-- New tokens' directories, or the records of the blocks a batch wrote for a token (from
-- its first open block on: n_blocks minus the records given) replacing the server's.
INSERT INTO bm25_dir AS d (token_id, n_blocks, tail_n, meta)
SELECT * FROM unnest(%(ids)s::int[], %(n_blocks)s::int[], %(tail_n)s::smallint[], %(metas)s::bytea[])
ON CONFLICT (token_id) DO UPDATE
SET n_blocks = excluded.n_blocks, tail_n = excluded.tail_n,
    meta = substr(d.meta, 1, %(rec)s * (excluded.n_blocks - length(excluded.meta) / %(rec)s)) || excluded.meta;

-- name: set_df
-- df of tokens that lost postings, counted from their rewritten blocks (ingest/blocks.py,
-- rewrite_blocks). A token left without postings keeps its row (ids are cached by running
-- ingests) with df 0, which every query skips.
UPDATE vocab v SET df = u.df
FROM unnest(%(ids)s::int[], %(df)s::int[]) AS u(id, df)
WHERE v.id = u.id;

-- name: dirs
-- The block directories of the tokens that lost postings.
SELECT token_id, meta FROM bm25_dir WHERE token_id = ANY(%(ids)s::int[]);

-- name: blocks_from
-- Each token's block rows from a block number on (the ones to rewrite: after a delete, or
-- the blocks a batch appends to), their bytes concatenated in block order, and their
-- directory records: one probe of the primary key per token. The rest of the directory
-- stays on the server (upsert_dirs keeps it).
SELECT u.token_id, substr(d.meta, %(rec)s * u.block_no + 1), x.ids, x.tfdl
FROM unnest(%(ids)s::int[], %(block_nos)s::int[]) AS u(token_id, block_no)
JOIN bm25_dir d ON d.token_id = u.token_id
CROSS JOIN LATERAL (SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids,
                           string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
                    FROM bm25_block b WHERE b.token_id = u.token_id AND b.block_no >= u.block_no) x;

-- name: delete_blocks_from
-- Each token's block rows from a block number on (the rewritten ones).
DELETE FROM bm25_block WHERE ctid = ANY(ARRAY(
    SELECT x.ctid FROM unnest(%(ids)s::int[], %(block_nos)s::int[]) AS u(token_id, block_no)
    CROSS JOIN LATERAL (SELECT b.ctid FROM bm25_block b WHERE b.token_id = u.token_id
                        AND b.block_no >= u.block_no) x));

-- name: delete_dirs
-- Directories of tokens left without postings.
DELETE FROM bm25_dir WHERE token_id = ANY(%(ids)s::int[]);
