"""Ingest runs whose process died read as ``dead``, not ``running`` forever.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23

Why: a ``scoi ingest`` killed with -9 cannot mark its ``ingest_run`` row failed,
so the row said ``running`` forever. An ingest now holds a session-level advisory lock
(key pair 4242002, run id) on the connection that started the run, from the transaction
that inserts the row until it closes; PostgreSQL releases it when that session ends,
however the process ends. View ``ingest_run_status`` reads a ``running`` row whose lock
is not held as ``dead``. The row itself is not rewritten: a view cannot be wrong later,
and a run that is only slow keeps its lock. Runs started by a scoi older than this
migration hold no such lock and read as ``dead`` once the upgrade is done.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE VIEW ingest_run_status AS
    SELECT r.id AS run_id, c.name AS corpus, r.files, r.format,
           CASE WHEN r.status = 'running' AND NOT EXISTS (
                    SELECT 1 FROM pg_locks l
                    WHERE l.locktype = 'advisory' AND l.granted
                      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                      AND l.classid = 4242002::oid AND l.objid = r.id::oid AND l.objsubid = 2)
                THEN 'dead' ELSE r.status END AS state,
           r.started_at, r.finished_at, r.pairs_read, r.inserted, r.duplicates, r.rejected,
           r.workers, r.host, r.pid, r.error
    FROM ingest_run r
    JOIN corpus c ON c.id = r.corpus_id;
COMMENT ON VIEW ingest_run_status IS
    'Ingest runs with state running / done / failed, or dead: running, but the session that started it (its advisory lock 4242002, run id) is gone.';
"""

DOWNGRADE = "DROP VIEW ingest_run_status;"


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
