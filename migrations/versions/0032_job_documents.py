"""Jobs over CAT-tool files: the original file, each item's source with placeholders, QA flags.

Revision ID: 0032
Revises: 0030
Create Date: 2026-11-26

- ``job_document``: the XLIFF or PO file a job was submitted from (its bytes, as given), so
  ``scoi job export --format xliff|po`` writes the same file back with targets filled.
- ``job_item.masked``: the source as the model sees it, inline codes as numbered placeholders
  (``<1>``...``</1>``, ``<2/>``: scoi.core.inline); ``source`` holds the text without them,
  which selection matches on. NULL for items of plain text.
- ``job_item.qa``: what the answer broke of the codes (``missing <1>``, ``extra <3/>``,
  ``misnested </2>``, ``invented <b>``); ``{}`` when all are kept, NULL when not checked
  (no codes, or not done).
"""

from alembic import op

revision = "0032"
down_revision = "0030"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE job_document (
    job_id bigint PRIMARY KEY REFERENCES job(id) ON DELETE CASCADE,
    format text NOT NULL CHECK (format IN ('xliff', 'po')),
    name text NOT NULL,
    content bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE job_document IS
    'The XLIFF or PO file a job was submitted from, as given: job export --format xliff|po fills its targets.';
ALTER TABLE job_item ADD COLUMN masked text, ADD COLUMN qa text[];
COMMENT ON COLUMN job_item.masked IS
    'The source with its inline codes as numbered placeholders (<1>...</1>, <2/>), as the prompt shows it; NULL for plain text.';
COMMENT ON COLUMN job_item.qa IS
    'QA flags of the output''s placeholders (missing, extra, misnested, invented markup); {} when fine, NULL when not checked.';
"""

DOWNGRADE = """
ALTER TABLE job_item DROP COLUMN qa, DROP COLUMN masked;
DROP TABLE job_document;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
