-- Reading from a streaming replica (scoi/db/reads.py): how far it has replayed the primary's
-- WAL. Read by scoi/db/reads.py alone.

-- name: primary_position
-- Read on the primary first: every transaction committed there before it is at or below
-- this position, so a replica that has replayed up to it shows all of them.
SELECT pg_current_wal_flush_lsn()::text;

-- name: replica_position
-- Read on the replica right after primary_position. lag_bytes: WAL still to replay (0:
-- caught up); since_replayed_s: age of the last transaction it replayed (an upper bound of
-- how stale its snapshot is while it is behind). A server not in recovery has no replay
-- position (NULLs). The schema revision, so that a replica behind a migration is not read.
SELECT pg_is_in_recovery(),
       pg_last_wal_replay_lsn()::text,
       greatest(pg_wal_lsn_diff(%(primary_lsn)s::pg_lsn, pg_last_wal_replay_lsn()), 0)::bigint,
       extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() END,
       ARRAY(SELECT version_num::text FROM alembic_version ORDER BY 1);

-- name: server_identity
-- Read on the primary and on the replica when it is connected: a standby streamed from the
-- primary has its system identifier (set by initdb, copied by pg_basebackup) and the same
-- database; a server not in recovery is only the primary itself (the same postmaster).
SELECT system_identifier::text, current_database(), pg_is_in_recovery(), pg_postmaster_start_time()::text
FROM pg_control_system();

-- name: read_only
-- The replica connection refuses writes even when the read URL names a primary.
SET default_transaction_read_only = on;
