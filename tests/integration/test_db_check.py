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
    return {r.name: r.violations for r in run_checks(url, REWRITTEN)}


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
    seen = []
    results = run_checks(small_db, progress=seen.append)
    assert seen == results and [r.name for r in results] == list(checks())
    assert all(r.ok and r.seconds >= 0 for r in results)


def test_the_same_terms_in_another_order_are_no_violation(small_db):
    with psycopg.connect(small_db) as conn:
        conn.execute("""UPDATE sentence SET term_keys = ARRAY(SELECT k FROM unnest(term_keys) WITH ORDINALITY AS u(k, i)
                                                             ORDER BY i DESC),
                                            term_mults = ARRAY(SELECT m FROM unnest(term_mults) WITH ORDINALITY AS u(m, i)
                                                               ORDER BY i DESC)
                        WHERE cardinality(term_keys) > 2""")
    assert counts(small_db)["sentence_term_arrays"] == 0
