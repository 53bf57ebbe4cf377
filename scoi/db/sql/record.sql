-- Recording a selection for inspection in SQL (tables and views of migration 0002).
-- Read by scoi/selection/recording.py alone; one transaction per call (one selection, or a worker's batch).

-- name: next_selection_ids
-- Ids for n selections written together (COPY cannot return the ids it assigns).
SELECT nextval(pg_get_serial_sequence('selection', 'id')) FROM generate_series(1, %(n)s);

-- name: copy_selections
COPY selection (id, query, src_lang, tgt_lang, method, k, params, signature, query_tokens) FROM STDIN;

-- name: copy_query_terms
COPY selection_query_term (selection_id, key, mult, exps) FROM STDIN;

-- name: copy_candidates
COPY selection_candidate (selection_id, rank, pair_id, score, match) FROM STDIN;

-- name: copy_picks
COPY selection_pick (selection_id, position, pair_id, criterion, coverage, match) FROM STDIN;
