-- Experiments and their jobs (migrations 0015, 0036); scoi/jobs/experiment.py alone reads this file.

-- name: lock_experiments
-- Two `scoi experiment run` of the same name at once: the second waits, then finds the
-- first one's jobs instead of creating its own.
SELECT pg_advisory_xact_lock(4242003);

-- name: experiment_by_name
SELECT id, name, created_at, src_lang, tgt_lang, model, grid, input_hash, input_path, references_path,
       result, result_at
FROM experiment WHERE name = %(name)s;

-- name: insert_experiment
INSERT INTO experiment (name, src_lang, tgt_lang, model, grid, input_hash, input_path, references_path)
VALUES (%(name)s, %(src)s, %(tgt)s, %(model)s, %(grid)s, %(input_hash)s, %(input_path)s, %(references_path)s)
RETURNING id;

-- name: update_experiment_grid
-- A rerun that names a model the experiment lacks adds it to the grid's model list.
UPDATE experiment SET grid = %(grid)s WHERE id = %(experiment_id)s;

-- name: insert_experiment_job
INSERT INTO experiment_job (experiment_id, job_id, model, method, k, example_order, template, seed)
VALUES (%(experiment_id)s, %(job_id)s, %(model)s, %(method)s, %(k)s, %(order)s, %(template)s, %(seed)s)
ON CONFLICT DO NOTHING;

-- name: experiment_jobs
-- In grid order: the order the cells were created in.
SELECT job_id, model, method, k, example_order, template, seed
FROM experiment_job WHERE experiment_id = %(experiment_id)s
ORDER BY job_id;

-- name: store_result
UPDATE experiment SET result = %(result)s, result_at = now() WHERE id = %(experiment_id)s;

-- name: list_experiments
SELECT e.name, e.created_at, e.src_lang, e.tgt_lang, e.model, e.grid -> 'models' AS models, count(x.job_id) AS jobs,
       count(x.job_id) FILTER (WHERE p.state = 'done') AS jobs_done, e.result_at
FROM experiment e
LEFT JOIN experiment_job x ON x.experiment_id = e.id
LEFT JOIN job_progress p ON p.job_id = x.job_id
GROUP BY e.id
ORDER BY e.created_at;
