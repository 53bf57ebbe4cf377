-- Polynomial terms, read by ingest/terms.py alone: a parser's labels (dimensions), the
-- term rows a batch adds and their ids, and the sentence_term rows. Run under the
-- ingest lock (ingest.sql, lock_writes) by ingest and `scoi reanalyze`.

-- name: parser_labels
SELECT idx, name FROM label WHERE parser_id = %(parser_id)s ORDER BY idx;

-- name: insert_label
INSERT INTO label (parser_id, idx, name) VALUES (%(parser_id)s, %(idx)s, %(name)s)
ON CONFLICT DO NOTHING;

-- name: insert_terms
INSERT INTO term (parser_id, key, exps, degree)
SELECT %(parser_id)s, k, e::sparsevec, d
FROM unnest(%(keys)s::text[], %(exps)s::text[], %(degrees)s::smallint[]) AS u(k, e, d)
ON CONFLICT (parser_id, key) DO NOTHING;

-- name: term_ids
SELECT key, id FROM term WHERE parser_id = %(parser_id)s AND key = ANY(%(keys)s::text[]);

-- name: copy_sentence_terms
COPY sentence_term (sentence_id, term_id, mult) FROM STDIN;
