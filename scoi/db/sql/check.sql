-- Integrity checks of the stored corpus (`scoi db check`, scoi.db.check, the tests'
-- assert_consistent). Each statement counts the rows that break one invariant: 0 = holds.
-- Set-based: each reads its tables once (grouped aggregates joined, anti-joins), never a
-- subquery per row over another table (one over the retired posting table never finished
-- at 42k pairs).
-- The first comment line of a check is its description. Since migration 0005 `pair` and
-- `sentence` have no foreign keys (docs/schema.md, "Writes"), and `sentence_term` never
-- had any: the reference checks here are what stands in for them.
-- Checks that read the same big table are fused: such a check's block holds only its
-- description, and one `pass_*` statement (`-- checks:` lists them) computes them all in
-- one read of the table, one column per check, named after it. One pass, pass_index, is
-- no statement: the posting blocks and forward rows (13.5M postings at 1M pairs) are
-- decoded and compared in Python (scoi/db/check.py, index_pass; its statements are in
-- check_index.sql). The passes run first, in this file's order (the longest first), then
-- the other checks.
-- Not checkable in SQL: sum(term_mults) = the tree's tokens + 1 (the tree's tokens are not
-- stored; the tests re-tokenize to check it).

-- name: duplicate_pairs
-- duplicate pairs
-- Grouped (a hash) rather than count(DISTINCT), which sorts: 4.6 s -> 2.3 s at 1M pairs.
SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM pair GROUP BY a_id, b_id) g;

-- name: duplicate_sentences
-- duplicate sentences
SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM sentence GROUP BY lang, text) g;

-- name: pair_sentences
-- pairs whose sentences are missing or in another language
SELECT count(*) FROM pair p
WHERE NOT EXISTS (SELECT 1 FROM sentence s WHERE s.id = p.a_id AND s.lang = p.a_lang)
   OR NOT EXISTS (SELECT 1 FROM sentence s WHERE s.id = p.b_id AND s.lang = p.b_lang);

-- name: pair_ingest_run
-- pairs without their ingest run
SELECT count(*) FROM pair p WHERE NOT EXISTS (
    SELECT 1 FROM ingest_run r WHERE r.id = p.run_id AND r.corpus_id = p.corpus_id);

-- name: sentence_parser
-- sentences without a parser of their language
SELECT count(*) FROM sentence s
WHERE NOT EXISTS (SELECT 1 FROM parser p WHERE p.id = s.parser_id AND p.lang = s.lang);

-- name: sentence_term_arrays
-- sentences whose sentence_term rows are not their term_keys/term_mults
-- Both sides as (keys, mults) sorted by (key, mult), byte order: the same multiset gives the
-- same arrays (no text built per term, no collation-aware sort). Ingest stores the arrays in
-- that order, so the stored arrays are compared first and sorted only when they differ. A
-- sentence without sentence_term rows breaks it exactly when its arrays are not empty (no
-- sort needed: at 1M pairs of sentences stored without terms that saves most of its time).
SELECT count(*) FROM sentence s
LEFT JOIN (SELECT st.sentence_id, array_agg(t.key ORDER BY t.key COLLATE "C", st.mult) AS keys,
                  array_agg(st.mult ORDER BY t.key COLLATE "C", st.mult) AS mults
           FROM sentence_term st JOIN term t ON t.id = st.term_id GROUP BY st.sentence_id) x
       ON x.sentence_id = s.id
WHERE CASE WHEN x.sentence_id IS NULL THEN cardinality(s.term_keys) > 0 OR cardinality(s.term_mults) > 0
      ELSE (x.keys, x.mults) IS DISTINCT FROM (s.term_keys, s.term_mults)
           AND (x.keys, x.mults) IS DISTINCT FROM
               (SELECT (array_agg(u.k ORDER BY u.k COLLATE "C", u.m), array_agg(u.m ORDER BY u.k COLLATE "C", u.m))
                FROM unnest(s.term_keys, s.term_mults) AS u(k, m)) END;

-- name: sentence_root_term
-- sentences without the virtual root term once (or, stored without trees, with terms)
-- The first ROOT's mult read directly settles the usual case; only a sentence where it is
-- not 1 is unnested to look for another ROOT.
SELECT count(*) FROM sentence s JOIN parser p ON p.id = s.parser_id
WHERE CASE WHEN p.tree_tokens = 'none' THEN cardinality(s.term_keys) > 0
      WHEN s.term_mults[array_position(s.term_keys, 'ROOT')] = 1 THEN false
      ELSE NOT EXISTS (SELECT 1 FROM unnest(s.term_keys, s.term_mults) AS u(k, m) WHERE u.k = 'ROOT' AND u.m = 1)
      END;

-- name: sentence_n_tokens
-- n_tokens <> cardinality(tokens)
SELECT count(*) FROM sentence WHERE n_tokens <> cardinality(tokens);

-- name: sentence_eligible
-- eligible flag wrong
SELECT count(*) FROM sentence WHERE eligible <> (n_tokens <= 120);

-- name: sentence_term_sentence
-- sentence_term rows without sentence
SELECT count(*) FROM sentence_term st
WHERE NOT EXISTS (SELECT 1 FROM sentence s WHERE s.id = st.sentence_id);

-- name: sentence_term_term
-- sentence_term rows without term
SELECT count(*) FROM sentence_term st WHERE NOT EXISTS (SELECT 1 FROM term t WHERE t.id = st.term_id);

-- name: sentence_term_parser
-- sentence_term rows with another parser's term
SELECT count(*) FROM sentence_term st JOIN sentence s ON s.id = st.sentence_id
JOIN term t ON t.id = st.term_id WHERE t.parser_id <> s.parser_id;

-- name: bm25_stats
-- bm25_stats n_docs/total_len wrong
SELECT count(*) FROM (
    SELECT lang, count(*) AS n, sum(n_tokens) AS len FROM sentence WHERE eligible GROUP BY lang) e
FULL JOIN bm25_stats b USING (lang)
WHERE b.n_docs IS DISTINCT FROM e.n OR b.total_len IS DISTINCT FROM e.len;

-- name: bm25_dirs
-- block directories (migration 0016) whose block count, last block size or length differ from the blocks
SELECT count(*) FROM bm25_dir d
FULL JOIN (SELECT token_id, count(*) AS n, (array_agg(length(tfdl) / 2 ORDER BY block_no DESC))[1] AS tail
           FROM bm25_block_unpacked GROUP BY token_id) b USING (token_id)
WHERE (d.n_blocks, d.tail_n, length(d.meta)) IS DISTINCT FROM (b.n, b.tail, b.n * 26);

-- name: sentence_pair
-- sentences in no pair
SELECT count(*) FROM sentence s
WHERE NOT EXISTS (SELECT 1 FROM pair p WHERE p.a_id = s.id OR p.b_id = s.id);

-- name: one_scheme_per_language
-- languages whose sentences use more than one analysis scheme (selection refuses them until `scoi reanalyze`)
SELECT count(*) FROM (
    SELECT p.lang FROM parser p WHERE EXISTS (SELECT 1 FROM sentence s WHERE s.parser_id = p.id)
    GROUP BY p.lang HAVING count(*) > 1) x;

-- name: bm25_doc_eligible
-- eligible sentences without a forward row (bm25_doc), forward rows of no sentence or of an ineligible one


-- name: bm25_doc_dl
-- forward rows whose dl is not their sentence's n_tokens


-- name: bm25_blocks
-- tokens whose posting blocks are malformed (block numbers, groups of 8, sizes, ids ascending, tf and dl)
-- Malformed: rows not numbered 0.. without gaps, a row of several blocks not a full group
-- of 8 from a multiple of 8, a block but the last not full, ids not 4 bytes a posting,
-- sentence ids not ascending, tf < 1 or dl < tf.


-- name: bm25_dir_records
-- tokens whose directory records (migration 0016) are not their blocks' first and last id, size and (tf, dl) extremes


-- name: bm25_doc_postings
-- tokens whose postings in the blocks are not those of the forward rows (migration 0034)


-- name: bm25_doc_tfs
-- forward rows whose token ids are not distinct and ascending, or whose tf are not >= 1 summing to dl


-- name: bm25_doc_lang
-- forward rows holding a token of another language's vocab


-- name: vocab_df
-- vocab df <> the token's postings in the blocks


-- name: index_vocab
-- tokens of the index (blocks or forward rows) without a vocab row


-- name: pass_index
-- the posting blocks with their directories, token by token, and the forward rows, a
-- chunk of sentences at a time, decoded and compared in Python (no statement: scoi/db/check.py
-- runs check_index.sql's, scoi/core/blockcheck.py compares)
-- checks: bm25_blocks, bm25_dir_records, bm25_doc_postings, bm25_doc_tfs, bm25_doc_lang, vocab_df, index_vocab

-- name: pass_forward_rows
-- every forward row beside its sentence (one hash join)
-- checks: bm25_doc_eligible, bm25_doc_dl
SELECT count(*) FILTER (WHERE s.id IS NULL OR s.eligible <> (d.sentence_id IS NOT NULL)) AS bm25_doc_eligible,
       count(*) FILTER (WHERE d.dl <> s.n_tokens) AS bm25_doc_dl
FROM sentence s
FULL JOIN bm25_doc d ON d.sentence_id = s.id;
