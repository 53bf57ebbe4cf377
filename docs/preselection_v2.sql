-- Candidate next preselection query (not used yet): see docs/preselection.md, "Next".
-- Needs posting.sig bit(256) and a bm25_doc forward table (below in that doc).

-- name: preselect
-- params: {"budget": 5000, "budget_frac": 0.03, "depth": 400}
-- Top-n pairs for the query's lowercased Moses tokens, exact BM25 (Lucene, k1, b) over the
-- eligible source sentences of the language, ordered by score then pair id.
--   1. Read postings of the query's rarest tokens, in df order, while they fit in the budget
--      (greatest(budget, budget_frac * N) postings); the first token that does not fit is
--      read in part (its first postings in sentence order) with what is left.
--   2. Rank the sentences met by: exact partial score of the tokens read in full
--      + an estimate of the other tokens from the sentence's 256-bit signature
--      (bit hashint4(token_id) & 255 set for each of its tokens, stored in every posting
--      row of the sentence): f(dl) x sum of the class weights of the query tokens whose
--      bit is set (three weight classes, mean idf of the class, tf taken as 1).
--      Keep the best `depth`.
--   3. Exact BM25 of those from their forward-index rows (bm25_doc), then map to pairs
--      lazily in score order (ties at the boundary resolved by pair id).
-- idf and avgdl are computed here from vocab.df and bm25_stats; signatures and forward
-- rows depend on the sentence only (written once at insert): nothing drifts.
-- Approximate part: which sentences are considered (1) and kept (2); scores are exact.
-- Budget 10**9 and depth 10**9 make the query exact.

WITH stats AS (
    SELECT n_docs, total_len::float8 / greatest(n_docs, 1) AS avgdl,
           greatest(%(budget)s, %(budget_frac)s * n_docs) AS budget,
           -- K(dl) = k1 (1 - b + b dl / avgdl) = ka + kc dl
           %(k1)s * (1 - %(b)s) AS ka, %(k1)s * %(b)s * greatest(n_docs, 1) / greatest(total_len, 1)::float8 AS kc
    FROM bm25_stats WHERE lang = %(lang)s
),
q AS (
    SELECT v.id, v.df,
           ln(1 + (st.n_docs - v.df + 0.5::float8) / (v.df + 0.5::float8)) * qt.cnt AS w
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    CROSS JOIN stats st
),
ranked AS (  -- rarest tokens first; each reads what is left of the budget (the last one partly)
    SELECT r.*, least(r.df, st.budget - r.before)::bigint AS cap,
           CASE WHEN r.df <= st.budget - r.before THEN r.w ELSE 0 END AS wfull
    FROM (SELECT id, df, w, coalesce(sum(df) OVER (ORDER BY df, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
                 '1'::bit(256) >> (hashint4(id) & 255) AS bit
          FROM q) r CROSS JOIN stats st
),
k AS MATERIALIZED (  -- signature masks of the tokens not read in full, in three weight classes
    SELECT coalesce(bit_or(bit) FILTER (WHERE c = 0), 0::bit(256)) AS m0,
           coalesce(avg(w) FILTER (WHERE c = 0), 0) AS w0,
           coalesce(bit_or(bit) FILTER (WHERE c = 1), 0::bit(256)) AS m1,
           coalesce(avg(w) FILTER (WHERE c = 1), 0) AS w1,
           coalesce(bit_or(bit) FILTER (WHERE c = 2), 0::bit(256)) AS m2,
           coalesce(avg(w) FILTER (WHERE c = 2), 0) AS w2
    FROM (SELECT *, width_bucket(w, '{1.0,2.0}'::float8[]) AS c FROM ranked WHERE cap < df) x
),
partial AS (  -- exact partial score of the tokens read + signature estimate of the others
    SELECT p.sentence_id
    FROM ranked r
    CROSS JOIN k CROSS JOIN stats st
    CROSS JOIN LATERAL (
        SELECT p.sentence_id,
               r.wfull * p.tf / (p.tf + st.ka + st.kc * p.dl) AS s,
               (k.w0 * bit_count(p.sig & k.m0) + k.w1 * bit_count(p.sig & k.m1) + k.w2 * bit_count(p.sig & k.m2))
               / (1 + st.ka + st.kc * p.dl) AS est
        FROM posting_sb256 p WHERE p.token_id = r.id ORDER BY p.sentence_id LIMIT r.cap) p
    WHERE r.cap > 0
      -- with --corpus, keep only sentences of those corpora *before* the depth cut
      AND (%(corpora)s::int[] IS NULL
           OR EXISTS (SELECT 1 FROM pair e WHERE e.a_id = p.sentence_id AND e.a_lang = %(lang)s
                        AND e.b_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[]))
           OR EXISTS (SELECT 1 FROM pair e WHERE e.b_id = p.sentence_id AND e.b_lang = %(lang)s
                        AND e.a_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[])))
    GROUP BY p.sentence_id
    -- (the token read in part counts through the signature only, for all sentences alike)
    ORDER BY sum(p.s) + max(p.est) DESC, p.sentence_id
    LIMIT %(depth)s
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
firstn AS MATERIALIZED (  -- pairs of the best sentences, mapped lazily in score order until n
    SELECT e.pair_id, s.score
    FROM (SELECT * FROM scored ORDER BY score DESC OFFSET 0) s
    CROSS JOIN LATERAL (
        SELECT id AS pair_id, corpus_id FROM pair
        WHERE a_id = s.sentence_id AND a_lang = %(lang)s AND b_lang = %(tgt)s
        UNION ALL
        SELECT id, corpus_id FROM pair
        WHERE b_id = s.sentence_id AND b_lang = %(lang)s AND a_lang = %(tgt)s
    ) e
    WHERE %(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[])
    LIMIT %(n)s
),
ties AS (  -- sentences tied with the last one taken: their pairs compete on pair id
    SELECT e.pair_id, s.score
    FROM scored s
    CROSS JOIN LATERAL (
        SELECT id AS pair_id, corpus_id FROM pair
        WHERE a_id = s.sentence_id AND a_lang = %(lang)s AND b_lang = %(tgt)s
        UNION ALL
        SELECT id, corpus_id FROM pair
        WHERE b_id = s.sentence_id AND b_lang = %(lang)s AND a_lang = %(tgt)s
    ) e
    WHERE s.score = (SELECT min(score) FROM firstn)
      AND (%(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[]))
)
SELECT pair_id, score FROM (SELECT * FROM firstn UNION SELECT * FROM ties) x
ORDER BY score DESC, pair_id
LIMIT %(n)s;


-- ===== explored variants (kept for try_v2.py) =====
