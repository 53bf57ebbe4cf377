"""BM25 preselection that scales: token signatures in postings and a forward index.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22

Why: docs/preselection.md. The preselection reads the postings of the query's rarest
tokens only, estimates the other tokens from a 256-bit signature of the sentence stored
in each posting row, and gives the best few hundred sentences their exact BM25 score from
``bm25_doc`` (one row per eligible sentence). Both depend on the sentence alone and are
written once, in the ingest transaction that inserts the sentence: nothing drifts when
corpora are added (idf and avgdl are still computed at query time).
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UPGRADE = """
-- The signature bit of a token: one of 256, by PostgreSQL's integer hash (stable: hash
-- indexes depend on it). A sentence's signature is the OR of its tokens' bits.
CREATE FUNCTION bm25_token_bit(token_id integer) RETURNS bit(256)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '1'::bit(256) >> (hashint4(token_id) & 255) $$;

-- Forward index: an eligible sentence's BM25 row (its distinct lowercased tokens with
-- their term frequencies, sorted by token id), for exact re-scoring of a few hundred
-- candidates without one index probe per (token, sentence).
CREATE TABLE bm25_doc (
    sentence_id bigint PRIMARY KEY,
    dl          smallint NOT NULL,
    token_ids   integer[] NOT NULL,
    tfs         smallint[] NOT NULL,
    sig         bit(256) NOT NULL
);
INSERT INTO bm25_doc (sentence_id, dl, token_ids, tfs, sig)
SELECT sentence_id, min(dl), array_agg(token_id ORDER BY token_id), array_agg(tf ORDER BY token_id),
       bit_or(bm25_token_bit(token_id))
FROM posting GROUP BY sentence_id;

-- Postings again, each with its sentence's signature in the covering key.
CREATE TABLE posting_new (
    token_id    integer NOT NULL,
    sentence_id bigint NOT NULL,
    tf          smallint NOT NULL,
    dl          smallint NOT NULL,
    sig         bit(256) NOT NULL
);
INSERT INTO posting_new (token_id, sentence_id, tf, dl, sig)
SELECT p.token_id, p.sentence_id, p.tf, p.dl, d.sig
FROM posting p JOIN bm25_doc d USING (sentence_id)
ORDER BY p.token_id, p.sentence_id;
DROP TABLE posting;
ALTER TABLE posting_new RENAME TO posting;
ALTER TABLE posting ADD CONSTRAINT posting_pkey PRIMARY KEY (token_id, sentence_id) INCLUDE (tf, dl, sig);
"""

DOWNGRADE = """
ALTER TABLE posting DROP CONSTRAINT posting_pkey;
ALTER TABLE posting DROP COLUMN sig;
ALTER TABLE posting ADD CONSTRAINT posting_pkey PRIMARY KEY (token_id, sentence_id) INCLUDE (tf, dl);
DROP TABLE bm25_doc;
DROP FUNCTION bm25_token_bit(integer);
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
