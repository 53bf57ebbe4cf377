"""Sentence embeddings for the fuzzy baselines (docs/method.md §7, Fuzzy).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23

Why:

- ``embedder``: one row per sentence-transformers model (by hub name or local directory)
  and its output dimension. An embedding is only comparable with those of the same model.
- ``sentence_embedding``: one pgvector ``vector`` per (sentence, embedder), written by
  ``scoi embed`` (or ``scoi ingest --embed``) in committed batches, so a rerun embeds only
  the sentences without one. The column is an untyped ``vector`` (models differ in
  dimension); an HNSW index needs a fixed dimension, so scoi creates one partial
  expression index per embedder, ``((embedding::vector(dim)) vector_cosine_ops) WHERE
  embedder_id = id``, when that embedder's first embeddings are written
  (scoi/embeddings.py; docs/schema.md). Dropping an embedder drops its rows and index.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE embedder (
    id         serial PRIMARY KEY,
    name       text NOT NULL UNIQUE,
    dim        integer NOT NULL CHECK (dim BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE embedder IS
    'A sentence-transformers model (hub name or resolved local directory) and its output dimension.';

CREATE TABLE sentence_embedding (
    sentence_id bigint NOT NULL REFERENCES sentence(id) ON DELETE CASCADE,
    embedder_id integer NOT NULL REFERENCES embedder(id) ON DELETE CASCADE,
    embedding   vector NOT NULL,
    PRIMARY KEY (sentence_id, embedder_id)
);
COMMENT ON TABLE sentence_embedding IS
    'Unit-length embedding of a sentence by an embedder; HNSW index per embedder: sentence_embedding_hnsw_<embedder id>.';
CREATE INDEX sentence_embedding_embedder_idx ON sentence_embedding (embedder_id, sentence_id);
"""

DOWNGRADE = """
DROP TABLE sentence_embedding;
DROP TABLE embedder;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
