-- Jobs over CAT-tool files (migration 0032): the stored XLIFF/PO file and the outputs that
-- fill it. Read by scoi/jobs/documents.py.

-- name: insert_document
INSERT INTO job_document (job_id, format, name, content)
VALUES (%(job_id)s, %(format)s, %(name)s, %(content)s);

-- name: upsert_document
-- A schedule's run: the file as read this time replaces the stored one (exports fill it).
INSERT INTO job_document (job_id, format, name, content)
VALUES (%(job_id)s, %(format)s, %(name)s, %(content)s)
ON CONFLICT (job_id) DO UPDATE SET format = excluded.format, name = excluded.name, content = excluded.content,
                                   created_at = now();

-- name: document_of_job
SELECT d.format, d.name, d.content, j.tgt_lang
FROM job_document d JOIN job j ON j.id = d.job_id
WHERE d.job_id = %(job_id)s;

-- name: document_outputs
-- The done items' answers (placeholders in them) by segment key, with their QA flags and
-- the masked source they answer (a writer skips a segment whose source has changed since).
SELECT source_key, output, qa, masked FROM job_item
WHERE job_id = %(job_id)s AND status = 'done' AND output IS NOT NULL AND output <> '' AND source_key IS NOT NULL
ORDER BY idx;
