-- Integrity checks of the stored corpus (`scoi db check`, scoi.db.check, the tests'
-- assert_consistent). Each statement counts the rows that break one invariant: 0 = holds.
-- Set-based: each reads its tables once (grouped aggregates joined, anti-joins), never a
-- subquery per row over another table (posting_tf_sum as one did never finished at 42k).
-- The first comment line of a check is its description. Since migration 0005 `pair` and
-- `sentence` have no foreign keys (docs/schema.md, "Writes"), and `sentence_term` never
-- had any: the reference checks here are what stands in for them.
-- Not checkable in SQL: sum(term_mults) = the tree's tokens + 1 (the tree's tokens are not
-- stored; the tests re-tokenize to check it).

-- name: duplicate_pairs
-- duplicate pairs
SELECT count(*) - count(DISTINCT (a_id, b_id)) FROM pair;

-- name: duplicate_sentences
-- duplicate sentences
SELECT count(*) - count(DISTINCT (lang, text)) FROM sentence;

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
-- that order, so the stored arrays are compared first and sorted only when they differ.
SELECT count(*) FROM sentence s
LEFT JOIN (SELECT st.sentence_id, array_agg(t.key ORDER BY t.key COLLATE "C", st.mult) AS keys,
                  array_agg(st.mult ORDER BY t.key COLLATE "C", st.mult) AS mults
           FROM sentence_term st JOIN term t ON t.id = st.term_id GROUP BY st.sentence_id) x
       ON x.sentence_id = s.id
WHERE (x.keys, x.mults) IS DISTINCT FROM (s.term_keys, s.term_mults)
  AND (x.keys, x.mults) IS DISTINCT FROM
      (SELECT (array_agg(u.k ORDER BY u.k COLLATE "C", u.m), array_agg(u.m ORDER BY u.k COLLATE "C", u.m))
       FROM unnest(s.term_keys, s.term_mults) AS u(k, m));

-- name: sentence_root_term
-- sentences without the virtual root term once (or, stored without trees, with terms)
SELECT count(*) FROM sentence s JOIN parser p ON p.id = s.parser_id
WHERE CASE WHEN p.tree_tokens = 'none' THEN cardinality(s.term_keys) > 0
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

-- name: posting_vocab
-- postings without vocab
SELECT count(*) FROM posting p WHERE NOT EXISTS (SELECT 1 FROM vocab v WHERE v.id = p.token_id);

-- name: posting_sentence
-- postings without sentence
SELECT count(*) FROM posting p WHERE NOT EXISTS (SELECT 1 FROM sentence s WHERE s.id = p.sentence_id);

-- name: posting_eligible
-- postings of ineligible sentences
SELECT count(*) FROM posting p JOIN sentence s ON s.id = p.sentence_id WHERE NOT s.eligible;

-- name: posting_lang
-- postings in another language's vocab
SELECT count(*) FROM posting p JOIN sentence s ON s.id = p.sentence_id
JOIN vocab v ON v.id = p.token_id WHERE v.lang <> s.lang;

-- name: posting_dl
-- postings with dl <> n_tokens
SELECT count(*) FROM posting p JOIN sentence s ON s.id = p.sentence_id WHERE p.dl <> s.n_tokens;

-- name: posting_tf_sum
-- eligible sentences whose tf do not sum to n_tokens
SELECT count(*) FROM sentence s
LEFT JOIN (SELECT sentence_id, sum(tf) AS tf FROM posting GROUP BY sentence_id) p ON p.sentence_id = s.id
WHERE s.eligible AND coalesce(p.tf, 0) <> s.n_tokens;

-- name: vocab_token_bounds
-- token bounds (migration 0008) that are not their postings' extremes
SELECT count(*) FROM vocab v JOIN (
    SELECT token_id, count(*) FILTER (WHERE tf >= 2) AS df_rep, max(tf) AS max_tf, min(dl) AS min_dl,
           min(dl) FILTER (WHERE tf = 2) AS min_dl2, min(dl) FILTER (WHERE tf >= 3) AS min_dl3
    FROM posting GROUP BY token_id) x ON x.token_id = v.id
WHERE (v.df_rep, v.max_tf, v.min_dl, v.min_dl2, v.min_dl3)
      IS DISTINCT FROM (x.df_rep, x.max_tf, x.min_dl, x.min_dl2, x.min_dl3);

-- name: vocab_df
-- vocab df <> number of postings
SELECT count(*) FROM vocab v
LEFT JOIN (SELECT token_id, count(*) AS n FROM posting GROUP BY token_id) p ON p.token_id = v.id
WHERE v.df <> coalesce(p.n, 0);

-- name: bm25_stats
-- bm25_stats n_docs/total_len wrong
SELECT count(*) FROM (
    SELECT lang, count(*) AS n, sum(n_tokens) AS len FROM sentence WHERE eligible GROUP BY lang) e
FULL JOIN bm25_stats b USING (lang)
WHERE b.n_docs IS DISTINCT FROM e.n OR b.total_len IS DISTINCT FROM e.len;

-- name: bm25_doc_eligible
-- eligible sentences without exactly one forward row (bm25_doc)
SELECT count(*) FROM sentence s
WHERE s.eligible <> EXISTS (SELECT 1 FROM bm25_doc d WHERE d.sentence_id = s.id);

-- name: bm25_doc_postings
-- forward rows that are not the sentence's postings
SELECT count(*) FROM bm25_doc d
LEFT JOIN (
    SELECT p.sentence_id, array_agg(p.token_id ORDER BY p.token_id) AS token_ids,
           array_agg(p.tf ORDER BY p.token_id) AS tfs, min(p.dl) AS dl
    FROM posting p GROUP BY p.sentence_id) x ON x.sentence_id = d.sentence_id
WHERE (d.token_ids, d.tfs, d.dl) IS DISTINCT FROM (x.token_ids, x.tfs, x.dl);

-- name: bm25_doc_sig
-- signatures that are not the OR of the sentence's token bits
SELECT count(*) FROM bm25_doc d
WHERE d.sig <> (SELECT bit_or(bm25_token_bit(t)) FROM unnest(d.token_ids) t);

-- name: bm25_blocks
-- posting blocks (migrations 0016, 0022; one row per block in bm25_block_unpacked) that
-- differ from the token's postings, in id order, 128 a block; blocks stored twice; and
-- rows of several blocks that are not a full group of 8 from a multiple of 8
SELECT (SELECT count(*) FROM (
            SELECT token_id, block_no,
                   string_agg(int4send((sentence_id - first)::int), ''::bytea ORDER BY sentence_id) AS ids,
                   string_agg(int2send((tf::int << 8 | dl)::smallint), ''::bytea ORDER BY sentence_id) AS tfdl
            FROM (SELECT r.*, min(sentence_id) OVER (PARTITION BY token_id, block_no) AS first
                  FROM (SELECT p.token_id, p.sentence_id, p.tf, p.dl,
                               (row_number() OVER (PARTITION BY p.token_id ORDER BY p.sentence_id) - 1) / 128 AS block_no
                        FROM posting p) r) x
            GROUP BY token_id, block_no) want
        FULL JOIN bm25_block_unpacked b USING (token_id, block_no)
        WHERE (want.ids, want.tfdl) IS DISTINCT FROM (b.ids, b.tfdl))
     + (SELECT count(*) FROM (SELECT 1 FROM bm25_block_unpacked GROUP BY token_id, block_no HAVING count(*) > 1) d)
     + (SELECT count(*) FROM bm25_block WHERE length(tfdl) > 2 * 128 AND (length(tfdl) <> 2 * 8 * 128 OR block_no % 8 <> 0));

-- name: bm25_dirs
-- block directories (migration 0016) whose block count, last block size or length differ from the blocks
SELECT count(*) FROM bm25_dir d
FULL JOIN (SELECT token_id, count(*) AS n, (array_agg(length(tfdl) / 2 ORDER BY block_no DESC))[1] AS tail
           FROM bm25_block_unpacked GROUP BY token_id) b USING (token_id)
WHERE (d.n_blocks, d.tail_n, length(d.meta)) IS DISTINCT FROM (b.n, b.tail, b.n * 26);

-- name: posting_sig
-- postings whose signature differs from their sentence's
SELECT count(*) FROM posting p JOIN bm25_doc d ON d.sentence_id = p.sentence_id
WHERE p.sig <> d.sig;

-- name: sentence_pair
-- sentences in no pair
SELECT count(*) FROM sentence s
WHERE NOT EXISTS (SELECT 1 FROM pair p WHERE p.a_id = s.id OR p.b_id = s.id);

-- name: one_scheme_per_language
-- languages whose sentences use more than one analysis scheme (selection refuses them until `scoi reanalyze`)
SELECT count(*) FROM (
    SELECT p.lang FROM parser p WHERE EXISTS (SELECT 1 FROM sentence s WHERE s.parser_id = p.id)
    GROUP BY p.lang HAVING count(*) > 1) x;
