-- The HTTP service's reads (scoi/service/app.py), beside the library's own.

-- name: job_items_page
-- One page of a job's items, in input order, for the jobs view.
SELECT idx AS index, source, output, reference, status, attempts, last_error AS error, selection_id,
       round(select_ms::numeric, 2) AS select_ms, round(generate_ms::numeric, 2) AS generate_ms,
       source_key AS key, qa, origin, origin_pair_id
FROM job_item
WHERE job_id = %(id)s
ORDER BY idx
OFFSET %(offset)s LIMIT %(limit)s;

-- name: directions
-- The directions some corpus serves (each ingest serves both ways).
SELECT DISTINCT src_lang, tgt_lang FROM corpus
UNION
SELECT DISTINCT tgt_lang, src_lang FROM corpus
ORDER BY 1, 2;

-- name: corpus_directions
-- The directions the corpora were ingested in (the selectors `scoi serve` warms).
SELECT DISTINCT src_lang, tgt_lang FROM corpus ORDER BY 1, 2;
