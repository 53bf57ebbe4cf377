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
