-- Jobs over table rows (migration 0013): where a job's items come from (job_source) and
-- where its outputs go (job_destination). Read by scoi/jobs/sources.py alone. Statements
-- with {braces} are psycopg.sql templates: the braces take quoted identifiers only.

-- name: read_only
-- A source query runs in a read-only transaction: whatever it says, it cannot write.
SET TRANSACTION READ ONLY;

-- name: insert_source
INSERT INTO job_source (job_id, kind, path, query, url, url_env)
VALUES (%(job_id)s, %(kind)s, %(path)s, %(query)s, %(url)s, %(url_env)s);

-- name: source_of_job
SELECT kind, path, query, url, url_env FROM job_source WHERE job_id = %(job_id)s;

-- name: insert_destination
INSERT INTO job_destination (job_id, kind, path, format, table_name, key_column, text_column, url, url_env)
VALUES (%(job_id)s, %(kind)s, %(path)s, %(format)s, %(table)s, %(key)s, %(column)s, %(url)s, %(url_env)s);

-- name: destinations_of_jobs
SELECT job_id, kind, path, format, table_name, key_column, text_column, url, url_env, last_error,
       last_delivered_at
FROM job_destination WHERE job_id = ANY(%(job_ids)s::bigint[]) ORDER BY job_id;

-- name: known_keys
-- The source keys a job holds already: a table source adds only the others.
SELECT source_key FROM job_item WHERE job_id = %(job_id)s AND source_key IS NOT NULL;

-- name: destination_table
-- Does the destination table exist, may this role write it, and does its key column carry
-- a unique constraint of its own (ON CONFLICT (key) needs one)? %(table)s is the quoted,
-- possibly schema-qualified name.
SELECT c.oid IS NOT NULL AS found,
       c.oid IS NOT NULL AND has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE')
           AS writable,
       (SELECT array_agg(a.attname::text) FROM pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname = ANY(%(columns)s::text[])) AS columns,
       EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
               WHERE i.indrelid = c.oid AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
                 AND a.attname = %(key)s) AS unique_key
FROM (SELECT to_regclass(%(table)s) AS oid) c;

-- name: upsert_destination
-- One statement per batch of outputs; the key's text becomes the column's type through the
-- table's own row type (an integer id takes '42'). Idempotent: a repeated delivery rewrites
-- the same values.
INSERT INTO {table} ({key}, {column})
SELECT r.{key}, r.{column}
FROM jsonb_populate_recordset(NULL::{table}, %(rows)s::jsonb) AS r
ON CONFLICT ({key}) DO UPDATE SET {column} = EXCLUDED.{column};

-- name: undelivered_items
-- Done items a table destination has not received yet, oldest first; SKIP LOCKED: two
-- workers delivering the same job at once take different items.
SELECT idx, source_key, output FROM job_item
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL AND source_key IS NOT NULL
ORDER BY idx
LIMIT %(n)s
FOR UPDATE SKIP LOCKED;

-- name: mark_delivered
UPDATE job_item SET delivered_at = now()
WHERE job_id = %(job_id)s AND idx = ANY(%(idxs)s::int[]);

-- name: file_delivery_state
-- A file destination is written once the job has nothing left to do and has new outputs.
SELECT count(*) FILTER (WHERE status IN ('queued', 'running')) AS unfinished,
       count(*) FILTER (WHERE status = 'done' AND delivered_at IS NULL) AS undelivered
FROM job_item WHERE job_id = %(job_id)s;

-- name: lock_destination
-- One writer of a file destination at a time (two workers finishing a job together would
-- otherwise write the same .part file); the other skips.
SELECT job_id FROM job_destination WHERE job_id = %(job_id)s FOR UPDATE SKIP LOCKED;

-- name: mark_all_delivered
UPDATE job_item SET delivered_at = now()
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL;

-- name: delivery_result
UPDATE job_destination
SET last_error = %(error)s,
    last_delivered_at = CASE WHEN %(error)s::text IS NULL THEN now() ELSE last_delivered_at END
WHERE job_id = %(job_id)s;

-- name: pending_deliveries
SELECT count(*) FROM job_item
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL;
