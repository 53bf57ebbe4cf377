"""Coverage gaps: what recorded selections could not cover (``scoi gaps``, the page's Gaps panel).

Revision ID: 0021
Revises: 0018
Create Date: 2026-11-24

Every recorded selection knows its sentence's words and tree terms, its BM25 pool and its
picks. A word or term that no pick covers and that no sentence of the pool contains is
something the translation memory could not offer for that sentence: ranked over a job (or
a schedule's jobs, or a file of sentences), these are what the memory lacks. Views only;
nothing new is stored.
"""

from alembic import op

revision = "0021"
down_revision = "0018"
branch_labels = None
depends_on = None

UPGRADE = """
-- The source sentences a recorded selection had to choose from: its pool and its picks
-- (random fills and fuzzy-ann picks can lie outside the pool).
CREATE VIEW selection_source_sentence AS
    SELECT x.selection_id, x.pair_id, se.id AS sentence_id, se.tokens, se.term_keys
    FROM (SELECT selection_id, pair_id FROM selection_candidate
          UNION
          SELECT selection_id, pair_id FROM selection_pick) x
    JOIN selection s ON s.id = x.selection_id
    JOIN example e ON e.pair_id = x.pair_id AND e.src_lang = s.src_lang AND e.tgt_lang = s.tgt_lang
    JOIN sentence se ON se.id = e.src_id;
COMMENT ON VIEW selection_source_sentence IS
    'Per recorded selection: the source sentences of its pool and picks, with their Moses tokens and term keys.';

-- Per recorded selection: each word (a Moses token with a letter or digit) and each tree
-- term of the sentence that neither a pick nor any pool sentence contains (words match
-- exactly, as lexical coverage counts them; terms by key). mult: occurrences in the
-- sentence. in_memory: whether any stored sentence of the language has it at all (words:
-- the BM25 vocabulary, lowercased; terms: any parser of the language) - false means the
-- memory lacks it, true that the pool did not reach it.
CREATE VIEW selection_gap AS
    SELECT s.id AS selection_id, s.src_lang AS lang, 'word'::text AS kind, w.unit, count(*)::int AS mult,
           EXISTS (SELECT 1 FROM vocab v WHERE v.lang = s.src_lang AND v.token = lower(w.unit) AND v.df > 0)
               AS in_memory
    FROM selection s
    CROSS JOIN LATERAL unnest(s.query_tokens) AS w(unit)
    WHERE w.unit ~ '[[:alnum:]]'
      AND NOT EXISTS (SELECT 1 FROM selection_source_sentence x
                      WHERE x.selection_id = s.id AND w.unit = ANY(x.tokens))
    GROUP BY s.id, w.unit
    UNION ALL
    SELECT q.selection_id, s.src_lang, 'term', q.key, q.mult,
           EXISTS (SELECT 1 FROM term t JOIN parser p ON p.id = t.parser_id
                   WHERE p.lang = s.src_lang AND t.key = q.key)
    FROM selection_query_term q
    JOIN selection s ON s.id = q.selection_id
    WHERE NOT EXISTS (SELECT 1 FROM selection_source_sentence x
                      WHERE x.selection_id = q.selection_id AND q.key = ANY(x.term_keys));
COMMENT ON VIEW selection_gap IS
    'Words and tree terms of a recorded selection''s sentence that no pick covers and no pool sentence contains.';

-- Per job: its items' gaps, aggregated: in how many sentences each is missing, how often.
CREATE VIEW job_gap AS
    SELECT i.job_id, g.kind, g.unit, count(DISTINCT g.selection_id)::int AS sentences,
           sum(g.mult)::int AS occurrences, bool_or(g.in_memory) AS in_memory
    FROM job_item i
    JOIN selection_gap g ON g.selection_id = i.selection_id
    GROUP BY i.job_id, g.kind, g.unit;
COMMENT ON VIEW job_gap IS
    'Per job, each missing word or term: how many of its sentences lack it (rank by sentences desc: what the memory lacks).';
"""

DOWNGRADE = "DROP VIEW IF EXISTS job_gap, selection_gap, selection_source_sentence;"


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
