-- Deleting pairs and corpora while the BM25 index stays exact (ingest/drops.py's
-- drop_pairs and ingest/delete.py read this file; the posting blocks are rewritten by
-- blocks.sql's statements). Everything runs in one transaction under the ingest lock (ingest.sql, lock_writes): a deleted pair's sentences go when no
-- other pair (of any corpus or direction) uses them, with their forward row, postings
-- (in the blocks), df and N/total length. Array parameters arrive as arrays.

-- name: delete_pairs
-- The pairs, and the sentences they named (the candidates for deletion).
DELETE FROM pair WHERE id = ANY(%(ids)s::bigint[]) RETURNING id, a_id, b_id;

-- name: orphans
-- Which of these sentences no pair uses any more (pair_a_id: the unique key's first
-- column; pair_b_idx), with language and sha (an ingest may protect some).
SELECT s.id, s.lang, s.text_sha FROM sentence s
WHERE s.id = ANY(%(ids)s::bigint[])
  AND NOT EXISTS (SELECT 1 FROM pair p WHERE p.a_id = s.id)
  AND NOT EXISTS (SELECT 1 FROM pair p WHERE p.b_id = s.id);

-- name: delete_docs
-- The forward rows of the sentences: their distinct token ids name the posting lists
-- whose blocks are rewritten without them.
DELETE FROM bm25_doc WHERE sentence_id = ANY(%(ids)s::bigint[]) RETURNING sentence_id, token_ids;

-- name: delete_sentence_terms
DELETE FROM sentence_term WHERE sentence_id = ANY(%(ids)s::bigint[]);

-- name: delete_sentences
-- sentence_embedding rows go with them (ON DELETE CASCADE).
DELETE FROM sentence WHERE id = ANY(%(ids)s::bigint[]) RETURNING lang, eligible, n_tokens;

-- name: sub_bm25_stats
-- N and total length without the deleted eligible sentences.
UPDATE bm25_stats b SET n_docs = b.n_docs - u.n, total_len = b.total_len - u.len
FROM unnest(%(langs)s::text[], %(ns)s::bigint[], %(lens)s::bigint[]) AS u(lang, n, len)
WHERE b.lang = u.lang;

-- name: drop_empty_stats
-- A language left without eligible sentences loses its row, as if never ingested (`scoi
-- db check` compares the rows with the sentences). A statement of its own: one statement
-- cannot update a row and then delete it.
DELETE FROM bm25_stats WHERE lang = ANY(%(langs)s::text[]) AND n_docs = 0;

-- name: pairs_by_id
-- Which of these pair ids exist (a delete by id names the missing ones).
SELECT id FROM pair WHERE id = ANY(%(ids)s::bigint[]);

-- name: pairs_by_file
-- The pairs the runs of a file (absolute path, as ingest_run.files records it) inserted,
-- optionally of one corpus.
SELECT p.id FROM pair p JOIN ingest_run r ON r.id = p.run_id
WHERE %(path)s = ANY(r.files) AND (%(corpus)s::text IS NULL OR p.corpus_id = (SELECT id FROM corpus WHERE name = %(corpus)s));

-- name: pairs_by_meta
-- The pairs whose metadata hold every key = value given (a value or an element of a list:
-- TMX's repeated props), optionally of one corpus; pair_meta_idx serves the containment.
SELECT p.id FROM pair p
WHERE (%(corpus)s::text IS NULL OR p.corpus_id = (SELECT id FROM corpus WHERE name = %(corpus)s))
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(%(where)s::jsonb) AS w(k, v)
                  WHERE NOT (p.meta @> jsonb_build_object(w.k, w.v) OR p.meta @> jsonb_build_object(w.k, jsonb_build_array(w.v))));

-- name: corpus_row
SELECT id, name, src_lang, tgt_lang FROM corpus WHERE name = %(name)s;

-- name: corpus_pairs
SELECT id FROM pair WHERE corpus_id = %(corpus_id)s;

-- name: running_runs
-- Runs of the corpus still running (a live process: view ingest_run_status): a corpus is
-- not deleted under an ingest that is writing to it.
SELECT s.run_id FROM ingest_run_status s JOIN ingest_run r ON r.id = s.run_id
WHERE r.corpus_id = %(corpus_id)s AND s.state = 'running' ORDER BY s.run_id;

-- name: delete_runs
-- The corpus's runs, once its pairs are gone (their rejected rows cascade).
DELETE FROM ingest_run WHERE corpus_id = %(corpus_id)s;

-- name: delete_corpus
DELETE FROM corpus WHERE id = %(corpus_id)s;
