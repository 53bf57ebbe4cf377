-- Schedules stored in PostgreSQL (migration 0013): add, list, pause, remove, and the runs
-- of their ticks. Read by scoi/jobs/schedules.py alone.

-- name: insert_schedule
INSERT INTO schedule (name, cron, timezone, spec, job_id)
VALUES (%(name)s, %(cron)s, %(timezone)s, %(spec)s, %(job_id)s)
RETURNING id;

-- name: list_schedules
-- Every schedule with its last run (any tick, manual runs included).
SELECT s.id, s.name, s.cron, s.timezone, s.paused, s.spec, s.job_id, s.created_at,
       r.tick AS last_tick, r.added AS last_added, r.error AS last_error, r.finished_at AS last_finished_at
FROM schedule s
LEFT JOIN LATERAL (SELECT tick, added, error, finished_at FROM schedule_run
                   WHERE schedule_id = s.id ORDER BY tick DESC LIMIT 1) r ON true
ORDER BY s.name;

-- name: schedule_by_name
SELECT s.id, s.name, s.cron, s.timezone, s.paused, s.spec, s.job_id, s.created_at,
       r.tick AS last_tick, r.added AS last_added, r.error AS last_error, r.finished_at AS last_finished_at
FROM schedule s
LEFT JOIN LATERAL (SELECT tick, added, error, finished_at FROM schedule_run
                   WHERE schedule_id = s.id ORDER BY tick DESC LIMIT 1) r ON true
WHERE s.name = %(name)s;

-- name: due_candidates
-- The schedules a worker checks for a due tick: not paused, and the last tick they ran.
SELECT s.id, s.name, s.cron, s.timezone, s.created_at, s.job_id,
       (SELECT max(tick) FROM schedule_run WHERE schedule_id = s.id) AS last_tick
FROM schedule s
WHERE NOT s.paused
ORDER BY s.id;

-- name: try_lock_schedule
-- One worker runs a schedule at a time, and the others never wait for it (its source query
-- may take up to its timeout): a worker that does not get the lock skips the schedule.
-- Released when the run's transaction ends (4242004: scoi's advisory lock space for schedules).
SELECT pg_try_advisory_xact_lock(4242004, mod(%(id)s::bigint, 2147483647)::int);

-- name: claim_tick
-- Exactly one run per (schedule, tick): the first worker to insert the row runs the tick;
-- another one (after the run committed) inserts nothing.
-- A paused schedule runs only when asked by hand.
INSERT INTO schedule_run (schedule_id, tick, manual, worker, job_id)
SELECT s.id, %(tick)s, %(manual)s, %(worker)s, s.job_id
FROM schedule s
WHERE s.id = %(id)s AND (%(manual)s OR NOT s.paused)
ON CONFLICT (schedule_id, tick) DO NOTHING
RETURNING job_id;

-- name: finish_run
UPDATE schedule_run
SET added = %(added)s, skipped = %(skipped)s, error = %(error)s, finished_at = clock_timestamp()
WHERE schedule_id = %(id)s AND tick = %(tick)s;

-- name: recent_runs
SELECT tick, manual, worker, job_id, added, skipped, error, started_at, finished_at
FROM schedule_run WHERE schedule_id = %(id)s
ORDER BY tick DESC
LIMIT %(n)s;

-- name: set_paused
UPDATE schedule SET paused = %(paused)s WHERE name = %(name)s RETURNING id;

-- name: delete_schedule
-- The schedule and its runs go; its job (items, outputs) stays.
DELETE FROM schedule WHERE name = %(name)s RETURNING job_id;

-- name: schedule_job_ids
-- The jobs the schedules feed: their pending deliveries are retried at each check.
SELECT job_id FROM schedule WHERE job_id IS NOT NULL;
