"""Job workers: who holds running items, and whether that worker is still alive.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23

Why: a worker killed with ``kill -9`` (or whose machine is lost) held
its items until the stall timeout (300 s by default), so a ``scoi worker --burst`` started
right after found nothing to claim. Each worker now registers in ``job_worker`` and holds
a session-level advisory lock (``lock_space``, ``lock_key``) on a connection of its own
for as long as it lives. PostgreSQL releases the lock the moment that session ends (the
process died, its connection or machine is gone), so ``job_worker_state.alive`` turns
false at once and claimers take that worker's running items immediately. The stall
timeout remains for workers that are alive but stuck (no heartbeat).

- ``job_worker``: one row per worker (removed when it stops cleanly, or pruned by the
  next worker that starts once it is dead and holds nothing).
- ``job_worker_state``: the workers with ``alive`` read from ``pg_locks`` (visible to
  every role).
- ``job_item_holder``: each running item with the state of its holder: ``live``,
  ``dead`` (its session is gone), ``stuck`` (alive, but no heartbeat for its own stall
  timeout) or ``unknown`` (a holder that never registered: only the stall timeout frees it).
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE job_worker (
    id            text PRIMARY KEY,
    host          text NOT NULL,
    pid           integer NOT NULL,
    lock_space    integer NOT NULL DEFAULT 4242003,
    lock_key      integer NOT NULL,
    stall_timeout double precision NOT NULL CHECK (stall_timeout > 0),
    started_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE job_worker IS
    'A running translation worker. It holds the session-level advisory lock (lock_space, lock_key) '
    'while its process lives; the lock going away means the worker is dead and its items are free.';
COMMENT ON COLUMN job_worker.stall_timeout IS
    'Seconds without heartbeat after which this worker counts as stuck (its --stall-timeout).';

CREATE VIEW job_worker_state AS
    SELECT w.id, w.host, w.pid, w.started_at, w.stall_timeout,
           EXISTS (SELECT 1 FROM pg_locks l
                   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                     AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                     AND l.classid = w.lock_space::oid AND l.objid = w.lock_key::oid) AS alive
    FROM job_worker w;

CREATE VIEW job_item_holder AS
    SELECT i.job_id, i.idx, i.locked_by, i.attempts, i.max_attempts, i.locked_at, i.heartbeat_at,
           CASE WHEN w.id IS NULL
                     THEN CASE WHEN i.heartbeat_at < now() - interval '300 seconds' THEN 'stuck' ELSE 'unknown' END
                WHEN NOT w.alive THEN 'dead'
                WHEN i.heartbeat_at < now() - make_interval(secs => w.stall_timeout) THEN 'stuck'
                ELSE 'live' END AS holder_state
    FROM job_item i
    LEFT JOIN job_worker_state w ON w.id = i.locked_by
    WHERE i.status = 'running';
"""

DOWNGRADE = """
DROP VIEW job_item_holder;
DROP VIEW job_worker_state;
DROP TABLE job_worker;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
