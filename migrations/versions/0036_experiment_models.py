"""Experiments across several models: a cell of the grid is (model, method, k, order,
template, seed), so ``experiment_job`` records the cell's model.

Revision ID: 0036
Revises: 0031
Create Date: 2026-11-26

- ``experiment_job.model``: the backend spec of the cell's job (as ``job.model``); existing
  rows take their job's. The experiment's model list, with each model's short label,
  lives in ``experiment.grid`` (``models``), since the model is now a dimension of the grid.
- The unique cell key gains ``model``: without it a second model's cell would collide with
  the first model's and be dropped by the insert's ON CONFLICT.
"""

from alembic import op

revision = "0036"
down_revision = "0031"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE experiment_job ADD COLUMN model text;
UPDATE experiment_job x SET model = j.model FROM job j WHERE j.id = x.job_id;
ALTER TABLE experiment_job ALTER COLUMN model SET NOT NULL;
ALTER TABLE experiment_job DROP CONSTRAINT experiment_job_experiment_id_method_k_example_order_templat_key;
ALTER TABLE experiment_job ADD CONSTRAINT experiment_job_cell_key
    UNIQUE (experiment_id, model, method, k, example_order, template, seed);
COMMENT ON COLUMN experiment_job.model IS 'The cell''s model: its job''s backend spec (job.model).';
COMMENT ON TABLE experiment IS 'A comparison run as jobs: grid = models (label, spec), methods, ks, orders, templates, seeds, baseline and job settings; model = the first model''s spec; input_hash = sha256 of the sources and references.';
"""

DOWNGRADE = """
ALTER TABLE experiment_job DROP CONSTRAINT experiment_job_cell_key;
DELETE FROM experiment_job x USING experiment_job y
 WHERE x.experiment_id = y.experiment_id AND x.method = y.method AND x.k = y.k
   AND x.example_order = y.example_order AND x.template = y.template AND x.seed = y.seed AND x.job_id > y.job_id;
ALTER TABLE experiment_job ADD CONSTRAINT experiment_job_experiment_id_method_k_example_order_templat_key
    UNIQUE (experiment_id, method, k, example_order, template, seed);
ALTER TABLE experiment_job DROP COLUMN model;
COMMENT ON TABLE experiment IS 'A comparison run as jobs: grid = methods, ks, orders, templates, seeds, baseline and job settings; input_hash = sha256 of the sources and references.';
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
