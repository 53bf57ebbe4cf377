-- Selection: BM25-like preselection, candidate fetch, recording. See docs/preselection.md.

-- name: preselect
-- Top-n pairs for the query's lowercased Moses tokens, BM25 (Lucene variant, k1, b) over
-- the eligible source sentences of the language, ordered by score then pair id.
-- Exact BM25 would read every posting of every query token; common tokens ("de", ".")
-- have postings in a large share of all sentences. So:
--   1. essential tokens: the query's rarest tokens, taken in df order while their
--      postings add up to at most %(budget)s (always at least the rarest one);
--   2. partial scores from the essential tokens' postings, keep the best %(depth)s
--      sentences;
--   3. add the exact contribution of the remaining (common) tokens for those sentences
--      only, by primary-key probes, and rank by the full BM25 score.
-- idf and avgdl are computed here from vocab.df and bm25_stats, which ingest keeps
-- exact in the same transaction as the postings: scores never go stale.
-- Scores are rounded to 1e-9 before ranking: two sentences with equal contributions may
-- be summed in a different order (last-ulp differences), and must still tie (then pair
-- id decides), whatever the plan.
WITH stats AS (
    SELECT n_docs, total_len::float8 / greatest(n_docs, 1) AS avgdl
    FROM bm25_stats WHERE lang = %(lang)s
),
q AS (
    SELECT v.id, v.df,
           ln(1 + (st.n_docs - v.df + 0.5::float8) / (v.df + 0.5::float8)) * qt.cnt AS w
    FROM (SELECT tok, count(*) AS cnt FROM unnest(%(tokens)s::text[]) AS tok GROUP BY tok) qt
    JOIN vocab v ON v.lang = %(lang)s AND v.token = qt.tok AND v.df > 0
    CROSS JOIN stats st
),
ranked AS (
    SELECT id, w, (row_number() OVER (ORDER BY df, id) = 1
                   OR sum(df) OVER (ORDER BY df, id) <= %(budget)s) AS essential
    FROM q
),
partial AS (
    SELECT p.sentence_id,
           sum(r.w * p.tf / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / st.avgdl))) AS score
    FROM ranked r
    JOIN posting p ON p.token_id = r.id
    CROSS JOIN stats st
    WHERE r.essential
      -- with --corpus, keep only sentences of those corpora *before* the depth cut, or
      -- other corpora's sentences fill the depth and the pool comes back short
      AND (%(corpora)s::int[] IS NULL
           OR EXISTS (SELECT 1 FROM pair e WHERE e.a_id = p.sentence_id AND e.a_lang = %(lang)s
                        AND e.b_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[]))
           OR EXISTS (SELECT 1 FROM pair e WHERE e.b_id = p.sentence_id AND e.b_lang = %(lang)s
                        AND e.a_lang = %(tgt)s AND e.corpus_id = ANY(%(corpora)s::int[])))
    GROUP BY p.sentence_id
    ORDER BY score DESC, p.sentence_id
    LIMIT %(depth)s
),
scored AS (  -- add the exact contribution of the common tokens, kept sentences only
    SELECT pa.sentence_id,
           pa.score + coalesce((
               SELECT sum(r.w * p.tf / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / st.avgdl)))
               FROM ranked r
               JOIN posting p ON p.token_id = r.id AND p.sentence_id = pa.sentence_id
               WHERE NOT r.essential), 0) AS score
    FROM partial pa CROSS JOIN stats st
)
SELECT e.pair_id, round(s.score::numeric, 9)::float8 AS score
FROM scored s
CROSS JOIN LATERAL (  -- the pairs in the requested direction using this sentence
    SELECT id AS pair_id, corpus_id FROM pair
    WHERE a_id = s.sentence_id AND a_lang = %(lang)s AND b_lang = %(tgt)s
    UNION ALL
    SELECT id, corpus_id FROM pair
    WHERE b_id = s.sentence_id AND b_lang = %(lang)s AND a_lang = %(tgt)s
) e
WHERE %(corpora)s::int[] IS NULL OR e.corpus_id = ANY(%(corpora)s::int[])
ORDER BY 2 DESC, e.pair_id
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

-- name: labels_for_lang
-- The label inventory of the parser that parsed most sentences of the language.
SELECT l.name FROM label l
WHERE l.parser_id = (SELECT parser_id FROM sentence WHERE lang = %(lang)s
                     GROUP BY parser_id ORDER BY count(*) DESC LIMIT 1)
ORDER BY l.idx;

-- name: insert_selection
INSERT INTO selection (query, src_lang, tgt_lang, method, k, params, signature, query_tokens)
VALUES (%(query)s, %(src)s, %(tgt)s, %(method)s, %(k)s, %(params)s, %(signature)s, %(tokens)s)
RETURNING id;
