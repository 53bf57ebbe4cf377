"""BM25 token bounds: what a token can contribute at most, for certified preselection.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23

Why (docs/preselection.md, "Certified top n"): the preselection proves its top n exact
by bounding what the query tokens it did not read in full can add to a sentence's score.
A token's contribution is w * tf / (tf + ka + kc * dl), which grows with tf and shrinks
with dl; ka and kc depend on avgdl and so change as corpora are added. What is stored is
therefore not a score but the extremes of (tf, dl) over the token's postings, from which
the query computes the bound with the current ka and kc:

- ``df_rep``: how many of its postings have tf >= 2 (what ``posting_rep`` holds of it);
- ``max_tf``: the largest tf of any posting;
- ``min_dl``: the shortest sentence holding the token (bounds tf = 1 postings);
- ``min_dl2``: the shortest one holding it exactly twice; ``min_dl3``: three times or more
  (NULL while there is none).

Ingest keeps them in the transaction that adds the postings and df (``greatest`` /
``least``): adding sentences only ever loosens them, so they stay valid bounds. Nothing
deletes postings; if something did, the stored values would still be valid (only looser).
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE vocab ADD COLUMN df_rep integer NOT NULL DEFAULT 0,
                  ADD COLUMN max_tf smallint NOT NULL DEFAULT 0,
                  ADD COLUMN min_dl smallint,
                  ADD COLUMN min_dl2 smallint,
                  ADD COLUMN min_dl3 smallint;
UPDATE vocab v SET df_rep = b.df_rep, max_tf = b.max_tf, min_dl = b.min_dl, min_dl2 = b.min_dl2, min_dl3 = b.min_dl3
FROM (SELECT token_id, count(*) FILTER (WHERE tf >= 2) AS df_rep, max(tf) AS max_tf, min(dl) AS min_dl,
             min(dl) FILTER (WHERE tf = 2) AS min_dl2, min(dl) FILTER (WHERE tf >= 3) AS min_dl3
      FROM posting GROUP BY token_id) b
WHERE v.id = b.token_id;

-- The postings with tf >= 2 (one in 14 on the fr-en development corpora), shortest sentences first:
-- long queries repeat common tokens, and the sentences that repeat them too are their
-- best matches; reading these few postings finds them without reading the token's
-- whole list, and once they are all read, a sentence met without them holds the token
-- at most once (which the signature bounds).
CREATE INDEX posting_rep ON posting (token_id, dl, sentence_id) INCLUDE (tf, sig) WHERE tf >= 2;

-- Exact BM25 of the given sentences for a query (token ids, weights w = idf x count in the
-- query) from their forward-index rows, with K(dl) = ka + kc dl. The preselection scores
-- its first candidates and, to certify, those the bounds cannot exclude: two uses of one
-- definition. Rounded to 1e-9: equal contributions summed in another order must tie. A
-- single SELECT, so PostgreSQL inlines it into the calling statement.
CREATE FUNCTION bm25_scores(bigint[], integer[], float8[], float8, float8)
    RETURNS TABLE (sentence_id bigint, score float8)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT d.sentence_id, round(sum(q.w * u.tf / (u.tf + $4 + $5 * d.dl))::numeric, 9)::float8
    FROM bm25_doc d
    CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(tid, tf)
    JOIN unnest($2, $3) AS q(id, w) ON q.id = u.tid
    WHERE d.sentence_id = ANY($1)
    GROUP BY d.sentence_id
    $$;
"""

DOWNGRADE = """
DROP INDEX posting_rep;
DROP FUNCTION bm25_scores(bigint[], integer[], float8[], float8, float8);
ALTER TABLE vocab DROP COLUMN df_rep, DROP COLUMN max_tf, DROP COLUMN min_dl, DROP COLUMN min_dl2, DROP COLUMN min_dl3;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
