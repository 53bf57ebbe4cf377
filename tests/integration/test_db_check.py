"""``scoi db check``'s statements (scoi/db/sql/check.sql) on a real ingest: the set-based
ones still count exactly the rows that break their invariant, and each result is handed
over as its check ends."""

from __future__ import annotations

import psycopg
import pytest

from scoi.db.check import checks, run_checks
from tests.helpers.ingest import demo_pairs, ingest_inprocess, write_tsv

REWRITTEN = ["sentence_term_arrays", "posting_tf_sum", "vocab_df", "bm25_doc_postings"]


@pytest.fixture()
def small_db(db_url, tmp_path):
    ingest_inprocess(db_url, [write_tsv(tmp_path / "s.tsv", demo_pairs()[:20])])
    return db_url


def counts(url: str) -> dict[str, int]:
    return counts_of(url, REWRITTEN)


def counts_of(url: str, names: list[str]) -> dict[str, int]:
    return {r.name: r.violations for r in run_checks(url, names)}


def test_grouped_checks_count_each_broken_sentence_once(small_db):
    assert counts(small_db) == dict.fromkeys(REWRITTEN, 0)
    with psycopg.connect(small_db) as conn:
        # a sentence_term row that is not the sentence's arrays
        conn.execute("UPDATE sentence_term SET mult = mult + 1 WHERE (sentence_id, term_id) = "
                     "(SELECT sentence_id, term_id FROM sentence_term ORDER BY 1, 2 LIMIT 1)")
        # two postings of one sentence gone: its tf sum, its forward row, two tokens' df
        conn.execute("DELETE FROM posting WHERE (token_id, sentence_id) IN (SELECT token_id, sentence_id FROM posting "
                     "WHERE sentence_id = (SELECT max(sentence_id) FROM posting) ORDER BY token_id LIMIT 2)")
    assert counts(small_db) == {"sentence_term_arrays": 1, "posting_tf_sum": 1, "vocab_df": 2, "bm25_doc_postings": 1}


def test_a_sentence_whose_terms_are_stored_twice_in_its_arrays_is_counted(small_db):
    """The arrays hold the same key twice (sentence_term cannot): a multiset that differs."""
    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE sentence SET term_keys = term_keys || term_keys[1], term_mults = term_mults || term_mults[1] "
                     "WHERE id = (SELECT min(id) FROM sentence WHERE cardinality(term_keys) > 0)")
    assert counts(small_db)["sentence_term_arrays"] == 1


def test_each_result_is_handed_over_as_its_check_ends(small_db):
    """On several sessions the checks end in any order; the results come back in check.sql's."""
    for jobs in (1, 3):
        seen = []
        results = run_checks(small_db, progress=seen.append, jobs=jobs)
        assert sorted(seen, key=lambda r: r.name) == sorted(results, key=lambda r: r.name)
        assert [r.name for r in results] == list(checks())
        assert all(r.ok and r.seconds >= 0 for r in results)


def test_one_wrong_posting_is_caught_by_the_fused_passes_on_any_number_of_sessions(small_db):
    """A posting's dl off by one: the row pass (against its sentence) and the per-token pass
    (its block's bytes) each see it, once, however the passes are spread over sessions."""
    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE posting SET dl = dl + 1 WHERE (token_id, sentence_id) = "
                     "(SELECT token_id, sentence_id FROM posting WHERE tf = 1 ORDER BY 1, 2 LIMIT 1)")
    for jobs in (1, 2, 4):
        bad = {r.name: r.violations for r in run_checks(small_db, jobs=jobs) if not r.ok}
        assert bad["posting_dl"] == 1 and bad["bm25_blocks"] == 1, (jobs, bad)
        assert set(bad) <= {"posting_dl", "bm25_blocks", "bm25_doc_postings", "vocab_token_bounds"}, bad


def test_blocks_holding_the_right_bytes_cut_at_the_wrong_place_are_caught(small_db):
    """The blocks are compared a token at a time, as one stream: a token's single block cut
    in two (its last posting moved to a block 1) keeps the stream, not the blocks."""
    with psycopg.connect(small_db) as conn:
        token = conn.execute("SELECT token_id FROM bm25_block WHERE length(tfdl) >= 4 ORDER BY 1 LIMIT 1").fetchone()[0]
        conn.execute("INSERT INTO bm25_block (token_id, block_no, ids, tfdl) "
                     "SELECT token_id, 1, substr(ids, length(ids) - 3), substr(tfdl, length(tfdl) - 1) "
                     "FROM bm25_block WHERE token_id = %(t)s", {"t": token})
        conn.execute("UPDATE bm25_block SET ids = substr(ids, 1, length(ids) - 4), tfdl = substr(tfdl, 1, length(tfdl) - 2) "
                     "WHERE token_id = %(t)s AND block_no = 0", {"t": token})
    assert counts_of(small_db, ["bm25_blocks"]) == {"bm25_blocks": 1}


def test_a_check_that_is_no_statement_and_in_no_pass_is_refused():
    """check.sql's own consistency: every check is one statement or one pass's column."""
    described = checks()
    fused = [n for n, (_, sql) in described.items() if "-- checks:" in sql]
    assert {"posting_dl", "bm25_blocks", "bm25_doc_postings", "vocab_df"} <= set(fused)
    for name in fused:
        assert f" AS {name}" in described[name][1], name


def test_the_same_terms_in_another_order_are_no_violation(small_db):
    with psycopg.connect(small_db) as conn:
        conn.execute("""UPDATE sentence SET term_keys = ARRAY(SELECT k FROM unnest(term_keys) WITH ORDINALITY AS u(k, i)
                                                             ORDER BY i DESC),
                                            term_mults = ARRAY(SELECT m FROM unnest(term_mults) WITH ORDINALITY AS u(m, i)
                                                               ORDER BY i DESC)
                        WHERE cardinality(term_keys) > 2""")
    assert counts(small_db)["sentence_term_arrays"] == 0
