-- Selection: BM25-like preselection, candidate fetch, recording. See docs/preselection.md.

-- name: blocks_stream
-- The block preselection's read when every list is read (the default; scoi/selection/preselect.py,
-- docs/preselection.md, "Streaming"): the query's tokens' posting lists in chunks of
-- `chunk` blocks, one row per chunk, for the selector to stream (it decodes a chunk while
-- the server reads the next). Each row carries what decoding it needs: the token's rank
-- (df, id order), the number of tokens and of the token's chunks, df and count in the
-- query, the chunk's directory records, N and the total length, the id range of all the
-- lists and their postings in all; then the token's id, the version of its directory
-- row (xmin: every write of the token's blocks rewrites that row) and whether the
-- selector's list cache holds that very version (`cached`, `versions`, `cached_df`:
-- scoi/selection/listcache.py): then one row without records or postings stands for the
-- token's chunks, and its blocks are not read; last, the token. If the postings are more than `read_all`,
-- one row without postings instead. No row: no query token is in the index.
WITH st AS (SELECT n_docs, total_len FROM bm25_stats WHERE lang = %(lang)s),
q AS MATERIALIZED (
    SELECT v.id, v.token, v.df, qt.cnt, d.meta, d.n_blocks, d.xmin::text::bigint AS version,
           EXISTS (SELECT 1 FROM unnest(%(cached)s::int[], %(versions)s::bigint[], %(cached_df)s::int[])
                                 AS c(id, version, df)
                   WHERE c.id = v.id AND c.version = d.xmin::text::bigint AND c.df = v.df) AS hit,
           row_number() OVER (ORDER BY v.df, v.id) AS rank, count(*) OVER () AS n_tokens, sum(v.df) OVER () AS total,
           min(('x' || encode(substr(d.meta, 1, 8), 'hex'))::bit(64)::bigint) OVER () AS lo,
           max(('x' || encode(substr(d.meta, length(d.meta) - %(rec)s + 9, 8), 'hex'))::bit(64)::bigint) OVER () AS hi
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    JOIN bm25_dir d ON d.token_id = v.id
    ORDER BY v.df, v.id
)
SELECT q.rank, q.n_tokens, c.c, CASE WHEN q.hit THEN 1 ELSE (q.n_blocks - 1) / %(chunk)s + 1 END, q.df, q.cnt,
       CASE WHEN NOT q.hit THEN substr(q.meta, 1 + c.c * %(chunk)s * %(rec)s, %(chunk)s * %(rec)s) END,
       st.n_docs, st.total_len, q.lo, q.hi, q.total, b.ids, b.tfdl, q.id, q.version, q.hit, q.token
FROM q CROSS JOIN st
CROSS JOIN LATERAL generate_series(0, CASE WHEN q.hit THEN 0 ELSE (q.n_blocks - 1) / %(chunk)s END) AS c(c)
CROSS JOIN LATERAL (
    SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids, string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
    FROM bm25_block b
    WHERE NOT q.hit AND b.token_id = q.id AND b.block_no >= c.c * %(chunk)s AND b.block_no < (c.c + 1) * %(chunk)s
) b
WHERE q.total <= %(read_all)s
UNION ALL
SELECT q.rank, q.n_tokens, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, q.total, NULL, NULL, NULL, NULL, NULL, NULL
FROM q WHERE q.rank = 1 AND q.total > %(read_all)s;

-- name: server_key
-- Which server and database a connection reads (the list cache's key,
-- scoi/selection/listcache.py): directory row versions are only comparable within one.
SELECT d.oid::bigint, pg_postmaster_start_time()::text, inet_server_addr()::text, inet_server_port()
FROM pg_database d WHERE d.datname = current_database();

-- name: blocks_plan
-- Where the query's posting lists lie and which of them the list cache holds, read when the
-- lists may span more than Bm25Params.span ids: they are then streamed and summed one id
-- range at a time (blocks_stream_range), so a query's memory stays bounded however large
-- the memory grows (docs/preselection.md). One row per token known to the index, in rank
-- order (df, id, as blocks_stream): rank, number of tokens, df, count in the query, token
-- id, the version of its directory row and whether the cache holds that very version
-- (`cached`, `versions`, `cached_df`, as blocks_stream), the first sentence id of its
-- first block and the last id of its last block; N and the total length; the token; with
-- `export`, this transaction's snapshot for helper connections to import (SET TRANSACTION
-- SNAPSHOT), exported once. No row: no query token is in the index.
WITH st AS (SELECT n_docs, total_len FROM bm25_stats WHERE lang = %(lang)s)
SELECT row_number() OVER (ORDER BY v.df, v.id), count(*) OVER (), v.df, qt.cnt, v.id, d.xmin::text::bigint,
       EXISTS (SELECT 1 FROM unnest(%(cached)s::int[], %(versions)s::bigint[], %(cached_df)s::int[]) AS c(id, version, df)
               WHERE c.id = v.id AND c.version = d.xmin::text::bigint AND c.df = v.df),
       CASE WHEN d.n_blocks > 0 THEN ('x' || encode(substr(d.meta, 1, 8), 'hex'))::bit(64)::bigint END,
       CASE WHEN d.n_blocks > 0
            THEN ('x' || encode(substr(d.meta, 1 + (d.n_blocks - 1) * %(rec)s + 8, 8), 'hex'))::bit(64)::bigint END,
       st.n_docs, st.total_len, v.token, x.snapshot
FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
JOIN bm25_dir d ON d.token_id = v.id
CROSS JOIN st
CROSS JOIN (SELECT CASE WHEN %(export)s THEN pg_export_snapshot() END AS snapshot) x
ORDER BY v.df, v.id;

-- name: blocks_stream_range
-- blocks_stream's rows for the sentences with ids in [`from`, `to`) only: one connection's
-- range, on one of several connections (blocks_plan). Per token, a binary search of its
-- directory finds the first block whose last id reaches `from` and the first whose first
-- id reaches `to`; the rows between them are read, widened to whole rows (multiples of
-- `grp`, bm25blocks.GROUP), so a row is never cut; the reader drops the postings outside
-- the range (at most a row's worth per token and end; the open blocks after the last full
-- group are one row each: bm25blocks.open_from). A token with no block in the range
-- gives one row without postings (its idf still counts). `lo`, `hi`: the ids the range's
-- postings can have; `total`: postings of the blocks read. The token's id, the version of
-- its directory row, whether the list cache holds that version (`cached`, `versions`,
-- `cached_df`, as blocks_stream: then one row without records or postings stands for the
-- token's chunks, and its blocks are not read) and the token close each row.
WITH RECURSIVE st AS (SELECT n_docs, total_len FROM bm25_stats WHERE lang = %(lang)s),
q AS MATERIALIZED (
    SELECT v.id, v.token, v.df, qt.cnt, d.meta, d.n_blocks, d.xmin::text::bigint AS version,
           EXISTS (SELECT 1 FROM unnest(%(cached)s::int[], %(versions)s::bigint[], %(cached_df)s::int[])
                                 AS c(id, version, df)
                   WHERE c.id = v.id AND c.version = d.xmin::text::bigint AND c.df = v.df) AS hit,
           %(grp)s * ((d.n_blocks - (d.tail_n < %(block)s)::int) / %(grp)s) AS open,  -- bm25blocks.open_from
           row_number() OVER (ORDER BY v.df, v.id) AS rank, count(*) OVER () AS n_tokens
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    JOIN bm25_dir d ON d.token_id = v.id
),
-- which = 0: the first block whose last id >= from; which = 1: the first whose first id >= to
s(id, which, a, b) AS (
    SELECT q.id, w.which, 0, q.n_blocks FROM q CROSS JOIN (VALUES (0), (1)) AS w(which) WHERE NOT q.hit
    UNION ALL
    SELECT s.id, s.which, CASE WHEN m.key < m.target THEN m.mid + 1 ELSE s.a END,
           CASE WHEN m.key < m.target THEN s.b ELSE m.mid END
    FROM s JOIN q ON q.id = s.id
    CROSS JOIN LATERAL (SELECT (s.a + s.b) / 2 AS mid) h
    CROSS JOIN LATERAL (
        SELECT h.mid, ('x' || encode(substr(q.meta, 1 + h.mid * %(rec)s + 8 * (1 - s.which), 8), 'hex'))::bit(64)::bigint AS key,
               CASE s.which WHEN 0 THEN %(from)s::bigint ELSE %(to)s::bigint END AS target) m
    WHERE s.a < s.b
),
r AS MATERIALIZED (  -- (a cached list is not searched: no block of it is read)
    SELECT q.*, CASE WHEN q.hit THEN 0 WHEN x.j0 < x.j1 AND x.j0 < q.open THEN x.j0 / %(grp)s * %(grp)s
                     ELSE x.j0 END AS b0,
           CASE WHEN q.hit THEN 0 WHEN x.j0 >= x.j1 THEN x.j0
                WHEN x.j1 < q.open THEN (x.j1 + %(grp)s - 1) / %(grp)s * %(grp)s ELSE x.j1 END AS b1
    FROM q LEFT JOIN (SELECT id, max(a) FILTER (WHERE which = 0) AS j0, max(a) FILTER (WHERE which = 1) AS j1
                      FROM s WHERE a = b GROUP BY id) x ON x.id = q.id
),
e AS (  -- a cached list counts whole: its slice of the range lies within its first and last ids
    SELECT greatest(%(from)s::bigint, min(x.lo)) AS lo, least(%(to)s::bigint - 1, max(x.hi)) AS hi,
           coalesce(sum(x.n), 0) AS total
    FROM (SELECT ('x' || encode(substr(r.meta, 1 + r.b0 * %(rec)s, 8), 'hex'))::bit(64)::bigint AS lo,
                 ('x' || encode(substr(r.meta, 1 + (r.b1 - 1) * %(rec)s + 8, 8), 'hex'))::bit(64)::bigint AS hi,
                 (r.b1 - r.b0) * %(block)s AS n
          FROM r WHERE r.b1 > r.b0
          UNION ALL
          SELECT ('x' || encode(substr(q.meta, 1, 8), 'hex'))::bit(64)::bigint,
                 ('x' || encode(substr(q.meta, 1 + (q.n_blocks - 1) * %(rec)s + 8, 8), 'hex'))::bit(64)::bigint, q.df
          FROM q WHERE q.hit AND q.n_blocks > 0) x
)
SELECT r.rank, r.n_tokens, c.c, CASE WHEN r.hit THEN 1 ELSE greatest(0, (r.b1 - r.b0 - 1) / %(chunk)s) + 1 END,
       r.df, r.cnt,
       CASE WHEN NOT r.hit THEN substr(r.meta, 1 + (r.b0 + c.c * %(chunk)s) * %(rec)s,
                                       greatest(0, least(%(chunk)s, r.b1 - r.b0 - c.c * %(chunk)s)) * %(rec)s) END,
       st.n_docs, st.total_len, e.lo, e.hi, e.total, b.ids, b.tfdl, r.id, r.version, r.hit, r.token
FROM r CROSS JOIN st CROSS JOIN e
CROSS JOIN LATERAL generate_series(0, CASE WHEN r.hit THEN 0 ELSE greatest(0, (r.b1 - r.b0 - 1) / %(chunk)s) END) AS c(c)
CROSS JOIN LATERAL (
    SELECT coalesce(string_agg(b.ids, ''::bytea ORDER BY b.block_no), ''::bytea) AS ids,
           coalesce(string_agg(b.tfdl, ''::bytea ORDER BY b.block_no), ''::bytea) AS tfdl
    FROM bm25_block b
    WHERE NOT r.hit AND b.token_id = r.id AND b.block_no >= r.b0 + c.c * %(chunk)s
      AND b.block_no < least(r.b1, r.b0 + (c.c + 1) * %(chunk)s)
) b;

-- name: blocks_terms
-- The block preselection's first round trip when not every list is read (MaxScore, below
-- `read_all`), and the batches' read (preselect_many; scoi/selection/preselect.py, docs/preselection.md):
-- the query's tokens known to the index (df, count in the query, block directory), N and
-- the total length, and whole posting lists (each token's blocks concatenated in order,
-- bytea, scoi/core/bm25blocks.py's layout): all of them if the query's tokens have at
-- most %(read_all)s postings, else those of the rarest tokens while their df adds up to
-- at most %(rare)s (the rarest one at least).
WITH st AS (SELECT n_docs, total_len FROM bm25_stats WHERE lang = %(lang)s),
q AS (
    SELECT v.id, v.df, qt.cnt, d.meta, sum(v.df) OVER (ORDER BY v.df, v.id ROWS UNBOUNDED PRECEDING) AS upto,
           sum(v.df) OVER () AS total, row_number() OVER (ORDER BY v.df, v.id) AS rank
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    JOIN bm25_dir d ON d.token_id = v.id
)
SELECT q.id, q.df, q.cnt, q.meta, st.n_docs, st.total_len, b.ids, b.tfdl
FROM q CROSS JOIN st
LEFT JOIN LATERAL (
    SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids, string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
    FROM bm25_block b WHERE b.token_id = q.id
) b ON q.total <= %(read_all)s OR q.upto <= %(rare)s OR q.rank = 1
ORDER BY q.df, q.id;

-- name: vocab_ids_of
-- Index token ids of these (lowercased) tokens.
SELECT token, id FROM vocab WHERE lang = %(lang)s AND token = ANY(%(tokens)s::text[]);

-- name: blocks_read
-- Whole posting lists of these tokens, each token's blocks concatenated in order.
SELECT b.token_id, string_agg(b.ids, ''::bytea ORDER BY b.block_no), string_agg(b.tfdl, ''::bytea ORDER BY b.block_no)
FROM bm25_block b WHERE b.token_id = ANY(%(ids)s::int[])
GROUP BY b.token_id;

-- name: blocks_fetch
-- These blocks (token id, block number; every one exists: the directory named it), each
-- token's concatenated in the order asked. A block is cut from the row that holds it
-- (migration 0022: the last row from its number down); the blocks before it in a row are
-- full, so it starts at offset (number - row's number) blocks.
SELECT u.token_id, string_agg(substr(r.ids, 1 + 4 * %(block)s * (u.block_no - r.block_no), 4 * %(block)s), ''::bytea ORDER BY u.ord),
       string_agg(substr(r.tfdl, 1 + 2 * %(block)s * (u.block_no - r.block_no), 2 * %(block)s), ''::bytea ORDER BY u.ord)
FROM unnest(%(ids)s::int[], %(block_nos)s::int[]) WITH ORDINALITY AS u(token_id, block_no, ord)
CROSS JOIN LATERAL (SELECT b.block_no, b.ids, b.tfdl FROM bm25_block b
                    WHERE b.token_id = u.token_id AND b.block_no <= u.block_no
                    ORDER BY b.block_no DESC LIMIT 1) r
GROUP BY u.token_id;

-- name: blocks_exact
-- Exact BM25 (bm25_scores, forward index) of the sentences `score_ids`, and the pairs of
-- the direction (and corpora) of the sentences `ids` (score NULL for those not in score_ids).
SELECT x.sid, s.score,
       (SELECT array_agg(e.pair_id ORDER BY e.pair_id) FROM example e
        WHERE e.src_id = x.sid AND e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s
          AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
          AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = e.pair_id AND m.meta @> %(meta)s::jsonb))) AS pairs
FROM unnest(%(ids)s::bigint[]) AS x(sid)
LEFT JOIN bm25_scores(%(score_ids)s::bigint[], %(qids)s::int[], %(ws)s::float8[], %(ka)s, %(kc)s) s
       ON s.sentence_id = x.sid;

-- name: blocks_top
-- The block preselection's last round trip when every list was read: the best `n` pairs
-- of the direction (and corpora) of the sentences `ids` (the best ones, with their exact
-- `scores`), by score then pair id, with everything coverage needs about them when
-- `details` (texts, source tokens and polynomial terms: fetch_candidates' columns, so the
-- pair mapping and the candidate fetch are one statement).
-- The pairs are read from `pair` itself, on the side the source language is on
-- (pair_check: a_lang < b_lang), rather than through the `example` view, which probes
-- both sides of every sentence (one probe per sentence saved: ~0.5 ms for 200 at 1M pairs).
WITH s AS (SELECT x.sid, x.score FROM unnest(%(ids)s::bigint[], %(scores)s::float8[]) AS x(sid, score)),
top AS (  -- each sentence's pairs by index (OFFSET 0: never a hash join over all pairs)
    SELECT e.pair_id, s.score, e.src_id, e.tgt_id
    FROM s CROSS JOIN LATERAL (
        SELECT e.pair_id, e.src_id, e.tgt_id FROM (
            SELECT p.id AS pair_id, p.a_id AS src_id, p.b_id AS tgt_id, p.corpus_id, p.meta FROM pair p
            WHERE %(lang)s::text < %(tgt)s::text AND p.a_id = s.sid AND p.a_lang = %(lang)s AND p.b_lang = %(tgt)s
            UNION ALL
            SELECT p.id, p.b_id, p.a_id, p.corpus_id, p.meta FROM pair p
            WHERE %(lang)s::text > %(tgt)s::text AND p.b_id = s.sid AND p.b_lang = %(lang)s AND p.a_lang = %(tgt)s) e
        WHERE (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
          AND (%(meta)s::jsonb IS NULL OR e.meta @> %(meta)s::jsonb)
        OFFSET 0) e
    ORDER BY s.score DESC, e.pair_id
    LIMIT %(n)s
)
SELECT t.pair_id, t.score, src.text, tgt.text, src.tokens, src.term_keys, src.term_mults
FROM top t
LEFT JOIN sentence src ON %(details)s AND src.id = t.src_id
LEFT JOIN sentence tgt ON %(details)s AND tgt.id = t.tgt_id
ORDER BY t.score DESC, t.pair_id;

-- name: fetch_candidates
-- Everything coverage needs about the candidates, in one round trip: texts, the source
-- side's Moses tokens and its polynomial terms (keys with multiplicities).
SELECT e.id AS pair_id, src.text AS src, tgt.text AS tgt, src.tokens, src.term_keys, src.term_mults
FROM unnest(%(pair_ids)s::bigint[]) WITH ORDINALITY AS c(pair_id, ord)
JOIN pair e ON e.id = c.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = %(lang)s THEN e.b_id ELSE e.a_id END
ORDER BY c.ord;

-- name: random_examples
-- Fill examples: a seeded random draw among eligible pairs of the direction (within the
-- ``meta`` filter), one pair per source sentence (its first by the draw), none whose source
-- sentence is that of a pair in ``exclude`` (the picks already made): a source sentence
-- fills one slot at most.
SELECT d.pair_id FROM (
    SELECT DISTINCT ON (e.src_id) e.pair_id, md5(e.pair_id::text || ':' || %(seed)s::text) AS draw
    FROM example e JOIN sentence s ON s.id = e.src_id
    WHERE e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s AND s.eligible
      AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
      AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = e.pair_id AND m.meta @> %(meta)s::jsonb))
      AND e.src_id <> ALL (ARRAY(SELECT x.src_id FROM example x
                                 WHERE x.pair_id = ANY(%(exclude)s::bigint[])
                                   AND x.src_lang = %(lang)s AND x.tgt_lang = %(tgt)s))
    ORDER BY e.src_id, draw
) d
ORDER BY d.draw, d.pair_id
LIMIT %(n)s;

-- name: direction_exists
SELECT count(*) FROM corpus
WHERE (src_lang = %(lang)s AND tgt_lang = %(tgt)s) OR (src_lang = %(tgt)s AND tgt_lang = %(lang)s);

-- name: corpus_ids
SELECT id, name FROM corpus WHERE name = ANY(%(names)s::text[]);

-- name: lang_schemes
-- The analysis schemes of a language's stored sentences: its parser rows (pipeline,
-- version, tree tokens; migration 0007) that at least one sentence uses. One probe of
-- sentence_parser_idx per parser row of the language, whatever the corpus size. The
-- selector refuses to run unless this is exactly one row of the current scheme.
SELECT p.id, p.name, p.version, p.tree_tokens FROM parser p
WHERE p.lang = %(lang)s AND EXISTS (SELECT 1 FROM sentence s WHERE s.parser_id = p.id)
ORDER BY p.id;

-- name: labels_for_lang
-- The label inventory of the parser row the language's sentences use (lang_schemes).
SELECT l.name FROM label l WHERE l.parser_id = %(parser_id)s ORDER BY l.idx;
