"""CTQ Scorer models trained inside scoi (``scoi ctq train``, ``--method ctq``).

Revision ID: 0037
Revises: 0038
Create Date: 2026-11-26

- ``ctq_model``: one named CTQ Scorer per direction: the LLM and metric its training
  data came from, the pool size, the features it reads (``features``, in column order)
  and those left out with the reason (``omitted``), the embedder of its similarity
  features, the training job (``job_id``: one-shot translations on the workers), and
  once fitted the regressor (``model``: an .npz archive without pickles), how it was fitted
  (``regressor``), the rows it learned from and its ``signature``.
- ``ctq_train_item``: one training tuple per job item: the development sentence and the
  candidate pair its one-shot prompt holds, and the tuple's feature values (computed at
  submit, in ``ctq_model.features`` order).
"""

from alembic import op

revision = "0037"
down_revision = "0038"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE ctq_model (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    src_lang text NOT NULL,
    tgt_lang text NOT NULL,
    llm text NOT NULL,
    metric text NOT NULL CHECK (metric IN ('comet', 'chrf', 'bleu')),
    pool integer NOT NULL CHECK (pool >= 1),
    features text[] NOT NULL,
    omitted jsonb NOT NULL DEFAULT '{}'::jsonb,
    embedder text,
    job_id bigint REFERENCES job (id) ON DELETE SET NULL,
    dev_hash text NOT NULL,
    status text NOT NULL DEFAULT 'translating' CHECK (status IN ('translating', 'fitted')),
    model bytea,
    regressor jsonb,
    n_rows integer,
    signature text,
    created_at timestamptz NOT NULL DEFAULT now(),
    fitted_at timestamptz,
    CHECK ((status = 'fitted') = (model IS NOT NULL AND signature IS NOT NULL))
);
CREATE INDEX ctq_model_direction_idx ON ctq_model (src_lang, tgt_lang, fitted_at DESC);
COMMENT ON TABLE ctq_model IS
    'A CTQ Scorer trained inside scoi (scoi ctq train): features, training job, fitted regressor.';
COMMENT ON COLUMN ctq_model.model IS 'The fitted regressor as an .npz archive (numpy arrays only, no pickles).';
COMMENT ON COLUMN ctq_model.omitted IS 'Features of the released CTQ Scorer left out, each with the reason.';
CREATE TABLE ctq_train_item (
    job_id bigint NOT NULL REFERENCES job (id) ON DELETE CASCADE,
    idx integer NOT NULL,
    dev_idx integer NOT NULL,
    pair_id bigint NOT NULL,
    features double precision[] NOT NULL,
    PRIMARY KEY (job_id, idx)
);
COMMENT ON TABLE ctq_train_item IS
    'A CTQ Scorer training tuple: job item idx translates dev sentence dev_idx with pair pair_id as its one example.';
"""

DOWNGRADE = """
DROP TABLE ctq_train_item;
DROP TABLE ctq_model;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
