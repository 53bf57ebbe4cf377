-- Translation-memory reuse: exact matches of job items' sources (scoi/reuse.py, docs/jobs.md).

-- name: exact_matches
-- For each key (exact_sha of a normalised source, scoi.core.exact), the newest pair (largest
-- pair id: the last ingested) of the direction, of the corpora (names; NULL: all) and whose
-- metadata contains `meta` (NULL: any), whose source side matches exactly, with its target
-- text. A stored text already normalised is found by its text_sha (the unique index); the
-- others through sentence_exact_idx (migration 0031), which holds only them. Each matching
-- sentence's pair is found by index in a LATERAL subquery: the planner has no statistics
-- for the partial index and expects thousands of matches, and would otherwise join them
-- to every pair (measured: 0.5 s at 200k pairs, against a millisecond).
WITH q AS (SELECT DISTINCT sha FROM unnest(%(shas)s::bytea[]) AS q(sha)),
src AS MATERIALIZED (
    SELECT q.sha, s.id FROM q JOIN sentence s ON s.lang = %(lang)s AND s.text_sha = q.sha
    UNION
    SELECT q.sha, s.id FROM q JOIN sentence s
        ON s.lang = %(lang)s AND exact_sha(s.text) = q.sha AND exact_changes(s.text)
)
SELECT DISTINCT ON (src.sha) src.sha, m.pair_id, m.text
FROM src
CROSS JOIN LATERAL (
    SELECT e.pair_id, t.text
    FROM example e JOIN sentence t ON t.id = e.tgt_id
    WHERE e.src_id = src.id AND e.src_lang = %(lang)s AND e.tgt_lang = %(tgt)s
      AND (%(corpora)s::text[] IS NULL
           OR e.corpus_id IN (SELECT c.id FROM corpus c WHERE c.name = ANY(%(corpora)s::text[])))
      AND (%(meta)s::jsonb IS NULL
           OR EXISTS (SELECT 1 FROM pair x WHERE x.id = e.pair_id AND x.meta @> %(meta)s::jsonb))
    ORDER BY e.pair_id DESC
    LIMIT 1
) m
ORDER BY src.sha, m.pair_id DESC;
