-- Integrity checks of the stored corpus (`scoi db check`, scoi.db.check, the tests'
-- assert_consistent). Each statement counts the rows that break one invariant: 0 = holds.
-- Set-based: each reads its tables once (grouped aggregates joined, anti-joins), never a
-- subquery per row over another table (posting_tf_sum as one did never finished at 42k).
-- The first comment line of a check is its description. Since migration 0005 `pair` and
-- `sentence` have no foreign keys (docs/schema.md, "Writes"), and `sentence_term` never
-- had any: the reference checks here are what stands in for them.
-- Checks that read the same big table (posting, 13.5M rows at 1M pairs) are fused: such a
-- check's block holds only its description, and one `pass_*` statement (`-- checks:` lists
-- them) computes them all in one read of the table, one column per check, named after it.
-- The passes run first, in this file's order (the longest first), then the other checks.
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

-- name: posting_vocab
-- postings without vocab


-- name: posting_sentence
-- postings without sentence


-- name: posting_eligible
-- postings of ineligible sentences


-- name: posting_lang
-- postings in another language's vocab


-- name: posting_dl
-- postings with dl <> n_tokens


-- name: posting_tf_sum
-- eligible sentences whose tf do not sum to n_tokens


-- name: vocab_token_bounds
-- token bounds (migration 0008) that are not their postings' extremes


-- name: vocab_df
-- vocab df <> number of postings


-- name: bm25_stats
-- bm25_stats n_docs/total_len wrong
SELECT count(*) FROM (
    SELECT lang, count(*) AS n, sum(n_tokens) AS len FROM sentence WHERE eligible GROUP BY lang) e
FULL JOIN bm25_stats b USING (lang)
WHERE b.n_docs IS DISTINCT FROM e.n OR b.total_len IS DISTINCT FROM e.len;

-- name: bm25_doc_eligible
-- eligible sentences without exactly one forward row (bm25_doc)


-- name: bm25_doc_postings
-- forward rows that are not the sentence's postings


-- name: bm25_doc_sig
-- signatures that are not the OR of the sentence's token bits


-- name: bm25_blocks
-- tokens whose posting blocks differ from their postings, blocks stored twice, bad groups of 8
-- The blocks (migrations 0016, 0022; one row per block in bm25_block_unpacked) must be the
-- token's postings in id order, 128 a block; rows of several blocks must be a full group of
-- 8 from a multiple of 8.


-- name: bm25_dirs
-- block directories (migration 0016) whose block count, last block size or length differ from the blocks
SELECT count(*) FROM bm25_dir d
FULL JOIN (SELECT token_id, count(*) AS n, (array_agg(length(tfdl) / 2 ORDER BY block_no DESC))[1] AS tail
           FROM bm25_block_unpacked GROUP BY token_id) b USING (token_id)
WHERE (d.n_blocks, d.tail_n, length(d.meta)) IS DISTINCT FROM (b.n, b.tail, b.n * 26);

-- name: posting_sig
-- postings whose signature differs from their sentence's


-- name: sentence_pair
-- sentences in no pair
SELECT count(*) FROM sentence s
WHERE NOT EXISTS (SELECT 1 FROM pair p WHERE p.a_id = s.id OR p.b_id = s.id);

-- name: one_scheme_per_language
-- languages whose sentences use more than one analysis scheme (selection refuses them until `scoi reanalyze`)
SELECT count(*) FROM (
    SELECT p.lang FROM parser p WHERE EXISTS (SELECT 1 FROM sentence s WHERE s.parser_id = p.id)
    GROUP BY p.lang HAVING count(*) > 1) x;

-- name: pass_posting_sentences
-- the postings grouped by sentence, beside each sentence and forward row
-- checks: posting_tf_sum, bm25_doc_eligible, bm25_doc_postings, bm25_doc_sig
SELECT count(*) FILTER (WHERE s.eligible AND coalesce(x.tf, 0) <> s.n_tokens) AS posting_tf_sum,
       count(*) FILTER (WHERE s.id IS NOT NULL AND s.eligible <> (d.sentence_id IS NOT NULL)) AS bm25_doc_eligible,
       count(*) FILTER (WHERE d.sentence_id IS NOT NULL
                          AND (d.token_ids, d.tfs, d.dl) IS DISTINCT FROM (x.token_ids, x.tfs, x.dl)) AS bm25_doc_postings,
       count(*) FILTER (WHERE d.sig <> (SELECT bit_or(bm25_token_bit(t)) FROM unnest(d.token_ids) t)) AS bm25_doc_sig
FROM sentence s
FULL JOIN bm25_doc d ON d.sentence_id = s.id
LEFT JOIN (SELECT sentence_id, sum(tf) AS tf, array_agg(token_id ORDER BY token_id) AS token_ids,
                  array_agg(tf ORDER BY token_id) AS tfs, min(dl) AS dl
           FROM posting GROUP BY sentence_id) x ON x.sentence_id = coalesce(s.id, d.sentence_id);

-- name: pass_posting_tokens
-- the postings grouped by token in the primary key's order (no sort), beside the token's
-- vocab row and its blocks. The blocks are compared a token at a time: the token's blocks
-- concatenated in block order against its postings encoded as the blocks store them (ids
-- as the distance from their block's first, 128 a block). Equal streams with every block
-- but the last full, none empty, and block numbers 0..n-1 are the same blocks, block by block.
-- checks: vocab_token_bounds, vocab_df, bm25_blocks
SELECT count(*) FILTER (WHERE x.token_id IS NOT NULL AND v.id IS NOT NULL
                          AND (v.df_rep, v.max_tf, v.min_dl, v.min_dl2, v.min_dl3)
                              IS DISTINCT FROM (x.df_rep, x.max_tf, x.min_dl, x.min_dl2, x.min_dl3)) AS vocab_token_bounds,
       count(*) FILTER (WHERE v.df <> coalesce(x.df, 0)) AS vocab_df,
       count(*) FILTER (WHERE coalesce(x.token_id, b.token_id) IS NOT NULL AND (
                 b.token_id IS NULL OR x.token_id IS NULL OR b.short > 1 OR b.short_not_last OR b.min_len = 0
                 OR (b.first_no, b.last_no, b.ids, b.tfdl) IS DISTINCT FROM
                    (0, b.n - 1, (SELECT string_agg(int4send((x.s[i] - x.s[(i - 1) / 128 * 128 + 1])::int), ''::bytea
                                                    ORDER BY i)
                                  FROM generate_subscripts(x.s, 1) i), x.tfdl)))
       + (SELECT count(*) FROM (SELECT 1 FROM bm25_block_unpacked GROUP BY token_id, block_no HAVING count(*) > 1) d)
       + (SELECT count(*) FROM bm25_block WHERE length(tfdl) > 2 * 128 AND (length(tfdl) <> 2 * 8 * 128 OR block_no % 8 <> 0))
       AS bm25_blocks
FROM (SELECT token_id, count(*) AS df, count(*) FILTER (WHERE tf >= 2) AS df_rep, max(tf) AS max_tf, min(dl) AS min_dl,
             min(dl) FILTER (WHERE tf = 2) AS min_dl2, min(dl) FILTER (WHERE tf >= 3) AS min_dl3,
             array_agg(sentence_id ORDER BY sentence_id) AS s,
             string_agg(int2send((tf::int << 8 | dl)::smallint), ''::bytea ORDER BY sentence_id) AS tfdl
      FROM posting GROUP BY token_id) x
FULL JOIN (SELECT token_id, count(*) AS n, min(block_no) AS first_no, max(block_no) AS last_no,
                  count(*) FILTER (WHERE length(tfdl) <> 2 * 128 OR length(ids) <> 4 * 128) AS short,
                  max(block_no) FILTER (WHERE length(tfdl) <> 2 * 128 OR length(ids) <> 4 * 128)
                      < max(block_no) AS short_not_last,
                  min(length(tfdl)) AS min_len,
                  string_agg(ids, ''::bytea ORDER BY block_no) AS ids, string_agg(tfdl, ''::bytea ORDER BY block_no) AS tfdl
           FROM bm25_block_unpacked GROUP BY token_id) b ON b.token_id = x.token_id
FULL JOIN vocab v ON v.id = coalesce(x.token_id, b.token_id);

-- name: pass_posting_rows
-- every posting with its sentence, vocab entry and forward row: one hash join each
-- checks: posting_vocab, posting_sentence, posting_eligible, posting_lang, posting_dl, posting_sig
SELECT count(*) FILTER (WHERE v.id IS NULL) AS posting_vocab,
       count(*) FILTER (WHERE s.id IS NULL) AS posting_sentence,
       count(*) FILTER (WHERE NOT s.eligible) AS posting_eligible,
       count(*) FILTER (WHERE v.lang <> s.lang) AS posting_lang,
       count(*) FILTER (WHERE p.dl <> s.n_tokens) AS posting_dl,
       count(*) FILTER (WHERE p.sig <> d.sig) AS posting_sig
FROM posting p
LEFT JOIN sentence s ON s.id = p.sentence_id
LEFT JOIN vocab v ON v.id = p.token_id
LEFT JOIN bm25_doc d ON d.sentence_id = p.sentence_id;
