-- Ingest: one transaction per batch. The pipeline COPYs the batch into the stage_*
-- temp tables, then these statements move it into the real tables. Every insert is
-- idempotent (ON CONFLICT DO NOTHING), so reruns and concurrent runs never duplicate.

-- name: create_stage_tables
CREATE TEMP TABLE IF NOT EXISTS stage_sentence (
    lang text, text text, sha bytea, tokens text[], n_tokens int, parser_id int, eligible bool,
    term_keys text[], term_mults int[]
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS stage_term (
    lang text, sha bytea, parser_id int, key text, mult int
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS stage_term_def (
    parser_id int, key text, exps sparsevec(1024), degree smallint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS stage_token (
    lang text, sha bytea, token text, tf smallint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS stage_pair (
    line int, a_sha bytea, b_sha bytea
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS new_sentence (
    id bigint, lang text, sha bytea, eligible bool, n_tokens int
) ON COMMIT DELETE ROWS;

-- name: lock_writes
-- Concurrent ingests parse in parallel but write one batch at a time: this keeps the
-- df counters and unique-key waits free of deadlocks. Released at commit.
SELECT pg_advisory_xact_lock(4242001);

-- name: existing_sentences
SELECT text_sha FROM sentence WHERE lang = %(lang)s AND text_sha = ANY(%(shas)s);

-- name: insert_sentences
WITH ins AS (
    INSERT INTO sentence (lang, text, text_sha, tokens, n_tokens, parser_id, eligible, term_keys, term_mults)
    SELECT DISTINCT ON (lang, sha) lang, text, sha, tokens, n_tokens, parser_id, eligible, term_keys, term_mults
    FROM stage_sentence
    ORDER BY lang, sha
    ON CONFLICT (lang, text_sha) DO NOTHING
    RETURNING id, lang, text_sha, eligible, n_tokens
)
INSERT INTO new_sentence SELECT * FROM ins;

-- name: insert_terms
INSERT INTO term (parser_id, key, exps, degree)
SELECT parser_id, key, exps, degree FROM stage_term_def
ON CONFLICT (parser_id, key) DO NOTHING;

-- name: insert_sentence_terms
INSERT INTO sentence_term (sentence_id, term_id, mult)
SELECT ns.id, t.id, st.mult
FROM stage_term st
JOIN new_sentence ns ON ns.lang = st.lang AND ns.sha = st.sha
JOIN term t ON t.parser_id = st.parser_id AND t.key = st.key;

-- name: insert_vocab
INSERT INTO vocab (lang, token)
SELECT DISTINCT stk.lang, stk.token
FROM stage_token stk
JOIN new_sentence ns ON ns.lang = stk.lang AND ns.sha = stk.sha AND ns.eligible
ON CONFLICT (lang, token) DO NOTHING;

-- name: insert_bm25_docs
-- The forward-index row of each new eligible sentence: its distinct lowercased tokens
-- with their tf, sorted by token id, and its token signature (see migration 0004).
INSERT INTO bm25_doc (sentence_id, dl, token_ids, tfs, sig)
SELECT ns.id, ns.n_tokens, array_agg(v.id ORDER BY v.id), array_agg(stk.tf ORDER BY v.id),
       bit_or(bm25_token_bit(v.id))
FROM stage_token stk
JOIN new_sentence ns ON ns.lang = stk.lang AND ns.sha = stk.sha AND ns.eligible
JOIN vocab v ON v.lang = stk.lang AND v.token = stk.token
GROUP BY ns.id, ns.n_tokens;

-- name: insert_postings
-- The same rows, inverted: one posting per (token, new sentence), carrying the signature.
INSERT INTO posting (token_id, sentence_id, tf, dl, sig)
SELECT u.token_id, d.sentence_id, u.tf, d.dl, d.sig
FROM new_sentence ns
JOIN bm25_doc d ON d.sentence_id = ns.id
CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(token_id, tf);

-- name: update_df
UPDATE vocab v SET df = v.df + d.n
FROM (
    SELECT u.token_id, count(*) AS n
    FROM new_sentence ns
    JOIN bm25_doc d ON d.sentence_id = ns.id
    CROSS JOIN LATERAL unnest(d.token_ids) AS u(token_id)
    GROUP BY u.token_id
) d
WHERE v.id = d.token_id;

-- name: update_bm25_stats
INSERT INTO bm25_stats AS b (lang, n_docs, total_len)
SELECT lang, count(*), sum(n_tokens) FROM new_sentence WHERE eligible GROUP BY lang
ON CONFLICT (lang) DO UPDATE
SET n_docs = b.n_docs + excluded.n_docs, total_len = b.total_len + excluded.total_len;

-- name: insert_pairs
-- a_* is the side whose language code sorts first (see the pair table).
WITH ins AS (
    INSERT INTO pair (corpus_id, a_lang, b_lang, a_id, b_id, run_id, line)
    SELECT %(corpus_id)s, %(a_lang)s, %(b_lang)s, sa.id, sb.id, %(run_id)s, sp.line
    FROM stage_pair sp
    JOIN sentence sa ON sa.lang = %(a_lang)s AND sa.text_sha = sp.a_sha
    JOIN sentence sb ON sb.lang = %(b_lang)s AND sb.text_sha = sp.b_sha
    ORDER BY sp.line
    ON CONFLICT (a_id, b_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM ins;

-- name: get_or_create_parser
WITH ins AS (
    INSERT INTO parser (lang, name, version) VALUES (%(lang)s, %(name)s, %(version)s)
    ON CONFLICT (lang, name, version) DO NOTHING
    RETURNING id
)
SELECT id FROM ins
UNION ALL
SELECT id FROM parser WHERE lang = %(lang)s AND name = %(name)s AND version = %(version)s
LIMIT 1;

-- name: parser_labels
SELECT idx, name FROM label WHERE parser_id = %(parser_id)s ORDER BY idx;

-- name: insert_label
INSERT INTO label (parser_id, idx, name) VALUES (%(parser_id)s, %(idx)s, %(name)s)
ON CONFLICT DO NOTHING;

-- name: get_or_create_corpus
WITH ins AS (
    INSERT INTO corpus (name, src_lang, tgt_lang) VALUES (%(name)s, %(src)s, %(tgt)s)
    ON CONFLICT (name) DO NOTHING
    RETURNING id, src_lang, tgt_lang
)
SELECT id, src_lang, tgt_lang FROM ins
UNION ALL
SELECT id, src_lang, tgt_lang FROM corpus WHERE name = %(name)s
LIMIT 1;

-- name: start_run
INSERT INTO ingest_run (corpus_id, files, format, workers, parsers, host, pid)
VALUES (%(corpus_id)s, %(files)s, %(format)s, %(workers)s, %(parsers)s, %(host)s, %(pid)s)
RETURNING id;

-- name: add_run_counts
UPDATE ingest_run
SET pairs_read = pairs_read + %(read)s, inserted = inserted + %(inserted)s,
    duplicates = duplicates + %(duplicates)s, rejected = rejected + %(rejected)s
WHERE id = %(run_id)s;

-- name: finish_run
UPDATE ingest_run SET status = %(status)s, finished_at = now(), error = %(error)s
WHERE id = %(run_id)s;

-- name: insert_rejected
INSERT INTO rejected_row (run_id, file, line, reason, content)
VALUES (%(run_id)s, %(file)s, %(line)s, %(reason)s, %(content)s)
ON CONFLICT DO NOTHING;

-- name: vacuum_after_ingest
VACUUM (ANALYZE) posting, bm25_doc, sentence, sentence_term, pair, vocab, term;

-- name: list_corpora
SELECT name, src_lang, tgt_lang, pairs, both_sides_eligible, runs, created_at, last_ingest
FROM corpus_stats ORDER BY name;
