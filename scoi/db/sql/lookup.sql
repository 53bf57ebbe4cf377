-- Fuzzy lookup (scoi/lookup.py): the pool's source tokens, then what the TM pane shows.

-- name: lookup_tokens
-- The source-side Moses tokens of the pool's pairs, in pool order (nothing else: the
-- match percentage needs only these, and a pool of 500 is fetched for a handful of matches).
SELECT e.id, src.tokens
FROM unnest(%(pair_ids)s::bigint[]) WITH ORDINALITY AS c(pair_id, ord)
JOIN pair e ON e.id = c.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
ORDER BY c.ord;

-- name: lookup_pairs
-- The texts, corpus and metadata of the matches shown (a handful of pairs, by primary key).
SELECT e.id, src.text, tgt.text, c.name, e.meta
FROM pair e
JOIN corpus c ON c.id = e.corpus_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = %(lang)s THEN e.b_id ELSE e.a_id END
WHERE e.id = ANY(%(pair_ids)s::bigint[]);

-- name: lookup_top
-- The block preselection's last round trip for a lookup (in place of blocks_top, same
-- parameters): the best `n` pairs of the direction (and corpora) of the sentences `ids`
-- (exact `scores`) by score then pair id, with the source tokens only (the match percentage needs
-- nothing else; they are the head sentence's own, so no second join through pair). The
-- sentences are mapped in score order and the incremental sort stops after the n-th
-- pair's score group: about n index probes, not one per sentence of the head.
WITH top AS (
    SELECT e.pair_id, s.score, s.sid
    FROM (SELECT x.sid, x.score FROM unnest(%(ids)s::bigint[], %(scores)s::float8[]) AS x(sid, score)
          ORDER BY x.score DESC OFFSET 0) s
    CROSS JOIN LATERAL (  -- each sentence's pairs by index (OFFSET 0: never a hash join over all pairs)
        SELECT e.pair_id FROM example e
        WHERE e.src_id = s.sid AND e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s
          AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
          AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = e.pair_id AND m.meta @> %(meta)s::jsonb))
        OFFSET 0) e
    ORDER BY s.score DESC, e.pair_id
    LIMIT %(n)s
)
SELECT t.pair_id, t.score, src.tokens
FROM top t
JOIN sentence src ON src.id = t.sid
ORDER BY t.score DESC, t.pair_id;

-- name: lookup_lists
-- The count filter's read (scoi/lookup.py, docs/method.md §8): every query token known to
-- the index (id, token, df, count in the query, in the block preselection's (df, id)
-- order) with N and the total length, and the directory and whole posting list of all
-- but the most frequent ones: going from the most frequent down, a token's list is left
-- unread while the query counts of those left unread add up to at most `skip`.
WITH st AS (SELECT n_docs, total_len FROM bm25_stats WHERE lang = %(lang)s),
q AS (
    SELECT v.id, v.token, v.df, qt.cnt,
           sum(qt.cnt) OVER (ORDER BY v.df DESC, v.id DESC ROWS UNBOUNDED PRECEDING) AS upto
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
)
SELECT q.id, q.token, q.df, q.cnt, st.n_docs, st.total_len, d.meta, b.ids, b.tfdl
FROM q CROSS JOIN st
LEFT JOIN LATERAL (SELECT d.meta FROM bm25_dir d WHERE d.token_id = q.id AND q.upto > %(skip)s) d ON true
LEFT JOIN LATERAL (  -- the condition inside: a skipped token's blocks are never scanned
    SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids, string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
    FROM bm25_block b WHERE b.token_id = q.id AND q.upto > %(skip)s
) b ON true
ORDER BY q.df, q.id;

-- name: lookup_sentence_tokens
-- The Moses tokens of the sentences the count filter kept (by primary key).
SELECT s.id, s.tokens FROM sentence s WHERE s.id = ANY(%(ids)s::bigint[]);

-- name: lookup_sentence_pairs
-- The pairs of the direction (and corpora, and metadata filter) of the sentences that
-- reach the lookup's minimum: as blocks_exact maps them (each sentence's pairs by index).
SELECT x.sid, p.pairs
FROM unnest(%(ids)s::bigint[]) AS x(sid)
CROSS JOIN LATERAL (
    SELECT array_agg(e.pair_id ORDER BY e.pair_id) AS pairs FROM example e
    WHERE e.src_id = x.sid AND e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s
      AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
      AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = e.pair_id AND m.meta @> %(meta)s::jsonb))
) p
WHERE p.pairs IS NOT NULL;

-- name: lookup_more_lists
-- The lists lookup_lists left unread (token ids), with their directories, when the
-- count filter kept so many sentences that an exact count is the cheaper way on.
SELECT d.token_id, d.meta, b.ids, b.tfdl
FROM bm25_dir d
CROSS JOIN LATERAL (
    SELECT string_agg(b.ids, ''::bytea ORDER BY b.block_no) AS ids, string_agg(b.tfdl, ''::bytea ORDER BY b.block_no) AS tfdl
    FROM bm25_block b WHERE b.token_id = d.token_id
) b
WHERE d.token_id = ANY(%(ids)s::int[]);
