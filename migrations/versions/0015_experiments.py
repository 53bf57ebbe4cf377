"""Experiments: a grid of jobs compared in one table (``scoi experiment``).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-23

Why: the paper answers "does SCOI help?" with a table, methods × metrics,
significance against a baseline. An experiment is a name, the grid it was asked for and
the input it ran on; its cells are ordinary jobs (so workers, resume and crash safety
come from the job queue), linked in ``experiment_job`` with the grid coordinates of each.
``result`` keeps the last table computed, as ``scoi experiment show --json`` prints it.
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE experiment (
    id              serial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    src_lang        text NOT NULL,
    tgt_lang        text NOT NULL,
    model           text NOT NULL,
    grid            jsonb NOT NULL,
    input_hash      text NOT NULL,
    input_path      text,
    references_path text,
    result          jsonb,
    result_at       timestamptz
);
COMMENT ON TABLE experiment IS
    'A comparison run as jobs: grid = methods, ks, orders, templates, seeds, baseline and job settings; input_hash = sha256 of the sources and references.';

CREATE TABLE experiment_job (
    experiment_id integer NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
    job_id        bigint NOT NULL REFERENCES job(id) ON DELETE CASCADE,
    method        text NOT NULL,
    k             integer NOT NULL,
    example_order text NOT NULL,
    template      text NOT NULL,
    seed          integer NOT NULL,
    PRIMARY KEY (experiment_id, job_id),
    UNIQUE (experiment_id, method, k, example_order, template, seed)
);
COMMENT ON TABLE experiment_job IS 'The jobs of an experiment, one per grid cell (random: one per seed).';
"""

DOWNGRADE = "DROP TABLE experiment_job; DROP TABLE experiment;"


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
