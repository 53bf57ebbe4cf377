-- Sentence embeddings for the fuzzy methods (migration 0011; scoi/embeddings.py reads this file).
-- Blocks with {braces} are composed by psycopg.sql with the embedder's id and dimension as
-- literals: the per-embedder HNSW index is a partial expression index, and the planner uses
-- it only when a statement repeats its expression (embedding::vector(dim)) and predicate
-- (embedder_id = id) as constants, not as parameters.

-- name: embedder_get
SELECT id, dim FROM embedder WHERE name = %(name)s;

-- name: embedder_add
-- Register a model (a concurrent run may have done it: the row is then returned as it is).
INSERT INTO embedder (name, dim) VALUES (%(name)s, %(dim)s)
ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
RETURNING id, dim;

-- name: count_missing
-- Sentences (of the given languages; NULL: all) without an embedding by this embedder.
SELECT count(*) FROM sentence s
WHERE (%(langs)s::text[] IS NULL OR s.lang = ANY(%(langs)s::text[]))
  AND NOT EXISTS (SELECT 1 FROM sentence_embedding se
                  WHERE se.sentence_id = s.id AND se.embedder_id = %(embedder_id)s);

-- name: next_missing
-- The next batch of them, in id order after %(after)s (keyset: each batch reads on from the last).
SELECT s.id, s.text FROM sentence s
WHERE s.id > %(after)s
  AND (%(langs)s::text[] IS NULL OR s.lang = ANY(%(langs)s::text[]))
  AND NOT EXISTS (SELECT 1 FROM sentence_embedding se
                  WHERE se.sentence_id = s.id AND se.embedder_id = %(embedder_id)s)
ORDER BY s.id
LIMIT %(n)s;

-- name: insert_embedding
-- One row of a batch (executemany, one transaction per batch). A row another run wrote
-- first is kept: the same model gives the same vector.
INSERT INTO sentence_embedding (sentence_id, embedder_id, embedding)
VALUES (%(sentence_id)s, %(embedder_id)s, %(embedding)s)
ON CONFLICT DO NOTHING;

-- name: create_hnsw
-- The embedder's HNSW index (cosine), a partial expression index at its fixed dimension.
CREATE INDEX IF NOT EXISTS {index} ON sentence_embedding
USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE embedder_id = {embedder_id};

-- name: index_build_progress
-- How far the CREATE INDEX of backend pid has got (pgvector's HNSW reports its phase and
-- the tuples loaded); no row once it is done.
SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index WHERE pid = %(pid)s;

-- name: pool_embeddings
-- The source sides' embeddings of a pool of pairs, in pool order (NULL: not embedded yet).
SELECT se.embedding
FROM unnest(%(pair_ids)s::bigint[]) WITH ORDINALITY AS c(pair_id, ord)
JOIN pair e ON e.id = c.pair_id
LEFT JOIN sentence_embedding se
       ON se.sentence_id = CASE WHEN e.a_lang = %(lang)s THEN e.a_id ELSE e.b_id END
      AND se.embedder_id = %(embedder_id)s
ORDER BY c.ord;

-- name: ann_settings
-- HNSW search for the fuzzy-ann query: ef_search candidates, and iterative scans
-- (pgvector >= 0.8) so the language/direction filter cannot leave fewer than n rows.
SELECT set_config('hnsw.ef_search', %(ef_search)s, false), set_config('hnsw.iterative_scan', 'relaxed_order', false);

-- name: ann
-- fuzzy-ann: the n eligible source sentences of the direction nearest to the query by
-- cosine, by the embedder's HNSW index (approximate), with one pair each (the lowest id).
WITH nn AS MATERIALIZED (
    SELECT se.sentence_id, se.embedding,
           se.embedding::vector({dim}) <=> %(query)s::vector({dim}) AS distance
    FROM sentence_embedding se
    JOIN sentence s ON s.id = se.sentence_id
    WHERE se.embedder_id = {embedder_id} AND s.lang = %(lang)s AND s.eligible
      AND EXISTS (SELECT 1 FROM example ex
                  WHERE ex.src_id = s.id AND ex.src_lang = %(lang)s AND ex.tgt_lang = %(tgt)s
                    AND (%(corpora)s::int[] IS NULL OR ex.corpus_id = ANY(%(corpora)s::int[]))
          AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = ex.pair_id AND m.meta @> %(meta)s::jsonb)))
    ORDER BY se.embedding::vector({dim}) <=> %(query)s::vector({dim})
    LIMIT %(n)s
)
SELECT (SELECT min(ex.pair_id) FROM example ex
        WHERE ex.src_id = nn.sentence_id AND ex.src_lang = %(lang)s AND ex.tgt_lang = %(tgt)s
          AND (%(corpora)s::int[] IS NULL OR ex.corpus_id = ANY(%(corpora)s::int[]))
          AND (%(meta)s::jsonb IS NULL OR EXISTS (SELECT 1 FROM pair m WHERE m.id = ex.pair_id AND m.meta @> %(meta)s::jsonb))) AS pair_id,
       nn.distance, nn.embedding
FROM nn
ORDER BY nn.distance, pair_id;

-- name: explain
-- The plan of a statement (ann_plan: whether fuzzy-ann reads the HNSW index).
EXPLAIN (COSTS OFF) {statement};

-- name: exact_settings
-- Inside a transaction: the ann statement without its index (a scan and a sort: exact
-- cosine top n), the reference HNSW results are compared with.
SELECT set_config('enable_indexscan', 'off', true);
