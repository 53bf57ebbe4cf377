"""Retire ``posting``: the posting blocks are the BM25 index's only inverted lists.

Revision ID: 0034
Revises: 0031
Create Date: 2026-11-26

Why (docs/preselection.md, docs/schema.md): at 1M pairs ``posting`` (one row per token and
sentence, with the sentence's 256-bit signature) took 2.9 GB of a 4.4 GB database, against
~100 MB for ``bm25_block``/``bm25_dir``, which hold the same postings and answer every
query. Only the one-statement "sql" preselection and ``scoi db check`` read it; the engine
is gone and the check decodes the blocks instead (scoi/db/check.py).

Dropped with it, since nothing reads them any more:

- ``posting_rep`` (its partial index of tf >= 2 postings, 0008): goes with the table;
- ``bm25_doc.sig`` and ``bm25_token_bit(integer)`` (0004): the signature served the
  "sql" engine's estimate of unread tokens; the block engine bounds with the block
  directories. ``bm25_doc`` is rewritten without it (a dropped column keeps its bytes);
- ``vocab.df_rep``, ``max_tf``, ``min_dl``, ``min_dl2``, ``min_dl3`` (0008): per-token
  bounds of the "sql" engine; the blocks' directories hold the same extremes per block.

Kept: ``bm25_doc`` (token ids, tf, dl: ``bm25_scores`` rescoring in the block engine),
``vocab.df`` (the block engine orders tokens by it), ``bm25_stats``.

The downgrade is lossless: it recreates ``posting`` from the blocks (decoded with
scoi.core.bm25blocks, the layout the selector reads), the signatures from the token ids,
and the bounds from the postings, with the indexes it had before 0034.
"""

from alembic import op

from scoi.core.bm25blocks import decode_dir, decode_postings

revision = "0034"
down_revision = "0036"
branch_labels = None
depends_on = None

UPGRADE = """
DROP TABLE posting;
DROP FUNCTION bm25_token_bit(integer);
ALTER TABLE vocab DROP COLUMN df_rep, DROP COLUMN max_tf, DROP COLUMN min_dl, DROP COLUMN min_dl2, DROP COLUMN min_dl3;
-- bm25_doc without sig, rewritten: DROP COLUMN alone would keep its 32 bytes a row on disk.
CREATE TABLE bm25_doc_new AS SELECT sentence_id, dl, token_ids, tfs FROM bm25_doc ORDER BY sentence_id;
DROP TABLE bm25_doc;
ALTER TABLE bm25_doc_new RENAME TO bm25_doc;
ALTER TABLE bm25_doc ALTER COLUMN sentence_id SET NOT NULL, ALTER COLUMN dl SET NOT NULL,
                     ALTER COLUMN token_ids SET NOT NULL, ALTER COLUMN tfs SET NOT NULL,
                     ALTER COLUMN token_ids SET STATISTICS 0, ALTER COLUMN tfs SET STATISTICS 0;
ALTER TABLE bm25_doc ADD CONSTRAINT bm25_doc_pkey PRIMARY KEY (sentence_id);
"""

DOWNGRADE_BEFORE = """
CREATE FUNCTION bm25_token_bit(token_id integer) RETURNS bit(256)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT '1'::bit(256) >> (hashint4(token_id) & 255) $$;
ALTER TABLE bm25_doc ADD COLUMN sig bit(256);
UPDATE bm25_doc d SET sig = (SELECT bit_or(bm25_token_bit(t)) FROM unnest(d.token_ids) t);
ALTER TABLE bm25_doc ALTER COLUMN sig SET NOT NULL;
ALTER TABLE vocab ADD COLUMN df_rep integer NOT NULL DEFAULT 0,
                  ADD COLUMN max_tf smallint NOT NULL DEFAULT 0,
                  ADD COLUMN min_dl smallint,
                  ADD COLUMN min_dl2 smallint,
                  ADD COLUMN min_dl3 smallint;
CREATE TEMP TABLE posting_fill (token_id integer, sentence_id bigint, tf smallint, dl smallint) ON COMMIT DROP;
"""

# the next tokens' blocks (each token's concatenated in block order) with their directories
BLOCKS = """
SELECT d.token_id, d.meta, b.ids, b.tfdl FROM bm25_dir d
CROSS JOIN LATERAL (SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids,
                           string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
                    FROM bm25_block b WHERE b.token_id = d.token_id) b
WHERE d.token_id > %(after)s
ORDER BY d.token_id LIMIT 2000
"""

DOWNGRADE_AFTER = """
CREATE TABLE posting (
    token_id integer CONSTRAINT posting_new_token_id_not_null NOT NULL,
    sentence_id bigint CONSTRAINT posting_new_sentence_id_not_null NOT NULL,
    tf smallint CONSTRAINT posting_new_tf_not_null NOT NULL,
    dl smallint CONSTRAINT posting_new_dl_not_null NOT NULL,
    sig bit(256) CONSTRAINT posting_new_sig_not_null NOT NULL
);
INSERT INTO posting (token_id, sentence_id, tf, dl, sig)
SELECT p.token_id, p.sentence_id, p.tf, p.dl, d.sig
FROM posting_fill p JOIN bm25_doc d USING (sentence_id)
ORDER BY p.token_id, p.sentence_id;
ALTER TABLE posting ADD CONSTRAINT posting_pkey PRIMARY KEY (token_id, sentence_id) INCLUDE (tf, dl, sig);
CREATE INDEX posting_rep ON posting (token_id, dl, sentence_id) INCLUDE (tf, sig) WHERE tf >= 2;
UPDATE vocab v SET df_rep = b.df_rep, max_tf = b.max_tf, min_dl = b.min_dl, min_dl2 = b.min_dl2, min_dl3 = b.min_dl3
FROM (SELECT token_id, count(*) FILTER (WHERE tf >= 2) AS df_rep, max(tf) AS max_tf, min(dl) AS min_dl,
             min(dl) FILTER (WHERE tf = 2) AS min_dl2, min(dl) FILTER (WHERE tf >= 3) AS min_dl3
      FROM posting GROUP BY token_id) b
WHERE v.id = b.token_id;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql(DOWNGRADE_BEFORE)
    conn = bind.connection.driver_connection  # psycopg: the postings go back by COPY
    after = -1
    with conn.cursor() as cur:
        while rows := cur.execute(BLOCKS, {"after": after}).fetchall():
            after = rows[-1][0]
            with cur.copy("COPY posting_fill (token_id, sentence_id, tf, dl) FROM STDIN") as cp:
                for token_id, meta, ids, tfdl in rows:
                    sids, tfs, dls = decode_postings(decode_dir(bytes(meta)), bytes(ids or b""), bytes(tfdl or b""))
                    cp.write("".join(f"{token_id}\t{s}\t{t}\t{d}\n"
                                     for s, t, d in zip(sids.tolist(), tfs.tolist(), dls.tolist())))
    bind.exec_driver_sql(DOWNGRADE_AFTER)
