-- Ingest: one transaction per batch, under the ingest lock. The writer (ingest/writer.py)
-- looks up which of the batch's sentences are already stored, resolves term and token
-- ids, draws sentence ids from the sequence, COPYs the rows straight into the tables and
-- inserts the pairs by id with ON CONFLICT DO NOTHING. Reruns and concurrent runs never
-- duplicate. Array parameters arrive as array literals (text), cast here.
-- The ingest writer (ingest/writer.py, terms.py, blocks.py) alone reads this file; the run and catalogue rows (corpus, parser,
-- ingest_run) are in ingest_runs.sql (ingest/runs.py).

-- name: lock_writes
-- Concurrent ingests parse in parallel but write one batch at a time: what a batch
-- checks (stored sentences, known terms and tokens) stays true until it commits, and the
-- df counters and unique keys are free of deadlocks. Released at commit.
SELECT pg_advisory_xact_lock(4242001);

-- name: stored_sentences
-- Which of these sentences are stored already, and their ids.
SELECT text_sha, id FROM sentence WHERE lang = %(lang)s AND text_sha = ANY(%(shas)s::bytea[]);

-- name: next_sentence_ids
SELECT nextval(pg_get_serial_sequence('sentence', 'id')) FROM generate_series(1, %(n)s);

-- name: copy_sentences
COPY sentence (id, lang, text, text_sha, tokens, n_tokens, parser_id, eligible, term_keys, term_mults)
FROM STDIN;

-- name: copy_sentence_terms
COPY sentence_term (sentence_id, term_id, mult) FROM STDIN;

-- name: copy_bm25_docs
-- The forward-index row of each new eligible sentence: its distinct lowercased tokens
-- with their tf, sorted by token id (inverted, the same postings go to the blocks).
COPY bm25_doc (sentence_id, dl, token_ids, tfs) FROM STDIN;

-- name: insert_terms
INSERT INTO term (parser_id, key, exps, degree)
SELECT %(parser_id)s, k, e::sparsevec, d
FROM unnest(%(keys)s::text[], %(exps)s::text[], %(degrees)s::smallint[]) AS u(k, e, d)
ON CONFLICT (parser_id, key) DO NOTHING;

-- name: term_ids
SELECT key, id FROM term WHERE parser_id = %(parser_id)s AND key = ANY(%(keys)s::text[]);

-- name: insert_vocab
INSERT INTO vocab (lang, token)
SELECT %(lang)s, tok FROM unnest(%(tokens)s::text[]) AS tok
ON CONFLICT (lang, token) DO NOTHING;

-- name: vocab_ids
SELECT token, id FROM vocab WHERE lang = %(lang)s AND token = ANY(%(tokens)s::text[]);

-- name: add_df
-- df: the batch's new postings per token.
UPDATE vocab v SET df = v.df + u.n
FROM unnest(%(ids)s::int[], %(n)s::int[]) AS u(id, n)
WHERE v.id = u.id;

-- name: add_bm25_stats
INSERT INTO bm25_stats AS b (lang, n_docs, total_len) VALUES (%(lang)s, %(n_docs)s, %(total_len)s)
ON CONFLICT (lang) DO UPDATE
SET n_docs = b.n_docs + excluded.n_docs, total_len = b.total_len + excluded.total_len;

-- name: insert_pairs
-- a_* is the side whose language code sorts first (see the pair table). Pair ids follow
-- the input's line order (ties in selection go to the lower pair id).
-- metas: each pair's metadata as JSON text (pair.meta).
WITH ins AS (
    INSERT INTO pair (corpus_id, a_lang, b_lang, a_id, b_id, run_id, line, meta)
    SELECT %(corpus_id)s, %(a_lang)s, %(b_lang)s, u.a_id, u.b_id, %(run_id)s, u.line, u.meta::jsonb
    FROM unnest(%(a_ids)s::bigint[], %(b_ids)s::bigint[], %(lines)s::int[], %(metas)s::text[]) AS u(a_id, b_id, line, meta)
    ORDER BY u.line
    ON CONFLICT (a_id, b_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM ins;

-- name: upsert_pairs
-- insert_pairs for --on-conflict replace: a pair the corpus holds already becomes this
-- run's, with the input's metadata (so the run's later batches do not replace it, and a
-- corrected usage count or note is kept); a pair of another corpus is left alone.
-- Counts the inserted rows only (xmax = 0: not an update).
WITH ins AS (
    INSERT INTO pair AS p (corpus_id, a_lang, b_lang, a_id, b_id, run_id, line, meta)
    SELECT %(corpus_id)s, %(a_lang)s, %(b_lang)s, u.a_id, u.b_id, %(run_id)s, u.line, u.meta::jsonb
    FROM unnest(%(a_ids)s::bigint[], %(b_ids)s::bigint[], %(lines)s::int[], %(metas)s::text[]) AS u(a_id, b_id, line, meta)
    ORDER BY u.line
    ON CONFLICT (a_id, b_id) DO UPDATE SET run_id = excluded.run_id, meta = excluded.meta
    WHERE p.corpus_id = excluded.corpus_id
    RETURNING xmax = 0 AS inserted
)
SELECT count(*) FILTER (WHERE inserted) FROM ins;

-- name: parser_labels
SELECT idx, name FROM label WHERE parser_id = %(parser_id)s ORDER BY idx;

-- name: insert_label
INSERT INTO label (parser_id, idx, name) VALUES (%(parser_id)s, %(idx)s, %(name)s)
ON CONFLICT DO NOTHING;

-- name: block_tails
-- The posting blocks of the tokens a batch adds postings to (migrations 0016, 0022): each
-- token's block count, last block size, and its open blocks (from from_no, as
-- scoi.core.bm25blocks.open_from computes it: the ones not in a full group, one row each)
-- with their directory records; the batch rewrites them with its new postings
-- (sentence ids only grow: they are drawn under the lock). The rest of the directory
-- stays on the server (upsert_dirs appends to it there).
SELECT d.token_id, d.n_blocks, d.tail_n, substr(d.meta, %(rec)s * o.from_no + 1), b.ids, b.tfdl
FROM bm25_dir d
CROSS JOIN LATERAL (SELECT %(group)s * ((d.n_blocks - (d.tail_n < %(block)s)::int) / %(group)s) AS from_no) o
LEFT JOIN LATERAL (SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids,
                          string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
                   FROM bm25_block b WHERE b.token_id = d.token_id AND b.block_no >= o.from_no) b ON true
WHERE d.token_id = ANY(%(ids)s::int[]);

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
