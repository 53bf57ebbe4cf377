-- Fuzzy lookup (scoi/lookup.py): the pool's source tokens, then what the TM pane shows.

-- name: lookup_tokens
-- The source-side Moses tokens of the pool's pairs, in pool order (nothing else: the
-- match percentage needs only these, and a pool of 500 is fetched for a handful of matches).
SELECT e.id, src.tokens
FROM unnest(%(pair_ids)s::bigint[]) WITH ORDINALITY AS c(pair_id, ord)
JOIN pair e ON e.id = c.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
ORDER BY c.ord;

-- name: lookup_pairs
-- The texts, corpus and metadata of the matches shown (a handful of pairs, by primary key).
SELECT e.id, src.text, tgt.text, c.name, e.meta
FROM pair e
JOIN corpus c ON c.id = e.corpus_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = %(lang)s THEN e.b_id ELSE e.a_id END
WHERE e.id = ANY(%(pair_ids)s::bigint[]);
