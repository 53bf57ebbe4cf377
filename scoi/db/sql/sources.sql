-- Jobs over table rows (migration 0013): where a job's items come from (job_source) and
-- where its outputs go (job_destination). Read by scoi/jobs/sources.py alone. Statements
-- with {braces} are psycopg.sql templates: the braces take quoted identifiers only.

-- name: read_only
-- A source query runs in a read-only transaction: whatever it says, it cannot write.
SET TRANSACTION READ ONLY;

-- name: source_timeouts
-- The source query's session: bounded in time, and in how long it waits for a lock (set on
-- the connection of the query alone, which is closed after it).
SELECT set_config('statement_timeout', %(statement)s, false),
       set_config('lock_timeout', %(lock)s, false),
       set_config('idle_in_transaction_session_timeout', %(statement)s, false);

-- name: reader_powers
-- What the session's role could do besides reading: a source query runs only when none.
-- MEMBER, not USAGE: a member without INHERIT may still SET ROLE to the role.
SELECT session_user::text,
       ARRAY(SELECT p FROM (VALUES
               ('a superuser', EXISTS (SELECT 1 FROM pg_roles s
                                       WHERE s.rolsuper AND pg_has_role(session_user, s.oid, 'MEMBER'))),
               ('allowed to create roles', (SELECT rolcreaterole FROM pg_roles WHERE rolname = session_user)),
               ('a member of pg_read_server_files', pg_has_role(session_user, 'pg_read_server_files', 'MEMBER')),
               ('a member of pg_write_server_files', pg_has_role(session_user, 'pg_write_server_files', 'MEMBER')),
               ('a member of pg_execute_server_program',
                pg_has_role(session_user, 'pg_execute_server_program', 'MEMBER')),
               ('a member of pg_signal_backend', pg_has_role(session_user, 'pg_signal_backend', 'MEMBER'))
             ) AS v(p, yes) WHERE yes) AS powers;

-- name: insert_source
INSERT INTO job_source (job_id, kind, path, query, url, url_env, timeout_s)
VALUES (%(job_id)s, %(kind)s, %(path)s, %(query)s, %(url)s, %(url_env)s, %(timeout_s)s);

-- name: source_of_job
SELECT kind, path, query, url, url_env, timeout_s FROM job_source WHERE job_id = %(job_id)s;

-- name: insert_destination
INSERT INTO job_destination (job_id, kind, path, format, table_name, key_column, text_column, url, url_env)
VALUES (%(job_id)s, %(kind)s, %(path)s, %(format)s, %(table)s, %(key)s, %(column)s, %(url)s, %(url_env)s);

-- name: destinations_of_jobs
SELECT job_id, kind, path, format, table_name, key_column, text_column, url, url_env, last_error,
       last_delivered_at
FROM job_destination WHERE job_id = ANY(%(job_ids)s::bigint[]) ORDER BY job_id;

-- name: destination_table
-- Does the destination table exist, may this role write it, what are the types of its key
-- and text columns (name -> type, and type category: 'S' for strings), and does its key
-- column carry a unique constraint of its own (ON CONFLICT (key) needs one)? %(table)s is
-- the quoted, possibly schema-qualified name.
SELECT c.oid IS NOT NULL AS found,
       c.oid IS NOT NULL AND has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE')
           AS writable,
       (SELECT jsonb_object_agg(a.attname::text, jsonb_build_object('type', format_type(a.atttypid, a.atttypmod),
                                                                    'category', t.typcategory::text))
        FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname = ANY(%(columns)s::text[])) AS columns,
       EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
               WHERE i.indrelid = c.oid AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
                 AND a.attname = %(key)s) AS unique_key
FROM (SELECT to_regclass(%(table)s) AS oid) c;

-- name: destination_bad_key
-- The first source key the key column's type does not take (PostgreSQL 16+), in source order.
SELECT k FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS u(k, n)
WHERE NOT pg_input_is_valid(k, %(type)s)
ORDER BY n
LIMIT 1;

-- name: destination_equal_keys
-- Source keys that are distinct as text but one value once cast to the key column's type
-- (1.0 and 1.00 in a numeric key): they would overwrite each other. The cast is the one the
-- upsert makes (the table's row type).
SELECT array_agg(k ORDER BY n)
FROM (SELECT k, n, (jsonb_populate_record(NULL::{table}, jsonb_build_object(%(key)s::text, k))).{key} AS v
      FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS u(k, n)) s
GROUP BY v
HAVING count(*) > 1
ORDER BY min(n)
LIMIT 1;

-- name: upsert_destination
-- One statement per batch of outputs; the key's text becomes the column's type through the
-- table's own row type (an integer id takes '42'). Idempotent: a repeated delivery rewrites
-- the same values.
INSERT INTO {table} ({key}, {column})
SELECT r.{key}, r.{column}
FROM jsonb_populate_recordset(NULL::{table}, %(rows)s::jsonb) AS r
ON CONFLICT ({key}) DO UPDATE SET {column} = EXCLUDED.{column};

-- name: undelivered_items
-- Done items a table destination has not received yet, oldest first, less those that failed
-- in this pass already (%(skip)s); SKIP LOCKED: two workers delivering the same job at once
-- take different items.
SELECT idx, source_key, output FROM job_item
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL AND source_key IS NOT NULL
  AND NOT idx = ANY(%(skip)s::int[])
ORDER BY idx
LIMIT %(n)s
FOR UPDATE SKIP LOCKED;

-- name: mark_delivered
UPDATE job_item SET delivered_at = now(), delivery_error = NULL
WHERE job_id = %(job_id)s AND idx = ANY(%(idxs)s::int[]);

-- name: mark_undelivered
-- A row the destination refused: the item keeps the error and is tried again next time.
UPDATE job_item SET delivery_error = %(error)s
WHERE job_id = %(job_id)s AND idx = %(idx)s;

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
UPDATE job_item SET delivered_at = now(), delivery_error = NULL
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL;

-- name: delivery_result
UPDATE job_destination
SET last_error = %(error)s,
    last_delivered_at = CASE WHEN %(error)s::text IS NULL THEN now() ELSE last_delivered_at END
WHERE job_id = %(job_id)s;

-- name: pending_deliveries
SELECT count(*) FROM job_item
WHERE job_id = %(job_id)s AND status = 'done' AND delivered_at IS NULL;
