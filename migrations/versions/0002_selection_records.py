"""Recorded selections and the views that explain them.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = """
-- One call of the selector with --record: the query, how it was run, and its signature
-- (every setting that changes the result, so a run can be reproduced or compared).
CREATE TABLE selection (
    id           bigserial PRIMARY KEY,
    created_at   timestamptz NOT NULL DEFAULT now(),
    query        text NOT NULL,
    src_lang     text NOT NULL,
    tgt_lang     text NOT NULL,
    method       text NOT NULL,
    k            integer NOT NULL,
    params       jsonb NOT NULL,
    signature    text NOT NULL,
    query_tokens text[] NOT NULL
);

-- The query's polynomial terms, with exponent vectors so SQL can measure coverage.
CREATE TABLE selection_query_term (
    selection_id bigint NOT NULL REFERENCES selection(id) ON DELETE CASCADE,
    key          text NOT NULL,
    mult         integer NOT NULL,
    exps         sparsevec(1024) NOT NULL,
    PRIMARY KEY (selection_id, key)
);

-- The preselected pool, in preselection order.
CREATE TABLE selection_candidate (
    selection_id bigint NOT NULL REFERENCES selection(id) ON DELETE CASCADE,
    rank         integer NOT NULL,
    pair_id      bigint NOT NULL REFERENCES pair(id),
    score        double precision,
    PRIMARY KEY (selection_id, rank)
);

-- The picks, in selection order (= prompt order by default).
CREATE TABLE selection_pick (
    selection_id bigint NOT NULL REFERENCES selection(id) ON DELETE CASCADE,
    position     integer NOT NULL,
    pair_id      bigint NOT NULL REFERENCES pair(id),
    criterion    text NOT NULL,           -- syntax | word | bm25 | poly | random | fill
    coverage     double precision,        -- the criterion's value after this pick
    PRIMARY KEY (selection_id, position)
);

-- A pick with the example's source-side sentence.
CREATE VIEW selection_pick_text AS
    SELECT sp.selection_id, sp.position, sp.pair_id, sp.criterion, sp.coverage,
           src.id AS src_sentence_id, src.text AS src, tgt.text AS tgt, src.tokens AS src_tokens
    FROM selection_pick sp
    JOIN selection s ON s.id = sp.selection_id
    JOIN example e ON e.pair_id = sp.pair_id AND e.src_lang = s.src_lang AND e.tgt_lang = s.tgt_lang
    JOIN sentence src ON src.id = e.src_id
    JOIN sentence tgt ON tgt.id = e.tgt_id;

-- For each query term: the picked example term that covers it best,
-- c(s, t) = 1 / (1 + |v_s - v_t|_1) computed with pgvector's L1 operator <+>.
CREATE VIEW selection_term_coverage AS
    SELECT DISTINCT ON (q.selection_id, q.key)
           q.selection_id, q.key AS query_term, q.mult,
           p.position AS best_position, p.pair_id AS best_pair_id, t.key AS best_example_term,
           round((1.0 / (1.0 + (q.exps <+> t.exps)))::numeric, 4) AS similarity
    FROM selection_query_term q
    JOIN selection_pick_text p ON p.selection_id = q.selection_id
    JOIN sentence_term st ON st.sentence_id = p.src_sentence_id
    JOIN term t ON t.id = st.term_id
    ORDER BY q.selection_id, q.key, (q.exps <+> t.exps), p.position, t.key;

-- For each pick: the query words found in the example, and which of them no earlier
-- pick had (what this example contributed to lexical coverage).
CREATE VIEW selection_word_contribution AS
    SELECT p.selection_id, p.position, p.pair_id,
           array(SELECT DISTINCT w FROM unnest(s.query_tokens) w
                 WHERE w = ANY(p.src_tokens) ORDER BY w) AS query_words,
           array(SELECT DISTINCT w FROM unnest(s.query_tokens) w
                 WHERE w = ANY(p.src_tokens)
                   AND NOT EXISTS (SELECT 1 FROM selection_pick_text e
                                   WHERE e.selection_id = p.selection_id AND e.position < p.position
                                     AND w = ANY(e.src_tokens))
                 ORDER BY w) AS new_words
    FROM selection_pick_text p
    JOIN selection s ON s.id = p.selection_id;
"""

DOWNGRADE = """
DROP VIEW IF EXISTS selection_word_contribution, selection_term_coverage, selection_pick_text;
DROP TABLE IF EXISTS selection_pick, selection_candidate, selection_query_term, selection;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
