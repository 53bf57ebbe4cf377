-- Ingest: one transaction per batch, under the ingest lock. The writer (ingest/writer.py)
-- looks up which of the batch's sentences are already stored, resolves term and token
-- ids, draws sentence ids from the sequence, COPYs the rows straight into the tables and
-- inserts the pairs by id with ON CONFLICT DO NOTHING. Reruns and concurrent runs never
-- duplicate. Array parameters arrive as array literals (text), cast here.
-- ingest/writer.py alone reads this file; the run and catalogue rows (corpus, parser,
-- ingest_run) are in ingest_runs.sql (ingest/runs.py), the terms in terms.sql
-- (ingest/terms.py), the posting blocks in blocks.sql (ingest/blocks.py).

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

-- name: copy_bm25_docs
-- The forward-index row of each new eligible sentence: its distinct lowercased tokens
-- with their tf, sorted by token id (inverted, the same postings go to the blocks).
COPY bm25_doc (sentence_id, dl, token_ids, tfs) FROM STDIN;

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

-- name: source_pairs
-- The pairs of this corpus, from other runs, whose source sentence is one of a batch's:
-- what --on-conflict decides about. {src} is the pair's column of the source side (a_id:
-- the unique key's first column; b_id: pair_b_idx).
SELECT p.id, p.a_id, p.b_id FROM pair p
WHERE p.{src} = ANY(%(src_ids)s::bigint[]) AND p.corpus_id = %(corpus_id)s
  AND p.run_id IS DISTINCT FROM %(run_id)s;
