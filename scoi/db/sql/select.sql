-- Selection: BM25-like preselection, candidate fetch, recording. See docs/preselection.md.

-- name: preselect
-- Top-n pairs for the query's lowercased Moses tokens by BM25 (Lucene variant, k1, b) over
-- the eligible source sentences of the language, ordered by score then pair id.
-- Exact BM25 would read every posting of every query token, and common tokens ("de",
-- ".") have postings in a large share of all sentences. So (docs/preselection.md):
--   1. read the postings of the query's rarest tokens, in df order, while they fit in
--      the budget, greatest(%(budget)s, %(budget_frac)s x N) postings; the first token that
--      does not fit is read in part (its first postings in sentence order);
--   2. rank the sentences met by the exact partial score of the tokens read in full plus
--      an estimate of the other tokens from the sentence's 256-bit token signature
--      (stored in each posting row): f(dl) x the summed weights of the query tokens whose
--      bit is set, in three weight classes (mean weight of the class, tf taken as 1);
--      keep the best greatest(%(depth)s, %(depth_frac)s x N);
--   3. give those their exact BM25 score from their forward-index rows (bm25_doc) and map
--      them to pairs of the direction in score order until n pairs, with every pair tied
--      with the n-th (pair id breaks ties).
-- idf and avgdl are computed here from vocab.df and bm25_stats, which ingest keeps exact
-- in the same transaction as the postings; signatures and forward rows depend on the
-- sentence alone. Nothing goes stale as corpora are added. What is approximate is which
-- sentences reach step 3; the scores returned are exact. Budget and depth of 10^9 make
-- the whole query exact.
-- Scores are rounded to 1e-9 before ranking: equal contributions summed in another order
-- (last-ulp differences) must still tie, whatever the plan.
WITH stats AS (
    SELECT n_docs, total_len::float8 / greatest(n_docs, 1) AS avgdl,
           greatest(%(budget)s, %(budget_frac)s * n_docs) AS budget,
           greatest(%(depth)s, ceil(%(depth_frac)s * n_docs))::bigint AS depth,
           -- the BM25 length norm K(dl) = k1 (1 - b + b dl / avgdl) = ka + kc dl
           %(k1)s * (1 - %(b)s) AS ka,
           %(k1)s * %(b)s * greatest(n_docs, 1) / greatest(total_len, 1)::float8 AS kc
    FROM bm25_stats WHERE lang = %(lang)s
),
q AS (  -- the query's tokens known to the index, weight w = idf x count in the query
    SELECT v.id, v.df,
           ln(1 + (st.n_docs - v.df + 0.5::float8) / (v.df + 0.5::float8)) * qt.cnt AS w
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    CROSS JOIN stats st
),
ranked AS (  -- rarest first; each token reads what is left of the budget (the last one in part)
    SELECT r.id, r.df, r.w, least(r.df, st.budget - r.before)::bigint AS cap,
           CASE WHEN r.df <= st.budget - r.before THEN r.w ELSE 0 END AS wfull
    FROM (SELECT id, df, w,
                 coalesce(sum(df) OVER (ORDER BY df, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
          FROM q) r
    CROSS JOIN stats st
),
k AS MATERIALIZED (  -- signature masks of the tokens not read in full, by weight class
    SELECT coalesce(bit_or(bit) FILTER (WHERE c = 0), 0::bit(256)) AS m0,
           coalesce(avg(w) FILTER (WHERE c = 0), 0) AS w0,
           coalesce(bit_or(bit) FILTER (WHERE c = 1), 0::bit(256)) AS m1,
           coalesce(avg(w) FILTER (WHERE c = 1), 0) AS w1,
           coalesce(bit_or(bit) FILTER (WHERE c = 2), 0::bit(256)) AS m2,
           coalesce(avg(w) FILTER (WHERE c = 2), 0) AS w2
    FROM (SELECT w, bm25_token_bit(id) AS bit, width_bucket(w, '{1.0,2.0}'::float8[]) AS c
          FROM ranked WHERE cap < df) x
),
partial AS (  -- exact score of the tokens read + signature estimate of the others
    SELECT p.sentence_id
    FROM ranked r
    CROSS JOIN k CROSS JOIN stats st
    CROSS JOIN LATERAL (
        SELECT p.sentence_id,
               r.wfull * p.tf / (p.tf + st.ka + st.kc * p.dl) AS s,
               (k.w0 * bit_count(p.sig & k.m0) + k.w1 * bit_count(p.sig & k.m1)
                + k.w2 * bit_count(p.sig & k.m2)) / (1 + st.ka + st.kc * p.dl) AS est
        FROM posting p WHERE p.token_id = r.id ORDER BY p.sentence_id LIMIT r.cap) p
    WHERE r.cap > 0
      -- with --corpus, keep only sentences of those corpora *before* the depth cut, or
      -- other corpora's sentences fill the depth and the pool comes back short
      AND (%(corpora)s::int[] IS NULL
           OR EXISTS (SELECT 1 FROM pair e WHERE e.a_id = p.sentence_id AND e.a_lang = %(lang)s
                        AND e.b_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[]))
           OR EXISTS (SELECT 1 FROM pair e WHERE e.b_id = p.sentence_id AND e.b_lang = %(lang)s
                        AND e.a_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[])))
    GROUP BY p.sentence_id
    -- (the token read in part counts through the signature only, for all sentences alike)
    ORDER BY sum(p.s) + max(p.est) DESC, p.sentence_id
    LIMIT (SELECT depth FROM stats)
),
scored AS (  -- exact BM25 of the kept sentences from their forward-index rows
    SELECT d.sentence_id,
           round(sum(q.w * u.tf / (u.tf + %(k1)s * (1 - %(b)s + %(b)s * d.dl / st.avgdl)))::numeric, 9)::float8 AS score
    FROM partial pa
    JOIN bm25_doc d ON d.sentence_id = pa.sentence_id
    CROSS JOIN LATERAL unnest(d.token_ids, d.tfs) AS u(tid, tf)
    JOIN q ON q.id = u.tid
    CROSS JOIN stats st
    GROUP BY d.sentence_id
),
ranked_pairs AS (  -- pairs of the best sentences in score order, until n (and the pairs tied with the n-th)
    SELECT e.pair_id, s.score
    FROM (SELECT * FROM scored ORDER BY score DESC OFFSET 0) s
    CROSS JOIN LATERAL (  -- a nested loop in score order: stops as soon as n pairs are found
        SELECT id AS pair_id, corpus_id FROM pair
        WHERE a_id = s.sentence_id AND a_lang = %(lang)s AND b_lang = %(tgt)s
        UNION ALL
        SELECT id, corpus_id FROM pair
        WHERE b_id = s.sentence_id AND b_lang = %(lang)s AND a_lang = %(tgt)s
    ) e
    WHERE %(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[])
    ORDER BY s.score DESC
    FETCH FIRST %(n)s ROWS WITH TIES
)
SELECT pair_id, score FROM ranked_pairs
ORDER BY score DESC, pair_id
LIMIT %(n)s;

-- name: fetch_candidates
-- Everything coverage needs about the candidates, in one round trip: texts, the source
-- side's Moses tokens and its polynomial terms (keys with multiplicities).
SELECT e.id AS pair_id, src.text AS src, tgt.text AS tgt, src.tokens, src.term_keys, src.term_mults
FROM unnest(%(pair_ids)s::bigint[]) WITH ORDINALITY AS c(pair_id, ord)
JOIN pair e ON e.id = c.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = %(lang)s THEN e.b_id ELSE e.a_id END
ORDER BY c.ord;

-- name: preselect_fetch
-- What `Selector.select` runs: the preselection above and the candidate fetch below in
-- one round trip (measured: a tenth less time than two statements). The selector puts
-- the `preselect` statement in place of the braces; `scoi select --sql` prints the result.
WITH pool AS MATERIALIZED ({preselect})
SELECT e.id AS pair_id, pool.score, src.text AS src, tgt.text AS tgt, src.tokens, src.term_keys, src.term_mults
FROM pool
JOIN pair e ON e.id = pool.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = %(lang)s THEN e.b_id ELSE e.a_id END
ORDER BY pool.score DESC, pool.pair_id;

-- name: random_examples
-- Fill examples: a seeded random draw among eligible pairs of the direction.
SELECT e.pair_id
FROM example e JOIN sentence s ON s.id = e.src_id
WHERE e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s AND s.eligible
  AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
  AND NOT (e.pair_id = ANY(%(exclude)s::bigint[]))
ORDER BY md5(e.pair_id::text || ':' || %(seed)s::text)
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

-- name: insert_selection
INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, query_tokens)
VALUES (%(query)s, %(src)s, %(tgt)s, %(method)s, %(k)s, %(params)s, %(signature)s, %(tokens)s)
RETURNING id;
