"""Exact-match lookup for translation-memory reuse: the normalisation of scoi.core.exact in
SQL, and an index of the few sentences whose stored text it changes.

Revision ID: 0031
Revises: 0033
Create Date: 2026-11-26

- ``exact_text(text)``: Unicode NFC, every run of Unicode White_Space one space, trimmed
  (scoi.core.exact.normalize; tests check both give the same text).
- ``exact_sha(text)``: SHA-256 of that, UTF-8: the key a job item's source is looked up by.
  It repeats exact_text's body rather than calling it: an index build runs with a safe
  search_path, where an unqualified call to another scoi function is not found.
- ``sentence_exact_idx``: (lang, exact_sha(text)) of the sentences whose text is *not*
  already normalised. Ingest stores texts trimmed, so almost every sentence is normalised
  and found by its ``text_sha`` (unique index); this partial index holds only the others
  (double spaces, tabs, decomposed accents), so it stays small at 10M sentences.
- ``exact_changes(text)``: whether exact_text changes a text, tested without building the
  normalised text (an NFC check and one regular expression: ~4 us a sentence at ingest
  instead of ~25 us for ``exact_text(text) <> text``); the partial index's predicate.
"""

from alembic import op

revision = "0031"
down_revision = "0033"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE FUNCTION exact_text(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT btrim(regexp_replace(normalize($1, NFC),
        '[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' ') $$;
COMMENT ON FUNCTION exact_text(text) IS
    'A text as exact matching compares it: NFC, whitespace runs as one space, trimmed (docs/jobs.md, "Reusing the translation memory").';
CREATE FUNCTION exact_sha(text) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT sha256(convert_to(btrim(regexp_replace(normalize($1, NFC),
        '[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' '), 'UTF8')) $$;
COMMENT ON FUNCTION exact_sha(text) IS
    'SHA-256 of exact_text(text): equals sentence.text_sha when the stored text is already normalised.';
CREATE FUNCTION exact_changes(text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT NOT ($1 IS NFC NORMALIZED)
        OR $1 ~ '[\t\n\v\f\r\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]|  |^ | $' $$;
COMMENT ON FUNCTION exact_changes(text) IS
    'Whether exact_text changes the text (not NFC, or whitespace other than single inner spaces): the sentences sentence_exact_idx holds.';
CREATE INDEX sentence_exact_idx ON sentence (lang, exact_sha(text)) WHERE exact_changes(text);
"""

DOWNGRADE = """
DROP INDEX sentence_exact_idx;
DROP FUNCTION exact_changes(text);
DROP FUNCTION exact_sha(text);
DROP FUNCTION exact_text(text);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
