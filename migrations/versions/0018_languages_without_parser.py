"""Languages without a parser, natasha's trees, and R-BM25's published tokenization.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24

* ``parser.tree_tokens`` may be 'none' (sentences stored without trees: their language had
  no parser at ingest; ``scoi reanalyze --lang L`` adds trees later) and 'razdel'
  (natasha's trees for Russian, over razdel's tokens).
* R-BM25's variant ``ctq`` now tokenizes as CTQ Scorer's released code (Indic NLP's
  trivial tokenizer, without the tokens '.', ',' and '?'); the former ``ctq`` (Moses
  tokens, punctuation kept) is named ``moses``. Stored jobs (an experiment's cells too),
  schedules and recorded selections that meant the former are renamed, so none silently changes
  meaning; a job or schedule of method rbm25 stored without a variant meant it too.
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE parser DROP CONSTRAINT parser_tree_tokens_check;
ALTER TABLE parser ADD CONSTRAINT parser_tree_tokens_check
    CHECK (tree_tokens IN ('moses', 'spacy', 'razdel', 'none'));

UPDATE job SET params = params || '{"rbm25_variant": "moses"}',
    signature = replace(signature, '|rbm25:ctq|', '|rbm25:moses|')
WHERE method = 'rbm25' AND coalesce(params->>'rbm25_variant', 'ctq') = 'ctq';
UPDATE job_score SET signature = replace(signature, '|rbm25:ctq|', '|rbm25:moses|')
WHERE signature LIKE '%|rbm25:ctq|%';
UPDATE selection SET params = params || '{"rbm25_variant": "moses"}',
    signature = replace(signature, '|rbm25:ctq|', '|rbm25:moses|')
WHERE method = 'rbm25' AND coalesce(params->>'rbm25_variant', 'ctq') = 'ctq';
UPDATE schedule SET spec = spec || '{"rbm25_variant": "moses"}'
WHERE spec->>'method' = 'rbm25' AND coalesce(spec->>'rbm25_variant', 'ctq') = 'ctq';
"""

DOWNGRADE = """
UPDATE job SET params = params || '{"rbm25_variant": "ctq"}',
    signature = replace(signature, '|rbm25:moses|', '|rbm25:ctq|')
WHERE method = 'rbm25' AND params->>'rbm25_variant' = 'moses';
UPDATE job_score SET signature = replace(signature, '|rbm25:moses|', '|rbm25:ctq|')
WHERE signature LIKE '%|rbm25:moses|%';
UPDATE selection SET params = params || '{"rbm25_variant": "ctq"}',
    signature = replace(signature, '|rbm25:moses|', '|rbm25:ctq|')
WHERE method = 'rbm25' AND params->>'rbm25_variant' = 'moses';
UPDATE schedule SET spec = spec || '{"rbm25_variant": "ctq"}'
WHERE spec->>'method' = 'rbm25' AND spec->>'rbm25_variant' = 'moses';
ALTER TABLE parser DROP CONSTRAINT parser_tree_tokens_check;
ALTER TABLE parser ADD CONSTRAINT parser_tree_tokens_check CHECK (tree_tokens IN ('moses', 'spacy'));
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    # Only possible while no parser row is 'none' or 'razdel', and no stored job uses the
    # published ``ctq`` (it would be read as the Moses-token variant again).
    op.execute(DOWNGRADE)
