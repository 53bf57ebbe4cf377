-- Coverage gaps over recorded selections (views of migration 0021). Read by scoi/gaps.py.

-- name: job_selection_ids
-- The recorded selections of some jobs' items.
SELECT selection_id FROM job_item
WHERE job_id = ANY(%(job_ids)s::bigint[]) AND selection_id IS NOT NULL
ORDER BY job_id, idx;

-- name: schedule_job_ids
-- The jobs a schedule's runs grew (its current job and every run's).
SELECT DISTINCT j FROM (
    SELECT s.job_id AS j FROM schedule s WHERE s.name = %(name)s
    UNION
    SELECT r.job_id FROM schedule_run r JOIN schedule s ON s.id = r.schedule_id WHERE s.name = %(name)s
) x WHERE j IS NOT NULL ORDER BY j;

-- name: schedule_exists
SELECT count(*) FROM schedule WHERE name = %(name)s;

-- name: rank_gaps
-- One kind's gaps over some selections, most widespread first, with a sentence that has it.
SELECT g.unit, count(DISTINCT g.selection_id)::int AS sentences, sum(g.mult)::int AS occurrences,
       bool_or(g.in_memory) AS in_memory, min(s.query) AS example
FROM selection_gap g
JOIN selection s ON s.id = g.selection_id
WHERE g.selection_id = ANY(%(ids)s::bigint[]) AND g.kind = %(kind)s
GROUP BY g.unit
ORDER BY sentences DESC, occurrences DESC, g.unit
LIMIT %(limit)s;
