"""Job items: a warning next to the output, errors of the current attempt only, and a job
whose remaining items are cancelled reads as cancelled.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24

Why:

- ``job_item.warning``: a model may answer with text PostgreSQL cannot store (NUL, lone
  UTF-16 surrogates). The worker stores the cleaned text and says what it removed here, so
  an export or ``scoi job status`` shows that the output is not exactly what the model
  wrote (``raw_output`` is cleaned the same way).
- ``last_error`` is the error of the item's current attempt: the worker clears it when an
  attempt succeeds. Done items that kept the error of an earlier attempt are cleared here,
  so a finished job lists no errors and its export has no error on done rows.
- ``job_progress.state``: an active job whose unfinished items are all cancelled (after
  ``scoi job retry --failed-only`` on a cancelled job) is ``cancelled``, not ``done``.
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The view of 0003; only the state's last branches differ between the two versions.
_PROGRESS = """
CREATE OR REPLACE VIEW job_progress AS
    SELECT j.id AS job_id, j.name, j.created_at, j.src_lang, j.tgt_lang, j.method, j.k, j.model,
           count(i.idx) AS total,
           count(i.idx) FILTER (WHERE i.status = 'queued')    AS queued,
           count(i.idx) FILTER (WHERE i.status = 'running')   AS running,
           count(i.idx) FILTER (WHERE i.status = 'done')      AS done,
           count(i.idx) FILTER (WHERE i.status = 'failed')    AS failed,
           count(i.idx) FILTER (WHERE i.status = 'cancelled') AS cancelled,
           CASE WHEN j.status = 'cancelled' THEN 'cancelled'
                WHEN count(i.idx) FILTER (WHERE i.status = 'running') > 0 THEN 'running'
                WHEN count(i.idx) FILTER (WHERE i.status = 'queued') > 0
                     THEN CASE WHEN count(i.idx) FILTER (WHERE i.status IN ('done', 'failed')) > 0
                               THEN 'running' ELSE 'queued' END
                WHEN count(i.idx) FILTER (WHERE i.status = 'failed') > 0 THEN 'failed'
                {cancelled}ELSE 'done' END AS state,
           round(avg(i.select_ms)::numeric, 2)   AS avg_select_ms,
           round(avg(i.generate_ms)::numeric, 2) AS avg_generate_ms,
           round(avg(i.overhead_ms)::numeric, 2) AS avg_overhead_ms,
           max(i.finished_at) AS last_finished_at
    FROM job j
    LEFT JOIN job_item i ON i.job_id = j.id
    GROUP BY j.id;
"""

UPGRADE = """
ALTER TABLE job_item ADD COLUMN warning text;
COMMENT ON COLUMN job_item.warning IS
    'What the worker had to change in the output to store it (e.g. NUL characters removed), or NULL.';
UPDATE job_item SET last_error = NULL WHERE status = 'done' AND last_error IS NOT NULL;
""" + _PROGRESS.format(cancelled="WHEN count(i.idx) FILTER (WHERE i.status = 'cancelled') > 0 THEN 'cancelled'\n                ")

# The errors cleared from done items are not restored (they described attempts that were
# followed by a successful one).
DOWNGRADE = _PROGRESS.format(cancelled="") + """
ALTER TABLE job_item DROP COLUMN warning;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
