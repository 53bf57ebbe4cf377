-- Recording a selection for inspection in SQL (tables and views of migration 0002).
-- Read by scoi/recording.py alone; one transaction per selection.

-- name: insert_selection
INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, query_tokens)
VALUES (%(query)s, %(src)s, %(tgt)s, %(method)s, %(k)s, %(params)s, %(signature)s, %(tokens)s)
RETURNING id;

-- name: copy_query_terms
COPY selection_query_term (selection_id, key, mult, exps) FROM STDIN;

-- name: copy_candidates
COPY selection_candidate (selection_id, rank, pair_id, score) FROM STDIN;

-- name: copy_picks
COPY selection_pick (selection_id, position, pair_id, criterion, coverage) FROM STDIN;
