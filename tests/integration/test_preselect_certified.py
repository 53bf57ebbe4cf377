"""Certified BM25 preselection (docs/preselection.md "Certified top n"): the block
preselector's pools are exact BM25's top n, and say so.

Random corpora are written through the real ingest writer (``BatchWriter``: COPY,
df, token bounds, in one transaction per batch) and queried with the product's
preselector (scoi.selection.preselector.BlockPreselector); the reference is BM25 computed
here in plain Python from its definition (tests/helpers/bm25.py: exact top n, ties by
pair id). Checked after a second batch moves idf, avgdl and the bounds: the top n equals
the reference, the pool is certified exactly when a pair matched, and the token bounds
stay exact extremes.
"""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi.selection.preselector import BlockPreselector
from tests.helpers.bm25 import blocks_equal_postings, corpus, reference, reference_pool, same

# A skewed vocabulary: a few tokens in most sentences, many rare ones, so that idf and
# repeated tokens (tf >= 2) vary.
VOCAB = ["de", "la", ",", "le", "et"] + [f"w{i}" for i in range(25)]
token = st.one_of(st.sampled_from(VOCAB[:5]), st.sampled_from(VOCAB))
sentence = st.lists(token, min_size=1, max_size=14)
query = st.lists(st.one_of(token, st.just("inconnu")), min_size=1, max_size=10)
ENGINE = BlockPreselector("fr", "en")


def stored_bounds_are_exact(conn: psycopg.Connection) -> None:
    """vocab's counters equal the extremes recomputed from the postings."""
    rows = conn.execute("""
        SELECT v.token, (v.df, v.df_rep, v.max_tf, v.min_dl, v.min_dl2, v.min_dl3)
                        IS NOT DISTINCT FROM (x.df, x.df_rep, x.max_tf, x.min_dl, x.min_dl2, x.min_dl3)
        FROM vocab v JOIN (
            SELECT token_id, count(*) AS df, count(*) FILTER (WHERE tf >= 2) AS df_rep, max(tf) AS max_tf,
                   min(dl) AS min_dl, min(dl) FILTER (WHERE tf = 2) AS min_dl2, min(dl) FILTER (WHERE tf >= 3) AS min_dl3
            FROM posting GROUP BY token_id) x ON x.token_id = v.id""").fetchall()
    assert rows and all(ok for _, ok in rows), [t for t, ok in rows if not ok]


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])


# ------------------------------------------------------------------ tests
@SETTINGS
@given(first=st.lists(sentence, min_size=3, max_size=40), second=st.lists(sentence, min_size=1, max_size=30),
       queries=st.lists(query, min_size=1, max_size=4), n=st.integers(1, 12))
def test_block_pools_equal_python_bm25_and_are_certified_after_each_batch(server_url, template_url, first, second,
                                                                           queries, n):
    with corpus(server_url) as c:
        for batch in (first, second):  # the second batch moves idf, avgdl and the bounds
            c.add(batch)
            stored_bounds_are_exact(c.conn)
            for q in queries:
                docs, pairs_of = c.truth()
                exp = reference(docs, pairs_of, q, n)
                assert same(ENGINE.top(c.conn, q, n), exp), (q, exp)
                # the pool: one pair per source sentence, by its best-ranked pair
                pool = ENGINE.pool(c.conn, q, n)
                assert same([(r.pair_id, r.score) for r in pool.rows], reference_pool(docs, pairs_of, q, n)), q
                assert pool.certified is (True if exp else None)


def test_migration_0008_up_and_down(server_url, template_url):
    """Downgrading drops the bounds, the repeat index and bm25_scores; upgrading rebuilds
    the bounds from the postings, equal to what ingest maintained."""
    from scoi.db.engine import get_engine
    from scoi.db.migrate import downgrade, upgrade

    docs = [["de", "la", "de", "w1"], ["w2", ",", ",", ","], ["la"], ["w1", "w1", "w3", "de"]] * 3
    with corpus(server_url) as c:
        c.add(docs)
        before = c.conn.execute("SELECT token, df_rep, max_tf, min_dl, min_dl2, min_dl3 FROM vocab ORDER BY token"
                                ).fetchall()
        engine = get_engine(c.url)
        downgrade(engine, "0007")
        gone = c.conn.execute("""
            SELECT (SELECT count(*) FROM information_schema.columns WHERE table_name = 'vocab'
                    AND column_name IN ('df_rep', 'max_tf', 'min_dl', 'min_dl2', 'min_dl3')),
                   to_regclass('posting_rep'), to_regproc('bm25_scores')""").fetchone()
        assert gone == (0, None, None)
        upgrade(engine)
        engine.dispose()
        after = c.conn.execute("SELECT token, df_rep, max_tf, min_dl, min_dl2, min_dl3 FROM vocab ORDER BY token"
                               ).fetchall()
        assert after == before
        stored_bounds_are_exact(c.conn)
        blocks_equal_postings(c.conn)  # migration 0016 rebuilt the blocks from the postings
        q = ["de", "w1", "w1", ","]
        assert same(ENGINE.top(c.conn, q, 3), reference(*c.truth(), q, 3))
