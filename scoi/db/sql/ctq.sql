-- CTQ Scorer models trained inside scoi (migration 0037; scoi.ctq): training tuples,
-- fitted regressors, and the one-shot example a training job's item holds.

-- name: insert_model
INSERT INTO ctq_model (name, src_lang, tgt_lang, llm, metric, pool, features, omitted, embedder, job_id, dev_hash)
VALUES (%(name)s, %(src)s, %(tgt)s, %(llm)s, %(metric)s, %(pool)s, %(features)s, %(omitted)s, %(embedder)s,
        %(job_id)s, %(dev_hash)s)
RETURNING id;

-- name: copy_train_items
-- A training job's tuples, in one COPY with its items (a 1,000-sentence development set
-- with pools of 100 is 100,000 rows).
COPY ctq_train_item (job_id, idx, dev_idx, pair_id, features) FROM STDIN;

-- name: model_by_name
SELECT id, name, src_lang, tgt_lang, llm, metric, pool, features, omitted, embedder, job_id, dev_hash, status,
       model, regressor, n_rows, signature, created_at, fitted_at
FROM ctq_model WHERE name = %(name)s;

-- name: newest_model
-- The model `--method ctq` uses without --ctq-model: the direction's last fitted one.
SELECT id, name, src_lang, tgt_lang, llm, metric, pool, features, omitted, embedder, job_id, dev_hash, status,
       model, regressor, n_rows, signature, created_at, fitted_at
FROM ctq_model WHERE src_lang = %(src)s AND tgt_lang = %(tgt)s AND status = 'fitted'
ORDER BY fitted_at DESC, id DESC LIMIT 1;

-- name: list_models
SELECT name, src_lang, tgt_lang, llm, metric, pool, features, omitted, embedder, job_id, status, n_rows, signature,
       regressor, created_at, fitted_at
FROM ctq_model ORDER BY id;

-- name: one_shot_example
-- A training item's one example (the candidate pair fixed at submit), in the job's direction.
SELECT src.text AS src, tgt.text AS tgt
FROM ctq_train_item t
JOIN job j ON j.id = t.job_id
JOIN pair e ON e.id = t.pair_id
JOIN sentence src ON src.id = CASE WHEN e.a_lang = j.src_lang THEN e.a_id ELSE e.b_id END
JOIN sentence tgt ON tgt.id = CASE WHEN e.a_lang = j.src_lang THEN e.b_id ELSE e.a_id END
WHERE t.job_id = %(job_id)s AND t.idx = %(idx)s;

-- name: train_rows
-- Every training tuple of a job with its item's state, output and reference, in item order.
SELECT t.idx, t.dev_idx, t.pair_id, t.features, i.status, i.source, i.output, i.reference
FROM ctq_train_item t JOIN job_item i ON i.job_id = t.job_id AND i.idx = t.idx
WHERE t.job_id = %(job_id)s
ORDER BY t.idx;

-- name: set_fitted
UPDATE ctq_model SET status = 'fitted', model = %(model)s, regressor = %(regressor)s, n_rows = %(n_rows)s,
                     signature = %(signature)s, fitted_at = now()
WHERE id = %(id)s AND status = 'translating';
