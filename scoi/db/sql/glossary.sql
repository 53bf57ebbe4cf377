-- Glossaries (migration 0033). Read and written by scoi/glossary.py.

-- name: create_glossary
-- The glossary's id, created if new (adding a file to an existing glossary adds to it).
INSERT INTO glossary (name) VALUES (%(name)s)
ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
RETURNING id;

-- name: insert_entries
-- A file's entries; one already there (same languages and terms) is left as it is.
INSERT INTO glossary_entry (glossary_id, src_lang, tgt_lang, src_term, tgt_term, note,
                            src_key, src_lemmas, tgt_key, tgt_lemmas, meta)
SELECT %(glossary_id)s, %(src_lang)s, %(tgt_lang)s, e.src_term, e.tgt_term, e.note,
       e.src_key, e.src_lemmas, e.tgt_key, e.tgt_lemmas, e.meta
FROM jsonb_to_recordset(%(entries)s::jsonb) AS e(src_term text, tgt_term text, note text, src_key text[],
                                                 src_lemmas text[], tgt_key text[], tgt_lemmas text[], meta jsonb)
ON CONFLICT ON CONSTRAINT glossary_entry_unique DO NOTHING;

-- name: list_glossaries
-- Every glossary with its entry count and language pairs.
SELECT g.name, g.created_at, count(e.id)::int AS entries,
       coalesce(array_agg(DISTINCT e.src_lang || '-' || e.tgt_lang) FILTER (WHERE e.id IS NOT NULL), '{}') AS pairs
FROM glossary g LEFT JOIN glossary_entry e ON e.glossary_id = g.id
GROUP BY g.id ORDER BY g.name;

-- name: glossary_id
SELECT id FROM glossary WHERE name = %(name)s;

-- name: delete_glossary
DELETE FROM glossary WHERE name = %(name)s RETURNING id;

-- name: entries
-- A glossary's entries for one language pair, in the order they were added (the matcher's
-- tie-break).
SELECT src_term, tgt_term, note, src_key, tgt_key, src_lemmas, tgt_lemmas
FROM glossary_entry
WHERE glossary_id = %(glossary_id)s AND src_lang = %(src_lang)s AND tgt_lang = %(tgt_lang)s
ORDER BY id;

-- name: store_term_checks
-- The term checks of done items (the worker, after it stored their outputs).
UPDATE job_item i SET term_check = c.term_check
FROM unnest(%(job_ids)s::bigint[], %(idxs)s::int[], %(checks)s::jsonb[]) AS c(job_id, idx, term_check)
WHERE i.job_id = c.job_id AND i.idx = c.idx;

-- name: job_term_checks
-- The term checks of a job's done items.
SELECT idx, term_check FROM job_item
WHERE job_id = %(job_id)s AND term_check IS NOT NULL
ORDER BY idx;
