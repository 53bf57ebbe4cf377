"""Schedules stored in PostgreSQL, and jobs over table rows.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23

Why:

- ``schedule``: a job template (direction, method, k, model, ... in ``spec``), a source
  and a destination, run by ``scoi worker`` at the ticks of a cron expression. The
  schedule feeds one long-lived job (``job_id``) that grows at every run, as
  ``scoi job sync`` does for cron users.
- ``schedule_run``: one row per (schedule, tick). Its primary key is what makes a tick run
  exactly once however many workers are up: a worker inserts the row with ON CONFLICT DO
  NOTHING in the transaction that adds the items, and only the one that inserted it runs
  the tick. The row keeps the job, the counts and the error of the run.
- ``job_source``: where a job's new items come from when it is not a file: a read-only
  SQL query returning (key, text) rows, in scoi's database or another one (``url`` never
  holds a password; ``url_env`` names the environment variable that holds the URL).
- ``job_destination``: where a job's outputs go besides the job itself: a table, upserted
  by key when an item is done (``delivered_at`` of the item marks it), or a file written
  when the job has no unfinished item.
- ``job_item.source_key``: the key of the source row an item came from; a table source adds
  only the keys its job does not hold yet (unique per job).
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE schedule (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name !~ '^[0-9]+$' AND btrim(name) <> ''),
    cron        text NOT NULL,                       -- five fields, e.g. '15 2 * * *'
    timezone    text NOT NULL DEFAULT 'UTC',         -- the cron fields are read in this zone
    paused      boolean NOT NULL DEFAULT false,
    spec        jsonb NOT NULL,                      -- the job template (JobSpec fields)
    job_id      bigint REFERENCES job(id) ON DELETE SET NULL,  -- the job the runs grow
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE schedule_run (
    schedule_id bigint NOT NULL REFERENCES schedule(id) ON DELETE CASCADE,
    tick        timestamptz NOT NULL,                -- the cron tick run (or the time of a manual run)
    manual      boolean NOT NULL DEFAULT false,
    worker      text,
    job_id      bigint REFERENCES job(id) ON DELETE SET NULL,
    added       integer,
    skipped     integer,
    error       text,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (schedule_id, tick)
);

CREATE TABLE job_source (
    job_id      bigint PRIMARY KEY REFERENCES job(id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('file', 'sql')),
    path        text,                                -- kind = file
    query       text,                                -- kind = sql: SELECT key, text ...
    url         text,                                -- kind = sql: another database (no password)
    url_env     text,                                -- ... or the variable holding its URL
    CHECK ((kind = 'file') = (path IS NOT NULL)),
    CHECK ((kind = 'sql') = (query IS NOT NULL))
);

CREATE TABLE job_destination (
    job_id      bigint PRIMARY KEY REFERENCES job(id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('file', 'table')),
    path        text,                                -- kind = file
    format      text,                                -- kind = file: tsv | jsonl
    table_name  text,                                -- kind = table: [schema.]table
    key_column  text,
    text_column text,
    url         text,
    url_env     text,
    last_error  text,                                -- of the last delivery, cleared by a good one
    last_delivered_at timestamptz,
    CHECK ((kind = 'file') = (path IS NOT NULL)),
    CHECK ((kind = 'table') = (table_name IS NOT NULL AND key_column IS NOT NULL AND text_column IS NOT NULL))
);

ALTER TABLE job_item ADD COLUMN source_key text;
ALTER TABLE job_item ADD COLUMN delivered_at timestamptz;
COMMENT ON COLUMN job_item.source_key IS 'Key of the source row the item came from (table sources), or NULL.';
COMMENT ON COLUMN job_item.delivered_at IS 'When the output was written to the job''s destination, or NULL.';
CREATE UNIQUE INDEX job_item_source_key_idx ON job_item (job_id, source_key) WHERE source_key IS NOT NULL;
-- The items a destination still waits for.
CREATE INDEX job_item_undelivered_idx ON job_item (job_id, idx) WHERE status = 'done' AND delivered_at IS NULL;
"""

DOWNGRADE = """
DROP INDEX job_item_undelivered_idx;
DROP INDEX job_item_source_key_idx;
ALTER TABLE job_item DROP COLUMN delivered_at;
ALTER TABLE job_item DROP COLUMN source_key;
DROP TABLE job_destination;
DROP TABLE job_source;
DROP TABLE schedule_run;
DROP TABLE schedule;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
