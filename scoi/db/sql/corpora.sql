-- The corpus listing of `scoi corpora` and of `scoi serve` (read only; scoi.corpora is its one reader).

-- name: list_corpora
SELECT name, src_lang, tgt_lang, pairs, both_sides_eligible, runs, created_at, last_ingest
FROM corpus_stats ORDER BY name;

-- name: language_trees
-- Sentences per language and analysis scheme (parser row): tree_tokens 'none' counts the
-- sentences stored without trees (no parser for the language at ingest).
SELECT p.lang, p.name AS parser, p.version, p.tree_tokens, count(*) AS sentences
FROM parser p JOIN sentence s ON s.parser_id = p.id
GROUP BY p.lang, p.id ORDER BY p.lang, p.id;

-- name: corpus_for_export
-- The corpus `scoi corpora export` writes: its languages and pair count (the progress bar's total).
SELECT c.id, c.src_lang, c.tgt_lang, (SELECT count(*) FROM pair p WHERE p.corpus_id = c.id) AS pairs
FROM corpus c WHERE c.name = %(name)s;

-- name: export_pairs
-- A corpus's pairs, each side in the language asked for (a pair stores its two sentences
-- as a/b by language order), with their metadata; read through a server-side cursor.
SELECT p.id,
       CASE WHEN p.a_lang = %(src)s THEN sa.text ELSE sb.text END AS src,
       CASE WHEN p.a_lang = %(src)s THEN sb.text ELSE sa.text END AS tgt,
       p.meta
FROM pair p
JOIN sentence sa ON sa.id = p.a_id
JOIN sentence sb ON sb.id = p.b_id
WHERE p.corpus_id = %(corpus_id)s
ORDER BY p.id;

-- name: export_meta_keys
-- The metadata keys a corpus's pairs use: the extra columns of its TSV export.
SELECT DISTINCT k FROM pair p, jsonb_object_keys(p.meta) AS k WHERE p.corpus_id = %(corpus_id)s ORDER BY k;
