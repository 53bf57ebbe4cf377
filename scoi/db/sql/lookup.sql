-- Fuzzy lookup (scoi/lookup.py): what a translation-memory pane shows besides the texts.

-- name: lookup_pairs
-- The corpus and metadata of the matches shown (a handful of pairs, by primary key).
SELECT p.id, c.name, p.meta
FROM pair p JOIN corpus c ON c.id = p.corpus_id
WHERE p.id = ANY(%(pair_ids)s);
