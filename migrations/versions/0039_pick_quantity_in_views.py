"""The views that show recorded picks name what each pick's number is:
``selection_pick_text`` and ``job_item_trace`` gain ``quantity`` and ``value``.

Revision ID: 0039
Revises: 0037
Create Date: 2026-11-26

``selection_pick.coverage`` holds each method's own number for a pick: SCOI's running
coverage, DPP's residual, poly-topk's polynomial distance, R-BM25's score, fuzzy's cosine,
CTQ Scorer's predicted quality; NULL for bm25, random and fill picks. ``quantity`` says
which (the table of scoi.core.criteria, docs/selection.md), ``value`` is the number under
a name that claims nothing; ``coverage`` stays for the queries people already have
(deprecated). Both columns come at the views' end (``CREATE OR REPLACE VIEW`` may only
append), so the views built on them stay as they are.
"""

from alembic import op

revision = "0039"
down_revision = "0037"
branch_labels = None
depends_on = None

#: criterion -> quantity, as scoi.core.criteria.QUANTITY (a test holds the two together)
QUANTITY = """CASE sp.criterion
               WHEN 'syntax' THEN 'coverage' WHEN 'word' THEN 'coverage'
               WHEN 'poly' THEN 'distance' WHEN 'dpp' THEN 'residual' WHEN 'rbm25' THEN 'rbm25'
               WHEN 'fuzzy' THEN 'cosine' WHEN 'predicted-quality' THEN 'predicted_quality'
           END"""

PICK_TEXT = """
CREATE OR REPLACE VIEW selection_pick_text AS
    SELECT sp.selection_id, sp.position, sp.pair_id, sp.criterion, sp.coverage,
           src.id AS src_sentence_id, src.text AS src, tgt.text AS tgt, src.tokens AS src_tokens,
           sp.match{extra}
    FROM selection_pick sp
    JOIN selection s ON s.id = sp.selection_id
    JOIN example e ON e.pair_id = sp.pair_id AND e.src_lang = s.src_lang AND e.tgt_lang = s.tgt_lang
    JOIN sentence src ON src.id = e.src_id
    JOIN sentence tgt ON tgt.id = e.tgt_id;
"""

TRACE = """
CREATE OR REPLACE VIEW job_item_trace AS
    SELECT i.job_id, i.idx, i.status, i.source, i.output, i.reference, i.raw_output, i.prompt,
           i.selection_id, s.method, s.signature AS selection_signature,
           p.position, p.pair_id, p.criterion, p.coverage, p.src AS example_src, p.tgt AS example_tgt,
           p.match{extra}
    FROM job_item i
    LEFT JOIN selection s ON s.id = i.selection_id
    LEFT JOIN selection_pick_text p ON p.selection_id = i.selection_id;
"""

COMMENTS = """
COMMENT ON COLUMN selection_pick_text.quantity IS
    'What value is: coverage (scoi, syntax, word), distance (poly-topk), residual (dpp), rbm25, cosine (fuzzy), predicted_quality (ctq); NULL when the pick has no value (bm25, random, fill). docs/selection.md';
COMMENT ON COLUMN selection_pick_text.value IS
    'The number the pick''s criterion scored it with, the quantity named by quantity (the coverage column holds the same number; deprecated name).';
COMMENT ON COLUMN job_item_trace.quantity IS
    'What value is (see selection_pick_text.quantity).';
COMMENT ON COLUMN job_item_trace.value IS
    'The number the pick''s criterion scored it with, the quantity named by quantity.';
"""

#: 0029's comments, lost with the dropped views on the way down
MATCH_COMMENTS = """
COMMENT ON COLUMN selection_pick_text.match IS
    'Match % (0-100) of the example''s source against the query (docs/method.md); NULL before migration 0023.';
COMMENT ON COLUMN job_item_trace.match IS
    'Match % (0-100) of the example''s source against the item''s source (docs/method.md).';
"""

#: 0002's views on selection_pick_text, unchanged since (recreated by the downgrade)
DEPENDENTS = """
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


def upgrade() -> None:
    op.execute(PICK_TEXT.replace("{extra}", f",\n           {QUANTITY} AS quantity,\n           sp.coverage AS value"))
    op.execute(TRACE.replace("{extra}", ",\n           p.quantity, p.value"))
    op.execute(COMMENTS)


def downgrade() -> None:
    # A view loses a column only by being dropped, with the views built on it; they come
    # back as 0029 left them.
    op.execute("DROP VIEW job_item_trace, selection_word_contribution, selection_term_coverage, selection_pick_text")
    op.execute(PICK_TEXT.replace("{extra}", "").replace("CREATE OR REPLACE VIEW", "CREATE VIEW"))
    op.execute(DEPENDENTS)
    op.execute(TRACE.replace("{extra}", "").replace("CREATE OR REPLACE VIEW", "CREATE VIEW"))
    op.execute(MATCH_COMMENTS)
