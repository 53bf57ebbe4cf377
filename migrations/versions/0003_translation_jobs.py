"""Batch translation jobs: jobs, their items (one per input line), scores, readable views.

Items are the unit of work: workers claim them with ``FOR UPDATE SKIP LOCKED`` (see
scoi/db/sql/jobs.sql), so the queue needs nothing but PostgreSQL.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = """
-- One batch translation: what to translate (direction, input file) and how (selection
-- method, k, model, template, params). ``signature`` names every setting that changes
-- the outputs, sacrebleu style. ``status`` is the administrative state (active or
-- cancelled); the progress of the work is derived from the items (view job_progress).
CREATE TABLE job (
    id              bigserial PRIMARY KEY,
    name            text UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    src_lang        text NOT NULL,
    tgt_lang        text NOT NULL,
    method          text NOT NULL,
    k               integer NOT NULL CHECK (k >= 0),
    model           text NOT NULL,            -- backend spec, e.g. hf:/models/gemma
    template        text NOT NULL,            -- xglm | alpaca | path of a Jinja2 file
    params          jsonb NOT NULL DEFAULT '{}',
    signature       text NOT NULL,
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'cancelled')),
    input_path      text,
    references_path text,
    max_attempts    integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    CHECK (name IS NULL OR name !~ '^[0-9]+$')  -- a name must not read as an id
);

-- One input line of a job. (job_id, idx) is the input order. A worker owns an item while
-- status = 'running' and locked_by = its id; heartbeat_at shows it is still alive, and
-- an item whose heartbeat is older than a claimer's stall timeout is claimed again.
CREATE TABLE job_item (
    job_id        bigint NOT NULL REFERENCES job(id) ON DELETE CASCADE,
    idx           integer NOT NULL,
    source        text NOT NULL,
    source_hash   text NOT NULL,              -- md5(source): `scoi job sync` skips known lines
    reference     text,
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts      integer NOT NULL DEFAULT 0,
    max_attempts  integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    locked_by     text,
    locked_at     timestamptz,
    heartbeat_at  timestamptz,
    selection_id  bigint REFERENCES selection(id) ON DELETE SET NULL,
    prompt        text,
    output        text,                       -- the extracted answer
    raw_output    text,                       -- the model's continuation, as generated
    select_ms     double precision,
    generate_ms   double precision,
    overhead_ms   double precision,           -- everything but generation
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    PRIMARY KEY (job_id, idx)
);
-- The claim query scans only what can still be claimed.
CREATE INDEX job_item_claimable_idx ON job_item (job_id, idx) WHERE status IN ('queued', 'running');
CREATE INDEX job_item_worker_idx ON job_item (locked_by) WHERE status = 'running';
CREATE INDEX job_item_hash_idx ON job_item (job_id, source_hash);
CREATE INDEX job_item_selection_idx ON job_item (selection_id);

-- Scores of a job's outputs against its references (``scoi eval``), one row per run.
CREATE TABLE job_score (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL REFERENCES job(id) ON DELETE CASCADE,
    metric      text NOT NULL,                -- bleu | chrf | comet
    score       double precision NOT NULL,
    signature   text NOT NULL,                -- sacrebleu signature / COMET checkpoint
    n_items     integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_score_job_idx ON job_score (job_id, metric, created_at);

-- Per job: item counts by status, a derived state, and mean timings.
CREATE VIEW job_progress AS
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
                ELSE 'done' END AS state,
           round(avg(i.select_ms)::numeric, 2)   AS avg_select_ms,
           round(avg(i.generate_ms)::numeric, 2) AS avg_generate_ms,
           round(avg(i.overhead_ms)::numeric, 2) AS avg_overhead_ms,
           max(i.finished_at) AS last_finished_at
    FROM job j
    LEFT JOIN job_item i ON i.job_id = j.id
    GROUP BY j.id;

-- One row per example of each item's prompt: trace a bad translation to its prompt and
-- the examples that were picked for it (position = order in the selection).
CREATE VIEW job_item_trace AS
    SELECT i.job_id, i.idx, i.status, i.source, i.output, i.reference, i.raw_output, i.prompt,
           i.selection_id, s.method, s.signature AS selection_signature,
           p.position, p.pair_id, p.criterion, p.coverage, p.src AS example_src, p.tgt AS example_tgt
    FROM job_item i
    LEFT JOIN selection s ON s.id = i.selection_id
    LEFT JOIN selection_pick_text p ON p.selection_id = i.selection_id;

-- The latest score of each metric per job.
CREATE VIEW job_latest_score AS
    SELECT DISTINCT ON (job_id, metric) job_id, metric, score, signature, n_items, created_at
    FROM job_score
    ORDER BY job_id, metric, created_at DESC, id DESC;
"""

DOWNGRADE = """
DROP VIEW IF EXISTS job_latest_score, job_item_trace, job_progress;
DROP TABLE IF EXISTS job_score, job_item, job;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
