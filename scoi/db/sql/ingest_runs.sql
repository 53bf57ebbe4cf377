-- Ingest runs and the catalogue rows they write under (ingest/runs.py alone reads this
-- file): corpus and parser rows, the ingest_run row with its counts and rejected rows,
-- the statistics refresh after a run, and the corpus listing of `scoi corpora`. The batch
-- writer's statements and the ingest lock are in ingest.sql (ingest/writer.py).

-- name: get_or_create_corpus
WITH ins AS (
    INSERT INTO corpus (name, src_lang, tgt_lang) VALUES (%(name)s, %(src)s, %(tgt)s)
    ON CONFLICT (name) DO NOTHING
    RETURNING id, src_lang, tgt_lang
)
SELECT id, src_lang, tgt_lang FROM ins
UNION ALL
SELECT id, src_lang, tgt_lang FROM corpus WHERE name = %(name)s
LIMIT 1;

-- name: get_or_create_parser
-- The parser row of an analysis scheme (pipeline, version, tokens the tree is built over;
-- migration 0007).
WITH ins AS (
    INSERT INTO parser (lang, name, version, tree_tokens)
    VALUES (%(lang)s, %(name)s, %(version)s, %(tree_tokens)s)
    ON CONFLICT (lang, name, version, tree_tokens) DO NOTHING
    RETURNING id
)
SELECT id FROM ins
UNION ALL
SELECT id FROM parser
WHERE lang = %(lang)s AND name = %(name)s AND version = %(version)s AND tree_tokens = %(tree_tokens)s
LIMIT 1;

-- name: start_run
INSERT INTO ingest_run (corpus_id, files, format, workers, parsers, host, pid)
VALUES (%(corpus_id)s, %(files)s, %(format)s, %(workers)s, %(parsers)s, %(host)s, %(pid)s)
RETURNING id;

-- name: hold_run_lock
-- Session-level: held by the connection that started the run until it closes, however the
-- process ends; view ingest_run_status (migration 0014) reads a running row without it as
-- dead. Taken in the transaction that inserts the row, so the row is never seen unlocked.
SELECT pg_advisory_lock(4242002, %(run_id)s);

-- name: insert_rejected
INSERT INTO rejected_row (run_id, file, line, reason, content)
VALUES (%(run_id)s, %(file)s, %(line)s, %(reason)s, %(content)s)
ON CONFLICT DO NOTHING;

-- name: add_run_counts
UPDATE ingest_run
SET pairs_read = pairs_read + %(read)s, inserted = inserted + %(inserted)s,
    duplicates = duplicates + %(duplicates)s, rejected = rejected + %(rejected)s
WHERE id = %(run_id)s;

-- name: finish_run
UPDATE ingest_run SET status = %(status)s, finished_at = now(), error = %(error)s
WHERE id = %(run_id)s;

-- name: vacuum_after_ingest
-- Fresh planner statistics for every table the selector reads, and the posting blocks'
-- dead row versions freed (each batch rewrites its tokens' open blocks and directories:
-- without it the blocks' table grows by those copies until autovacuum comes).
VACUUM (ANALYZE) bm25_block, bm25_dir;

-- name: analyze_after_ingest
ANALYZE bm25_doc, sentence, sentence_term, pair, vocab, term;

-- name: list_runs
-- Newest first; state is running / done / failed, or dead (its session is gone).
SELECT run_id, corpus, files, format, state, started_at, finished_at, pairs_read, inserted,
       duplicates, rejected, workers, host, pid, error
FROM ingest_run_status
WHERE %(corpus)s::text IS NULL OR corpus = %(corpus)s
ORDER BY run_id DESC
LIMIT %(limit)s;
