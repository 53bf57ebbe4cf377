"""Corpus schema: sentences, pairs, polynomial terms, BM25 postings, ingest provenance.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Why this shape is explained in docs/schema.md.
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = """
CREATE EXTENSION IF NOT EXISTS vector;

-- A dependency parser (spaCy pipeline) and its label inventory. A term's exponent vector
-- is only interpretable with the labels of the parser that produced it.
CREATE TABLE parser (
    id          serial PRIMARY KEY,
    lang        text NOT NULL,
    name        text NOT NULL,
    version     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (lang, name, version)
);

CREATE TABLE label (
    parser_id   integer NOT NULL REFERENCES parser(id) ON DELETE CASCADE,
    idx         smallint NOT NULL CHECK (idx >= 0 AND idx < 1024),  -- dimension in term.exps
    name        text NOT NULL,
    PRIMARY KEY (parser_id, idx),
    UNIQUE (parser_id, name)
);

-- Distinct polynomial terms (root-to-node label paths) per parser.
-- key is the readable form, e.g. 'ROOT^2·nsubj'; exps the exponent vector.
CREATE TABLE term (
    id          bigserial PRIMARY KEY,
    parser_id   integer NOT NULL REFERENCES parser(id),
    key         text NOT NULL,
    exps        sparsevec(1024) NOT NULL,
    degree      smallint NOT NULL,
    UNIQUE (parser_id, key)
);

-- One row per distinct sentence text per language, shared by every pair using it.
CREATE TABLE sentence (
    id          bigserial PRIMARY KEY,
    lang        text NOT NULL,
    text        text NOT NULL,
    text_sha    bytea NOT NULL,
    tokens      text[] NOT NULL,          -- Moses tokens (normalised punctuation)
    n_tokens    integer NOT NULL,
    parser_id   integer NOT NULL REFERENCES parser(id),
    eligible    boolean NOT NULL,         -- n_tokens <= 120 (docs/method.md §1)
    -- The polynomial again, as two arrays (term key, multiplicity): a read-only copy of
    -- sentence_term for the selector, which fetches 100 candidates per query in one
    -- row lookup each instead of joining ~1,500 term rows.
    term_keys   text[] NOT NULL,
    term_mults  integer[] NOT NULL,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    UNIQUE (lang, text_sha)
);
CREATE INDEX sentence_tsv_idx ON sentence USING gin (tsv);

-- The sentence's polynomial: one row per distinct term with its multiplicity.
-- (No foreign keys on this bulk table: rows are only written by the ingest
-- transaction that writes the sentence, and FK triggers would double its cost.)
CREATE TABLE sentence_term (
    sentence_id bigint NOT NULL,
    term_id     bigint NOT NULL,
    mult        integer NOT NULL CHECK (mult > 0),
    PRIMARY KEY (sentence_id, term_id)
);

-- BM25 index over lowercased Moses tokens of eligible sentences.
CREATE TABLE vocab (
    id          serial PRIMARY KEY,
    lang        text NOT NULL,
    token       text NOT NULL,
    df          integer NOT NULL DEFAULT 0,   -- eligible sentences containing the token
    UNIQUE (lang, token)
);

CREATE TABLE posting (
    token_id    integer NOT NULL,
    sentence_id bigint NOT NULL,
    tf          smallint NOT NULL,
    dl          smallint NOT NULL,   -- the sentence's length |d|, so scoring needs no join
    -- Covering key: a token's postings are read by index-only scans (no heap visits).
    PRIMARY KEY (token_id, sentence_id) INCLUDE (tf, dl)
);

CREATE TABLE bm25_stats (
    lang        text PRIMARY KEY,
    n_docs      bigint NOT NULL DEFAULT 0,
    total_len   bigint NOT NULL DEFAULT 0
);

CREATE TABLE corpus (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    src_lang    text NOT NULL,
    tgt_lang    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ingest_run (
    id          serial PRIMARY KEY,
    corpus_id   integer NOT NULL REFERENCES corpus(id),
    files       text[] NOT NULL,
    format      text NOT NULL,
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    pairs_read  integer NOT NULL DEFAULT 0,
    inserted    integer NOT NULL DEFAULT 0,
    duplicates  integer NOT NULL DEFAULT 0,
    rejected    integer NOT NULL DEFAULT 0,
    workers     integer NOT NULL DEFAULT 1,
    parsers     jsonb NOT NULL DEFAULT '{}',
    host        text,
    pid         integer,
    error       text
);

-- Rows skipped with --skip-bad, with where and why.
CREATE TABLE rejected_row (
    run_id      integer NOT NULL REFERENCES ingest_run(id) ON DELETE CASCADE,
    file        text NOT NULL,
    line        integer NOT NULL,
    reason      text NOT NULL,
    content     text,
    PRIMARY KEY (run_id, file, line)
);

-- A translation pair. Stored once whatever the direction: a_* is the side whose
-- language code sorts first, so an fr-en and an en-fr ingest of the same pair collide.
CREATE TABLE pair (
    id          bigserial PRIMARY KEY,
    corpus_id   integer NOT NULL REFERENCES corpus(id),
    a_lang      text NOT NULL,
    b_lang      text NOT NULL,
    a_id        bigint NOT NULL REFERENCES sentence(id),
    b_id        bigint NOT NULL REFERENCES sentence(id),
    run_id      integer REFERENCES ingest_run(id),
    line        integer,
    CHECK (a_lang < b_lang),
    UNIQUE (a_id, b_id)
);
CREATE INDEX pair_b_idx ON pair (b_id);
CREATE INDEX pair_corpus_idx ON pair (corpus_id);

-- Both directions of every pair: the example database for src_lang -> tgt_lang.
CREATE VIEW example AS
    SELECT id AS pair_id, corpus_id, a_lang AS src_lang, b_lang AS tgt_lang,
           a_id AS src_id, b_id AS tgt_id
    FROM pair
    UNION ALL
    SELECT id, corpus_id, b_lang, a_lang, b_id, a_id
    FROM pair;

CREATE VIEW label_inventory AS
    SELECT p.lang, p.name AS parser, p.version, l.idx, l.name AS label
    FROM label l JOIN parser p ON p.id = l.parser_id;

-- Each sentence's terms in readable form, e.g. ROOT^2·nsubj x 1.
CREATE VIEW sentence_terms AS
    SELECT s.id AS sentence_id, s.lang, s.text, t.key AS term, st.mult, t.degree
    FROM sentence s
    JOIN sentence_term st ON st.sentence_id = s.id
    JOIN term t ON t.id = st.term_id;

-- Each sentence's whole polynomial, e.g. ROOT + ROOT^2 + ROOT^2·nsubj + ROOT^2·punct.
CREATE VIEW sentence_polynomial AS
    SELECT s.id AS sentence_id, s.lang, s.text, s.n_tokens,
           sum(st.mult)::int AS n_terms,
           string_agg(CASE WHEN st.mult > 1 THEN st.mult || '*' ELSE '' END || t.key,
                      ' + ' ORDER BY t.degree, t.key) AS polynomial
    FROM sentence s
    JOIN sentence_term st ON st.sentence_id = s.id
    JOIN term t ON t.id = st.term_id
    GROUP BY s.id;

-- Pairs with their text, in the direction they were ingested.
CREATE VIEW pair_text AS
    SELECT p.id AS pair_id, c.name AS corpus, c.src_lang, c.tgt_lang,
           CASE WHEN c.src_lang = p.a_lang THEN sa.text ELSE sb.text END AS src,
           CASE WHEN c.src_lang = p.a_lang THEN sb.text ELSE sa.text END AS tgt,
           p.line
    FROM pair p
    JOIN corpus c ON c.id = p.corpus_id
    JOIN sentence sa ON sa.id = p.a_id
    JOIN sentence sb ON sb.id = p.b_id;

CREATE VIEW corpus_stats AS
    SELECT c.id, c.name, c.src_lang, c.tgt_lang, c.created_at,
           count(p.id) AS pairs,
           count(p.id) FILTER (WHERE sa.eligible AND sb.eligible) AS both_sides_eligible,
           round(avg(sa.n_tokens), 1) AS avg_tokens_a,
           round(avg(sb.n_tokens), 1) AS avg_tokens_b,
           (SELECT count(*) FROM ingest_run r WHERE r.corpus_id = c.id) AS runs,
           (SELECT max(r.finished_at) FROM ingest_run r WHERE r.corpus_id = c.id) AS last_ingest
    FROM corpus c
    LEFT JOIN pair p ON p.corpus_id = c.id
    LEFT JOIN sentence sa ON sa.id = p.a_id
    LEFT JOIN sentence sb ON sb.id = p.b_id
    GROUP BY c.id;
"""

DOWNGRADE = """
DROP VIEW IF EXISTS corpus_stats, pair_text, sentence_polynomial, sentence_terms,
    label_inventory, example;
DROP TABLE IF EXISTS pair, rejected_row, ingest_run, corpus, bm25_stats, posting, vocab,
    sentence_term, sentence, term, label, parser;
"""


def upgrade() -> None:
    op.get_bind().exec_driver_sql(UPGRADE)


def downgrade() -> None:
    op.get_bind().exec_driver_sql(DOWNGRADE)
