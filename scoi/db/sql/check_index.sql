-- The statements of `scoi db check`'s pass_index (scoi/db/check.py, index_pass): the BM25
-- index streamed to Python, where scoi/core/blockcheck.py decodes and compares it (the
-- blocks against the forward rows, token by token). Read on the checks' shared snapshot.

-- name: vocab
SELECT id, lang, df FROM vocab;

-- name: blocks
-- Each token's directory and block rows (numbers, tfdl lengths: -1 where the ids are not
-- 4 bytes a posting, and their bytes concatenated in block order): one primary-key range
-- per token. Block rows of no directory are bm25_dirs's (check.sql).
SELECT d.token_id, d.meta, b.nos, b.lens, b.ids, b.tfdl
FROM bm25_dir d
LEFT JOIN LATERAL (
    SELECT array_agg(b.block_no ORDER BY b.block_no) AS nos,
           array_agg(CASE WHEN length(b.ids) = 2 * length(b.tfdl) THEN length(b.tfdl) ELSE -1 END
                     ORDER BY b.block_no) AS lens,
           string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids,
           string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
    FROM bm25_block b WHERE b.token_id = d.token_id) b ON true
ORDER BY d.token_id;

-- name: docs
-- The forward rows a chunk of `chunk` sentence ids at a time, each chunk one row: rows
-- that are not a one-dimensional token id array and a tf array of its size without NULLs
-- (counted), then the others' sentence ids, dl, sizes and sentences' language (NULL: no
-- sentence), and their arrays as array_send writes them, concatenated (the client cuts
-- them apart: one row per chunk, not per sentence, is what makes 1M sentences a few seconds).
SELECT count(*) FILTER (WHERE NOT x.ok),
       array_agg(x.sentence_id ORDER BY x.sentence_id) FILTER (WHERE x.ok),
       array_agg(x.dl ORDER BY x.sentence_id) FILTER (WHERE x.ok),
       array_agg(x.n ORDER BY x.sentence_id) FILTER (WHERE x.ok),
       array_agg(x.lang ORDER BY x.sentence_id) FILTER (WHERE x.ok),
       string_agg(array_send(x.token_ids), ''::bytea ORDER BY x.sentence_id) FILTER (WHERE x.ok),
       string_agg(array_send(x.tfs), ''::bytea ORDER BY x.sentence_id) FILTER (WHERE x.ok)
FROM (SELECT d.sentence_id, d.dl, d.token_ids, d.tfs, s.lang, cardinality(d.token_ids) AS n,
             CASE WHEN coalesce(array_ndims(d.token_ids), 1) <> 1 OR coalesce(array_ndims(d.tfs), 1) <> 1
                       OR cardinality(d.tfs) <> cardinality(d.token_ids) THEN false
                  ELSE array_position(d.token_ids, NULL) IS NULL AND array_position(d.tfs, NULL) IS NULL END AS ok
      FROM bm25_doc d LEFT JOIN sentence s ON s.id = d.sentence_id) x
GROUP BY x.sentence_id / %(chunk)s;
