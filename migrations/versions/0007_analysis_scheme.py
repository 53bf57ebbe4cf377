"""Analysis scheme: which tokens a sentence's dependency tree was built over.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

Until 0007, scoi parsed the Moses tokens (a pre-tokenised spaCy ``Doc``); the authors of
SCOI parse the stripped sentence with the pipeline's own tokenizer, and only their trees
reproduce the published selections (docs/method.md, "Trees"). A parser row now names the
whole analysis scheme: pipeline name, version and ``tree_tokens`` ('moses': the old
scheme; 'spacy': the pipeline's own tokenizer over the stripped text). Every existing
parser row, and so every sentence stored before this revision, is 'moses';
``scoi reanalyze`` moves sentences to the current scheme, and selection refuses a
language whose sentences are not all on one scheme.

``sentence (parser_id)`` is indexed so that the selector can check the schemes of a
language with a few index probes, and ``scoi reanalyze`` can find the sentences it still
has to do.
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE parser ADD COLUMN tree_tokens text NOT NULL DEFAULT 'moses'
    CHECK (tree_tokens IN ('moses', 'spacy'));
ALTER TABLE parser ALTER COLUMN tree_tokens DROP DEFAULT;
ALTER TABLE parser DROP CONSTRAINT parser_lang_name_version_key;
ALTER TABLE parser ADD CONSTRAINT parser_scheme_key UNIQUE (lang, name, version, tree_tokens);
CREATE INDEX sentence_parser_idx ON sentence (parser_id);
"""

DOWNGRADE = """
DROP INDEX sentence_parser_idx;
ALTER TABLE parser DROP CONSTRAINT parser_scheme_key;
ALTER TABLE parser ADD CONSTRAINT parser_lang_name_version_key UNIQUE (lang, name, version);
ALTER TABLE parser DROP COLUMN tree_tokens;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    # Only possible while no (lang, name, version) has rows of both schemes.
    op.execute(DOWNGRADE)
