"""``scoi db check``'s statements (scoi/db/sql/check.sql) and its pass over the BM25 index
(blocks, directories, forward rows decoded in Python) on a real ingest: each counts exactly
the rows or tokens that break its invariant, and each result is handed over as its check ends."""

from __future__ import annotations

import psycopg
import pytest

from scoi.db.check import INDEX_PASS, checks, index_pass, run_checks
from scoi.db.queries import load
from tests.helpers.ingest import demo_pairs, ingest_inprocess, write_tsv

REWRITTEN = ["sentence_term_arrays", "bm25_doc_tfs", "vocab_df", "bm25_doc_postings"]


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
        # two postings gone from one forward row: its tf sum, and two tokens' lists no longer
        # the blocks' (whose df still holds)
        conn.execute("UPDATE bm25_doc SET token_ids = token_ids[3:], tfs = tfs[3:] "
                     "WHERE sentence_id = (SELECT max(sentence_id) FROM bm25_doc WHERE cardinality(token_ids) > 2)")
    assert counts(small_db) == {"sentence_term_arrays": 1, "bm25_doc_tfs": 1, "vocab_df": 0, "bm25_doc_postings": 2}


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


def test_a_corrupted_block_fails_the_check_on_any_number_of_sessions(small_db):
    """One posting's dl changed inside a block's bytes: its token's list is no longer the
    forward rows' (and the directory's extremes may no longer be its block's), however
    the passes are spread over sessions."""
    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE bm25_block SET tfdl = set_byte(tfdl, 1, get_byte(tfdl, 1) + 1) "
                     "WHERE (token_id, block_no) = (SELECT token_id, block_no FROM bm25_block ORDER BY 1, 2 LIMIT 1)")
    for jobs in (1, 2, 4):
        bad = {r.name: r.violations for r in run_checks(small_db, jobs=jobs) if not r.ok}
        assert bad["bm25_doc_postings"] == 1, (jobs, bad)
        assert set(bad) <= {"bm25_doc_postings", "bm25_dir_records"}, bad


def test_a_changed_sentence_id_in_a_block_is_caught(small_db):
    """An id offset moved to a sentence that does not hold the token."""
    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE bm25_block SET ids = set_byte(ids, length(ids) - 1, get_byte(ids, length(ids) - 1) + 1) "
                     "WHERE (token_id, block_no) = (SELECT token_id, block_no FROM bm25_block "
                     "WHERE length(ids) > 4 ORDER BY 1, 2 LIMIT 1)")
    bad = {r.name: r.violations for r in run_checks(small_db) if not r.ok}
    assert bad.get("bm25_doc_postings") == 1 and set(bad) <= {"bm25_doc_postings", "bm25_dir_records", "bm25_blocks"}, bad


def test_a_directory_record_that_is_not_its_blocks_extremes_is_caught(small_db):
    """A block's largest tf raised in the directory: its bound would be loose, not wrong,
    but the check wants the exact extremes (a rewrite that forgot one shows here)."""
    with psycopg.connect(small_db) as conn:
        conn.execute("UPDATE bm25_dir SET meta = set_byte(meta, 19, get_byte(meta, 19) + 1) "
                     "WHERE token_id = (SELECT min(token_id) FROM bm25_dir)")  # byte 19: max_tf's low byte
    assert {r.name: r.violations for r in run_checks(small_db) if not r.ok} == {"bm25_dir_records": 1}


def test_forward_rows_are_checked_against_their_sentences(small_db):
    """A forward row whose dl is not its sentence's length, one holding a token of the other
    language, and an eligible sentence without one."""
    with psycopg.connect(small_db) as conn:
        sids = [r[0] for r in conn.execute("SELECT sentence_id FROM bm25_doc d JOIN sentence s ON s.id = d.sentence_id "
                                           "WHERE s.lang = 'fr' ORDER BY 1 LIMIT 3")]
        conn.execute("UPDATE bm25_doc SET dl = dl + 1 WHERE sentence_id = %s", (sids[0],))
        conn.execute("UPDATE bm25_doc SET token_ids = (SELECT array_agg(t ORDER BY t) FROM unnest(token_ids || "
                     "(SELECT max(id) FROM vocab WHERE lang = 'en' AND id > ALL(token_ids))) t), tfs = tfs || 1::smallint, "
                     "dl = dl + 1 WHERE sentence_id = %s", (sids[1],))
        conn.execute("DELETE FROM bm25_doc WHERE sentence_id = %s", (sids[2],))
    bad = {r.name: r.violations for r in run_checks(small_db) if not r.ok}
    assert bad["bm25_doc_dl"] == 2 and bad["bm25_doc_lang"] == 1 and bad["bm25_doc_eligible"] == 1, bad


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


def test_a_check_that_is_no_statement_and_in_no_pass_is_refused(small_db):
    """check.sql's own consistency: every check is one statement, one pass's column, or
    one of the index pass's results (which computes exactly the checks it lists)."""
    described = checks()
    fused = [n for n, (_, sql) in described.items() if "-- checks:" in sql]
    assert {"bm25_doc_dl", "bm25_blocks", "bm25_doc_postings", "vocab_df"} <= set(fused)
    in_python = {n for n in fused if described[n][1] == load("check")[INDEX_PASS]}
    for name in set(fused) - in_python:
        assert f" AS {name}" in described[name][1], name
    with psycopg.connect(small_db) as conn:
        assert set(index_pass(conn)) == in_python


def test_the_same_terms_in_another_order_are_no_violation(small_db):
    with psycopg.connect(small_db) as conn:
        conn.execute("""UPDATE sentence SET term_keys = ARRAY(SELECT k FROM unnest(term_keys) WITH ORDINALITY AS u(k, i)
                                                             ORDER BY i DESC),
                                            term_mults = ARRAY(SELECT m FROM unnest(term_mults) WITH ORDINALITY AS u(m, i)
                                                               ORDER BY i DESC)
                        WHERE cardinality(term_keys) > 2""")
    assert counts(small_db)["sentence_term_arrays"] == 0
