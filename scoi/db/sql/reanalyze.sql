-- Re-analysis (`scoi reanalyze`, ingest/reanalyze.py): moves stored sentences to the
-- current analysis scheme (migration 0007). Only what the dependency tree determines
-- changes: sentence.parser_id, term_keys, term_mults and the sentence's sentence_term
-- rows (new term and label rows belong to the new parser row). Tokens, n_tokens,
-- eligible, the BM25 index (vocab, bm25_doc, bm25_block, bm25_dir, bm25_stats) and pairs depend on
-- the Moses tokens only and are never touched. Each batch is one transaction under the
-- ingest lock (ingest.sql, lock_writes).

-- name: schemes_in_use
-- Every parser row (analysis scheme) that at least one sentence uses, by language: one
-- probe of sentence_parser_idx per parser row.
SELECT p.lang, p.id, p.name, p.version, p.tree_tokens FROM parser p
WHERE EXISTS (SELECT 1 FROM sentence s WHERE s.parser_id = p.id)
ORDER BY p.lang, p.id;

-- name: sentences_of_parsers
-- Ids of the sentences analysed with these parser rows, in id order (what is left to do:
-- a rerun after an interruption finds only the sentences not moved yet).
SELECT id FROM sentence WHERE parser_id = ANY(%(parser_ids)s::int[]) ORDER BY id;

-- name: texts_to_reanalyze
-- The texts of a batch, without the sentences another run has moved meanwhile.
SELECT id, text FROM sentence
WHERE id = ANY(%(ids)s::bigint[]) AND parser_id <> %(parser_id)s
ORDER BY id;

-- name: move_sentences
-- The new scheme's parser row and polynomial of each sentence of a batch. Arrays of
-- arrays arrive as text arrays of array literals (one per sentence, any length). Rows
-- already on the new parser row (another run got there first) are left alone, so no
-- sentence is written twice; the ids returned are the rows this statement moved.
UPDATE sentence s
SET parser_id = %(parser_id)s, term_keys = u.keys::text[], term_mults = u.mults::int[]
FROM unnest(%(ids)s::bigint[], %(keys)s::text[], %(mults)s::text[]) AS u(id, keys, mults)
WHERE s.id = u.id AND s.id = ANY(%(ids)s::bigint[]) AND s.parser_id <> %(parser_id)s
RETURNING s.id;

-- name: delete_sentence_terms
-- The old polynomial rows of the moved sentences (their new ones are then copied in).
DELETE FROM sentence_term WHERE sentence_id = ANY(%(ids)s::bigint[]);

-- name: analyze_after_reanalyze
ANALYZE sentence, sentence_term, term;
