-- Batch translation jobs (migration 0003): submit, claim, complete, export, retry, cancel,
-- sync, scores. Read by scoi/jobs/store.py and scoi/jobs/export.py (the worker and eval call its functions).

-- name: insert_job
INSERT INTO job (name, src_lang, tgt_lang, method, k, model, template, params, signature,
                 input_path, references_path, max_attempts)
VALUES (%(name)s, %(src)s, %(tgt)s, %(method)s, %(k)s, %(model)s, %(template)s, %(params)s,
        %(signature)s, %(input_path)s, %(references_path)s, %(max_attempts)s)
RETURNING id;

-- name: copy_items
-- Items go in with COPY (thousands of lines in one round trip). Blank sources are stored
-- as done with an empty output, so exports stay line-aligned with the input.
COPY job_item (job_id, idx, source, source_hash, reference, max_attempts, status, output, finished_at,
                source_key, masked)
FROM STDIN;

-- name: notify_items
-- Wakes idle workers (they LISTEN on this channel, and poll anyway).
NOTIFY scoi_job_item;

-- name: listen_items
-- An idle worker waits on this channel (notify_items) instead of only polling.
LISTEN scoi_job_item;

-- name: job_by_id
SELECT id, name, created_at, src_lang, tgt_lang, method, k, model, template, params, signature,
       status, input_path, references_path, max_attempts
FROM job WHERE id = %(id)s;

-- name: job_by_name
SELECT id, name, created_at, src_lang, tgt_lang, method, k, model, template, params, signature,
       status, input_path, references_path, max_attempts
FROM job WHERE name = %(name)s;

-- name: lock_job
-- Serialises `scoi job sync` runs on one job (the second waits, then sees the new lines).
SELECT id FROM job WHERE id = %(id)s FOR UPDATE;

-- name: list_jobs
SELECT job_id, name, created_at, src_lang, tgt_lang, method, k, model, total, queued, running,
       done, failed, cancelled, undelivered, state, avg_select_ms, avg_generate_ms, avg_overhead_ms,
       last_finished_at
FROM job_progress ORDER BY job_id;

-- name: job_progress
SELECT job_id, name, created_at, src_lang, tgt_lang, method, k, model, total, queued, running,
       done, failed, cancelled, undelivered, state, avg_select_ms, avg_generate_ms, avg_overhead_ms,
       last_finished_at
FROM job_progress WHERE job_id = %(id)s;

-- name: origin_counts
-- Done items by where their output came from (job_item.origin: llm, the model; tm, the
-- stored translation of an exact match), per job; one job, or all when `id` is NULL.
SELECT job_id, count(*) FILTER (WHERE origin = 'llm') AS llm, count(*) FILTER (WHERE origin = 'tm') AS tm
FROM job_item
WHERE status = 'done' AND (%(id)s::bigint IS NULL OR job_id = %(id)s::bigint)
GROUP BY job_id;

-- name: recent_errors
-- last_error is the current attempt's (complete_items clears it), so done items have none.
SELECT idx, status, attempts, last_error FROM job_item
WHERE job_id = %(id)s AND last_error IS NOT NULL
ORDER BY (status = 'failed') DESC, idx
LIMIT %(n)s;

-- name: delivery_errors
-- A job's items (table destination) whose output the destination refused, with why (job status).
SELECT idx, source_key, delivery_error FROM job_item
WHERE job_id = %(id)s AND status = 'done' AND delivered_at IS NULL AND delivery_error IS NOT NULL
ORDER BY idx
LIMIT %(n)s;

-- name: qa_flags
-- Items of a CAT-file job whose answer broke its inline codes (job_item.qa, migration 0032):
-- the first few with their flags (job status; qa_count counts them).
SELECT idx, source_key, qa FROM job_item
WHERE job_id = %(id)s AND cardinality(qa) > 0
ORDER BY idx
LIMIT %(n)s;

-- name: qa_count
SELECT count(*) AS n FROM job_item WHERE job_id = %(id)s AND cardinality(qa) > 0;

-- name: recent_warnings
-- Items whose output the worker had to clean to store it (NUL removed, ...).
SELECT idx, status, warning FROM job_item
WHERE job_id = %(id)s AND warning IS NOT NULL
ORDER BY idx
LIMIT %(n)s;

-- name: fail_stalled
-- A running item whose worker stopped sending heartbeats and that has used all its
-- attempts ends failed (a sentence that kills its worker must not loop forever).
UPDATE job_item
SET status = 'failed', finished_at = now(),
    last_error = format('worker %%s stopped responding (no heartbeat for %%s s) on attempt %%s of %%s',
                        locked_by, %(stall)s, attempts, max_attempts)
WHERE status = 'running'
  AND heartbeat_at < now() - make_interval(secs => %(stall)s)
  AND attempts >= max_attempts
  AND (%(job_id)s::bigint IS NULL OR job_id = %(job_id)s);

-- name: claim
-- Take up to n items, in input order: queued ones, and running ones whose worker is dead
-- (its session, and with it its advisory lock, is gone: job_worker_state) or has sent no
-- heartbeat for the stall timeout. A dead worker's items that have used all their
-- attempts end failed in the same statement (its attempt counted: a sentence that kills
-- every worker stops after max_attempts). FOR UPDATE SKIP LOCKED: concurrent claimers
-- never wait for each other and never get the same row; a row another claimer changed
-- meanwhile is re-checked against the WHERE clause before it is locked. ``attempts``
-- (after the increment) identifies this claim: completing needs the same worker and
-- attempt. A re-claimed item's last_error says what became of the previous attempt.
WITH dead AS MATERIALIZED (
    SELECT id FROM job_worker_state WHERE NOT alive
), exhausted AS (
    UPDATE job_item i
    SET status = 'failed', finished_at = now(), heartbeat_at = NULL,
        last_error = format('worker %%s died (its database session ended) on attempt %%s of %%s',
                            i.locked_by, i.attempts, i.max_attempts)
    WHERE i.status = 'running' AND i.attempts >= i.max_attempts
      AND i.locked_by IN (SELECT id FROM dead)
      AND (%(job_id)s::bigint IS NULL OR i.job_id = %(job_id)s)
), picked AS (
    SELECT i.job_id, i.idx, i.status AS was, i.locked_by AS holder,
           i.locked_by IN (SELECT id FROM dead) AS holder_dead
    FROM job_item i
    JOIN job j ON j.id = i.job_id
    WHERE j.status = 'active'
      AND (%(job_id)s::bigint IS NULL OR i.job_id = %(job_id)s)
      AND (i.status = 'queued'
           OR (i.status = 'running' AND i.attempts < i.max_attempts
               AND (i.heartbeat_at < now() - make_interval(secs => %(stall)s)
                    OR i.locked_by IN (SELECT id FROM dead))))
    ORDER BY i.job_id, i.idx
    LIMIT %(n)s
    FOR UPDATE OF i SKIP LOCKED
)
UPDATE job_item i
SET status = 'running', locked_by = %(worker)s, locked_at = now(), heartbeat_at = now(),
    attempts = i.attempts + 1,
    last_error = CASE WHEN p.was <> 'running' THEN i.last_error
                      WHEN p.holder_dead THEN format('worker %%s died (its database session ended) on attempt %%s of %%s',
                                                     p.holder, i.attempts, i.max_attempts)
                      ELSE format('worker %%s stopped responding (no heartbeat for %%s s) on attempt %%s of %%s',
                                  p.holder, %(stall)s, i.attempts, i.max_attempts) END
FROM picked p
WHERE i.job_id = p.job_id AND i.idx = p.idx
RETURNING i.job_id, i.idx, i.source, i.attempts, i.masked;

-- name: register_worker
-- A worker announces itself and takes its liveness lock on the connection it keeps for
-- its lifetime (false: the lock is held by another session, e.g. the worker's own
-- previous connection that the server has not closed yet — try again later). Session-level:
-- the lock outlives this statement's transaction and ends with the session.
WITH w AS (
    INSERT INTO job_worker (id, host, pid, lock_key, stall_timeout)
    VALUES (%(worker)s, %(host)s, %(pid)s, %(key)s, %(stall)s)
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, lock_key = excluded.lock_key,
                                   stall_timeout = excluded.stall_timeout
    RETURNING lock_space, lock_key
)
SELECT pg_try_advisory_lock(w.lock_space, w.lock_key) FROM w;

-- name: prune_workers
-- Forget dead workers that hold no item (killed ones; the ones that stopped cleanly
-- removed themselves). Dead workers still holding items stay until those are re-claimed.
DELETE FROM job_worker w
WHERE w.id IN (SELECT id FROM job_worker_state WHERE NOT alive)
  AND NOT EXISTS (SELECT 1 FROM job_item i WHERE i.status = 'running' AND i.locked_by = w.id);

-- name: unregister_worker
-- A worker stopping cleanly removes itself, unless it still holds items: then its row
-- stays, so that once its lock is gone those items read as a dead worker's, free at once.
DELETE FROM job_worker w
WHERE w.id = %(worker)s
  AND NOT EXISTS (SELECT 1 FROM job_item i WHERE i.status = 'running' AND i.locked_by = w.id);

-- name: done_items
-- A job's items that are done (right after submit: its blank sources, passed through).
SELECT count(*) FROM job_item WHERE job_id = %(id)s AND status = 'done';

-- name: examples_dropped
-- Done items whose prompt kept fewer examples than their selection picked (dropped,
-- last-ranked first, to fit the model's context), and the fewest any kept (job status).
-- Items with fewer picks than k (--min-match, a small pool) and reused items (no prompt,
-- examples_used NULL) are not counted: nothing was dropped from them.
SELECT count(*) AS items, min(i.examples_used) AS fewest
FROM job_item i
WHERE i.job_id = %(id)s AND i.status = 'done'
  AND i.examples_used < (SELECT count(*) FROM selection_pick p WHERE p.selection_id = i.selection_id);

-- name: holder_counts
-- A job's running items by the state of the worker holding them (view job_item_holder).
SELECT holder_state, count(*) AS n FROM job_item_holder WHERE job_id = %(id)s GROUP BY holder_state;

-- name: heartbeat
UPDATE job_item SET heartbeat_at = now()
WHERE locked_by = %(worker)s AND status = 'running';

-- name: complete_items
-- Store the results of one batch in one statement. Only rows this worker still holds
-- under the same claim are written: a stalled item that another worker re-claimed (or a
-- cancelled one) is left alone, and running the statement twice changes nothing. The
-- error of an earlier attempt goes: last_error describes the current attempt, which
-- succeeded (else a finished job would list errors, and its export fill `error` on done rows).
UPDATE job_item i
SET status = 'done', output = r.output, raw_output = r.raw_output, prompt = r.prompt,
    selection_id = r.selection_id, select_ms = r.select_ms, generate_ms = r.generate_ms,
    overhead_ms = r.overhead_ms, warning = r.warning, last_error = NULL, finished_at = now(), heartbeat_at = NULL,
    examples_used = r.examples_used, qa = string_to_array(r.qa, E'\n'),
    origin = r.origin, origin_pair_id = r.origin_pair_id
FROM unnest(%(job_ids)s::bigint[], %(idxs)s::int[], %(attempts)s::int[], %(selection_ids)s::bigint[],
            %(prompts)s::text[], %(outputs)s::text[], %(raw_outputs)s::text[],
            %(select_ms)s::float8[], %(generate_ms)s::float8[], %(overhead_ms)s::float8[], %(warnings)s::text[],
            %(examples_used)s::int[], %(qa)s::text[], %(origins)s::text[], %(origin_pair_ids)s::bigint[])
     AS r(job_id, idx, attempt, selection_id, prompt, output, raw_output, select_ms, generate_ms, overhead_ms,
          warning, examples_used, qa, origin, origin_pair_id)
WHERE i.job_id = r.job_id AND i.idx = r.idx AND i.attempts = r.attempt
  AND i.status = 'running' AND i.locked_by = %(worker)s
RETURNING i.job_id, i.idx;

-- name: cancelled_among
-- How many of a batch's items are cancelled now: results a worker could not write because
-- the job was cancelled while it ran them (its summary says so, apart from items lost to
-- other workers). Written items are done, failed or queued, so counting the whole batch works.
SELECT count(*) FROM job_item i
JOIN unnest(%(job_ids)s::bigint[], %(idxs)s::int[]) AS b(job_id, idx) ON i.job_id = b.job_id AND i.idx = b.idx
WHERE i.status = 'cancelled';

-- name: fail_items
-- An attempt failed: keep the error (and the prompt, if one was built) and put the item
-- back in the queue, or end it failed once it has used max_attempts, or at once when
-- ``final`` (no retry can help: a prompt that cannot fit the model). Same lock rule as
-- complete_items.
UPDATE job_item i
SET status = CASE WHEN r.final OR i.attempts >= i.max_attempts THEN 'failed' ELSE 'queued' END,
    finished_at = CASE WHEN r.final OR i.attempts >= i.max_attempts THEN now() END,
    last_error = r.error,
    prompt = coalesce(r.prompt, i.prompt),
    selection_id = coalesce(r.selection_id, i.selection_id),
    heartbeat_at = NULL
FROM unnest(%(job_ids)s::bigint[], %(idxs)s::int[], %(attempts)s::int[], %(errors)s::text[],
            %(prompts)s::text[], %(selection_ids)s::bigint[], %(finals)s::bool[])
     AS r(job_id, idx, attempt, error, prompt, selection_id, final)
WHERE i.job_id = r.job_id AND i.idx = r.idx AND i.attempts = r.attempt
  AND i.status = 'running' AND i.locked_by = %(worker)s
RETURNING i.job_id, i.idx, i.status;

-- name: release_items
-- A worker stopping mid-batch hands its items back at once instead of waiting for the
-- stall timeout. Interrupted (second Ctrl-C): the attempt is not counted. Crashed: it is,
-- with the error, so an item that crashes every worker still ends failed.
UPDATE job_item
SET status = CASE WHEN NOT %(uncount)s AND attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
    finished_at = CASE WHEN NOT %(uncount)s AND attempts >= max_attempts THEN now() END,
    attempts = CASE WHEN %(uncount)s THEN greatest(attempts - 1, 0) ELSE attempts END,
    last_error = coalesce(%(error)s, last_error),
    heartbeat_at = NULL
WHERE locked_by = %(worker)s AND status = 'running';

-- name: export_items
-- match: the best match percentage among the item's recorded picks (NULL: zero-shot, or before 0023).
SELECT idx, source, output, reference, status, attempts, last_error, warning, selection_id,
       select_ms, generate_ms, overhead_ms, raw_output, prompt, examples_used, qa,
       (SELECT max(p.match) FROM selection_pick p WHERE p.selection_id = i.selection_id) AS match,
       origin, origin_pair_id
FROM job_item i WHERE job_id = %(id)s ORDER BY idx;

-- name: retry_items
-- Failed (and cancelled) items get a fresh set of attempts; last_error stays until a new
-- attempt replaces it (or succeeds: complete_items clears it).
UPDATE job_item
SET status = 'queued', attempts = 0, locked_by = NULL, locked_at = NULL, heartbeat_at = NULL,
    finished_at = NULL
WHERE job_id = %(id)s AND status = ANY(%(statuses)s::text[]);

-- name: set_job_status
UPDATE job SET status = %(status)s WHERE id = %(id)s;

-- name: cancel_items
-- Queued and running items stop; a worker holding a running one cannot write it
-- afterwards (complete_items needs status = 'running').
UPDATE job_item SET status = 'cancelled', finished_at = now(), heartbeat_at = NULL
WHERE job_id = %(id)s AND status IN ('queued', 'running');

-- name: sync_state
-- What `scoi job sync` needs to append: the next index and the hashes already present.
SELECT coalesce(max(idx) + 1, 0) AS next_idx, coalesce(array_agg(DISTINCT source_hash), '{}') AS hashes
FROM job_item WHERE job_id = %(id)s;

-- name: eval_items
SELECT source, output, reference, status, idx, origin FROM job_item
WHERE job_id = %(id)s AND reference IS NOT NULL
ORDER BY idx;

-- name: insert_score
INSERT INTO job_score (job_id, metric, score, signature, n_items)
VALUES (%(id)s, %(metric)s, %(score)s, %(signature)s, %(n)s)
RETURNING id;

-- name: insert_segment_scores
-- Per-item scores of the evaluation that wrote job_score row %(score_id)s.
INSERT INTO job_segment_score (score_id, idx, score)
SELECT %(score_id)s, u.idx, u.score FROM unnest(%(idxs)s::int[], %(scores)s::float8[]) AS u(idx, score);

-- name: latest_segment_scores
-- (idx, score) of the job's latest evaluation with `metric` that stored segment scores.
SELECT g.idx, g.score FROM job_segment_score g
WHERE g.score_id = (SELECT s.id FROM job_score s
                    WHERE s.job_id = %(id)s AND s.metric = %(metric)s
                      AND EXISTS (SELECT 1 FROM job_segment_score x WHERE x.score_id = s.id)
                    ORDER BY s.created_at DESC, s.id DESC LIMIT 1)
ORDER BY g.idx;

-- name: latest_scores
SELECT metric, score, signature, n_items, created_at FROM job_latest_score
WHERE job_id = %(id)s ORDER BY metric;

-- name: known_keys
-- The source keys a job holds already: a table source adds only the others.
SELECT source_key FROM job_item WHERE job_id = %(job_id)s AND source_key IS NOT NULL;

-- name: export_tmx_items
-- A job's translated items for `job export --format tmx`: done, with a source and an
-- output that are not blank (an ingest refuses an empty side), in input order.
-- has_codes: an item of a CAT file, whose output holds the inline codes' placeholders.
SELECT idx, source, output, origin, qa, finished_at, masked IS NOT NULL AS has_codes
FROM job_item
WHERE job_id = %(id)s AND status = 'done' AND output IS NOT NULL
  AND btrim(source) <> '' AND btrim(output) <> ''
ORDER BY idx;
