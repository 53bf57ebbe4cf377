"""Table sources read as the ``scoi_reader`` role; per-item delivery errors.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24

Why:

- ``scoi_reader``: a job's or a schedule's source query runs on its own connection whose
  session user is this role (never a superuser, never ``SET ROLE``), so the query reads
  what the user granted (``GRANT SELECT ON documents TO scoi_reader``) and nothing else:
  no writes, no ``COPY`` to files or programs, no server files, no signals to other
  sessions. Roles belong to the server, not to a database: the role is created once, by the
  first database migrated on the server (another database's migration running at the same
  time, or a role made by hand, is fine), with LOGIN, no password, nothing but membership of
  PUBLIC, and read-only transactions by default. A migrating role that may not create roles
  skips it with a notice (README: Table sources, security). The downgrade keeps the role:
  other databases of the server may use it.
- ``job_source.timeout_s``: the ``statement_timeout`` of the source query (its
  ``lock_timeout`` is the smaller of it and 5 s), set with ``--source-timeout``.
- ``job_item.delivery_error``: why a done item's output did not reach the job's table
  destination; one bad row no longer blocks the others (each failed row is kept with its
  own error and retried), and the item reads ``undelivered`` in ``job_progress`` (a count
  of its own, and the job's state once nothing else is left to do).
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

READER = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'scoi_reader') THEN
        BEGIN
            CREATE ROLE scoi_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
            ALTER ROLE scoi_reader SET default_transaction_read_only = on;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;  -- made meanwhile, by another database's migration
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'scoi: this role may not create the role scoi_reader, which table sources run as; '
                             'ask an administrator: CREATE ROLE scoi_reader LOGIN';
        END;
    END IF;
END $$;
"""

UPGRADE = READER + """
ALTER TABLE job_source ADD COLUMN timeout_s double precision NOT NULL DEFAULT 30 CHECK (timeout_s > 0);
COMMENT ON COLUMN job_source.timeout_s IS
    'statement_timeout of the source query, in seconds (its lock_timeout is the smaller of it and 5 s).';
ALTER TABLE job_item ADD COLUMN delivery_error text;
COMMENT ON COLUMN job_item.delivery_error IS
    'Why the output did not reach the table destination (its last try), or NULL; cleared when delivered.';
"""


def _progress_0010() -> str:
    """The job_progress view of migration 0010 (the base this one extends)."""
    spec = importlib.util.spec_from_file_location("scoi_migration_0010",
                                                  Path(__file__).with_name("0010_job_item_warning.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._PROGRESS.format(
        cancelled="WHEN count(i.idx) FILTER (WHERE i.status = 'cancelled') > 0 THEN 'cancelled'\n                ")


# Items whose output is done but could not be delivered count as 'undelivered', not 'done';
# the column is appended (CREATE OR REPLACE VIEW may only add columns at the end).
_UNDELIVERED = "(i.status = 'done' AND i.delivery_error IS NOT NULL AND i.delivered_at IS NULL)"


def _progress() -> str:
    base = _progress_0010()
    view = base.replace("count(i.idx) FILTER (WHERE i.status = 'done')      AS done",
                        f"count(i.idx) FILTER (WHERE i.status = 'done' AND NOT {_UNDELIVERED}) AS done")
    view = view.replace("ELSE 'done' END AS state",
                        f"WHEN count(i.idx) FILTER (WHERE {_UNDELIVERED}) > 0 THEN 'undelivered'\n"
                        "                ELSE 'done' END AS state")
    view = view.replace("max(i.finished_at) AS last_finished_at",
                        f"max(i.finished_at) AS last_finished_at,\n"
                        f"           count(i.idx) FILTER (WHERE {_UNDELIVERED}) AS undelivered")
    if view.count("undelivered") != 2 or view.count(_UNDELIVERED) != 3:
        raise RuntimeError("migration 0017: the job_progress view of 0010 is not the one expected")
    return view


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE + _progress())


def downgrade() -> None:
    op.get_bind().exec_driver_sql("DROP VIEW job_progress;\n" + _progress_0010() + """
ALTER TABLE job_item DROP COLUMN delivery_error;
ALTER TABLE job_source DROP COLUMN timeout_s;
""")
