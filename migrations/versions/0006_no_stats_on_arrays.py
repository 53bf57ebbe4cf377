"""No planner statistics on array columns that no query filters on.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

Why (docs/schema.md, "Writes"): every ingest ends with ANALYZE, and on array columns
ANALYZE also collects most-common-element statistics, the costliest part of it. scoi's
queries only read these arrays (the selector fetches ``tokens``, ``term_keys`` and
``term_mults`` by id; BM25 reads ``token_ids``/``tfs`` by sentence id), they never filter
on them. Measured on the fr-en development corpora' database (43k pairs): ANALYZE of ``sentence``
0.40-0.66 s, of which 0.1-0.15 s per array column; of ``bm25_doc`` 0.12-0.22 s. Columns a
person may search (``sentence.text``, ``sentence.tsv``) keep their statistics.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

COLUMNS = {"sentence": ("tokens", "term_keys", "term_mults"), "bm25_doc": ("token_ids", "tfs")}


def _set_statistics(target: int) -> None:
    for table, columns in COLUMNS.items():
        alters = ", ".join(f"ALTER COLUMN {column} SET STATISTICS {target}" for column in columns)
        op.get_bind().exec_driver_sql(f"ALTER TABLE {table} {alters}")


def upgrade() -> None:
    _set_statistics(0)


def downgrade() -> None:
    _set_statistics(-1)  # the default: default_statistics_target
