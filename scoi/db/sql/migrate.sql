-- Migration bookkeeping. Read by scoi/db/migrate.py alone (Alembic runs the migrations).

-- name: stored_revisions
-- What every command checks on start-up: is the database at the head revision?
SELECT version_num FROM alembic_version;

-- name: migration_lock
-- Serialises concurrent first-use upgrades (two workers starting at once); released at
-- the end of the upgrade's transaction.
SELECT pg_advisory_xact_lock(%(lock_id)s);

-- name: vacuum_analyze
-- After a schema change (see migrate._vacuum): cannot run in a transaction.
VACUUM (ANALYZE);
