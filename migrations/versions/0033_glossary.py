"""Glossaries (term bases): source/target term pairs put into prompts and checked in outputs.

Revision ID: 0033
Revises: 0032 (written on 0023; rechained after merging main)
Create Date: 2026-11-26

- ``glossary``: a named term base (``scoi glossary add FILE --name N``).
- ``glossary_entry``: one source term and its required target term for a language pair,
  with the keys the matcher compares (scoi.core.glossary): ``src_key``/``tgt_key`` are the
  terms' word tokens under the case rule (lowercased unless the term is an acronym),
  ``src_lemmas``/``tgt_lemmas`` their lemmas where the language's spaCy pipeline has a
  lemmatizer (else NULL); ``meta`` says where the entry came from (file, line, entry id).
  Unique on (glossary, languages, source term, target term): adding a file again adds
  nothing.
- ``glossary_terms``: a view a person can read.
- ``job_item.term_check``: per done item, each glossary term found in its source and
  whether the output holds the required target term: ``[{src, tgt, found}]``; NULL for
  jobs without a glossary.
"""

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE glossary (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE glossary IS 'A named term base (scoi glossary add).';
CREATE TABLE glossary_entry (
    id bigserial PRIMARY KEY,
    glossary_id bigint NOT NULL REFERENCES glossary (id) ON DELETE CASCADE,
    src_lang text NOT NULL,
    tgt_lang text NOT NULL,
    src_term text NOT NULL,
    tgt_term text NOT NULL,
    note text,
    src_key text[] NOT NULL,
    src_lemmas text[],
    tgt_key text[] NOT NULL,
    tgt_lemmas text[],
    meta jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT glossary_entry_unique UNIQUE (glossary_id, src_lang, tgt_lang, src_term, tgt_term)
);
COMMENT ON TABLE glossary_entry IS
    'A source term and the target term an output must use (scoi.core.glossary: keys under the case rule, lemmas where a lemmatizer exists).';
COMMENT ON COLUMN glossary_entry.meta IS 'Where the entry came from: file, line, TBX entry id.';
CREATE VIEW glossary_terms AS
SELECT g.name AS glossary, e.src_lang, e.tgt_lang, e.src_term, e.tgt_term, e.note
FROM glossary_entry e JOIN glossary g ON g.id = e.glossary_id;
COMMENT ON VIEW glossary_terms IS 'Every glossary entry, readable: glossary name, languages, terms, note.';
ALTER TABLE job_item ADD COLUMN term_check jsonb;
COMMENT ON COLUMN job_item.term_check IS
    'Glossary terms found in the source and whether the output holds each required target term: [{src, tgt, found}]; NULL without a glossary.';
"""

DOWNGRADE = """
ALTER TABLE job_item DROP COLUMN term_check;
DROP VIEW glossary_terms;
DROP TABLE glossary_entry;
DROP TABLE glossary;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
