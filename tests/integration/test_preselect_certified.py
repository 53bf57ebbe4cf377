"""Certified BM25 preselection (docs/preselection.md "Certified top n"): the block
preselector's pools are exact BM25's top n, and say so.

Random corpora are written through the real ingest writer (``BatchWriter``: COPY,
df, token bounds, in one transaction per batch) and queried with the product's
preselector (scoi.selection.preselector.BlockPreselector); the reference is BM25 computed
here in plain Python from its definition (tests/helpers/bm25.py: exact top n, ties by
pair id). Checked after a second batch moves idf, avgdl and the bounds: the top n equals
the reference, the pool is certified exactly when a pair matched, and the blocks hold
exactly the sentences' postings.
"""

from __future__ import annotations

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
            blocks_equal_postings(c.conn)  # blocks, directories, df and forward rows from the tokens
            for q in queries:
                docs, pairs_of = c.truth()
                exp = reference(docs, pairs_of, q, n)
                assert same(ENGINE.top(c.conn, q, n), exp), (q, exp)
                # the pool: one pair per source sentence, by its best-ranked pair
                pool = ENGINE.pool(c.conn, q, n)
                assert same([(r.pair_id, r.score) for r in pool.rows], reference_pool(docs, pairs_of, q, n)), q
                assert pool.certified is (True if exp else None)


def test_migrations_down_to_0007_and_up_again(server_url, template_url):
    """Down to 0007 (through 0034's refill of posting from the blocks, 0016's blocks and
    0008's bounds) drops the bounds, the repeat index and bm25_scores; up again to the
    head rebuilds the blocks, and df and the pools are what ingest made."""
    from scoi.db.engine import get_engine
    from scoi.db.migrate import downgrade, upgrade

    docs = [["de", "la", "de", "w1"], ["w2", ",", ",", ","], ["la"], ["w1", "w1", "w3", "de"]] * 3
    with corpus(server_url) as c:
        c.add(docs)
        before = c.conn.execute("SELECT token, df FROM vocab ORDER BY token").fetchall()
        engine = get_engine(c.url)
        downgrade(engine, "0007")
        gone = c.conn.execute("""
            SELECT (SELECT count(*) FROM information_schema.columns WHERE table_name = 'vocab'
                    AND column_name IN ('df_rep', 'max_tf', 'min_dl', 'min_dl2', 'min_dl3')),
                   to_regclass('posting_rep'), to_regproc('bm25_scores')""").fetchone()
        assert gone == (0, None, None)
        upgrade(engine)
        engine.dispose()
        after = c.conn.execute("SELECT token, df FROM vocab ORDER BY token").fetchall()
        assert after == before
        blocks_equal_postings(c.conn)  # migration 0016 rebuilt the blocks from the postings
        q = ["de", "w1", "w1", ","]
        assert same(ENGINE.top(c.conn, q, 3), reference(*c.truth(), q, 3))
