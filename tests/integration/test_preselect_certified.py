"""Certified BM25 preselection (migration 0008, docs/preselection.md "Certified top n").

Random corpora are written through the real ingest writer (``BatchWriter``: COPY,
df, token bounds, in one transaction per batch) and queried with the real statement;
the reference is BM25 computed here in plain Python from its definition. Checked: the
exact mode equals the reference, ``certified`` is never true on a result that differs
from it (whatever the budgets), and the token bounds stay exact extremes, so valid,
after a second batch adds sentences.
"""

from __future__ import annotations

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi.db.queries import load
from scoi.selector import Bm25Params
from tests.helpers.bm25 import Corpus, blocks_equal_postings, corpus, reference, same

SELECT = load("select")
# A skewed vocabulary: a few tokens in most sentences, many rare ones, so that budgets,
# repeats (tf >= 2) and the non-essential prefix all come into play.
VOCAB = ["de", "la", ",", "le", "et"] + [f"w{i}" for i in range(25)]
token = st.one_of(st.sampled_from(VOCAB[:5]), st.sampled_from(VOCAB))
sentence = st.lists(token, min_size=1, max_size=14)
query = st.lists(st.one_of(token, st.just("inconnu")), min_size=1, max_size=10)
params = st.builds(Bm25Params, engine=st.just("sql"), budget=st.integers(1, 40), budget_frac=st.just(0.0),
                   repeats=st.integers(0, 20), depth=st.integers(1, 30), depth_frac=st.just(0.0),
                   certify=st.integers(0, 200))


def sql_preselect(c: Corpus, q: list[str], n: int, bm25: Bm25Params) -> tuple[list[tuple[int, float]], bool | None]:
    """The plain-SQL statement (``Bm25Params(engine="sql")``): pool and its certified flag."""
    rows = c.conn.execute(SELECT["preselect"], {"lang": "fr", "tgt": "en", "tokens": q, "n": n,
                                                "corpora": None, "meta": None, **bm25.sql_params(n)}).fetchall()
    return [(p, s) for p, s, _ in rows], (rows[0][2] if rows else None)


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
       queries=st.lists(query, min_size=1, max_size=4), n=st.integers(1, 12), budgets=st.lists(params, min_size=2,
                                                                                                max_size=2))
def test_exact_mode_and_certified_results_equal_python_bm25(server_url, template_url, first, second, queries, n,
                                                             budgets):
    with corpus(server_url) as c:
        for batch in (first, second):  # the second batch moves idf, avgdl and the bounds
            c.add(batch)
            stored_bounds_are_exact(c.conn)
            for q in queries:
                exp = reference(*c.truth(), q, n)
                got, certified = sql_preselect(c, q, n, Bm25Params(engine="sql", exact=True))
                assert same(got, exp), (q, got, exp)
                assert certified is (True if exp else None)
                for bm25 in budgets:
                    got, certified = sql_preselect(c, q, n, bm25)
                    assert not certified or same(got, exp), (q, bm25, got, exp)


def test_certification_happens_and_budgets_can_refuse_it(server_url, template_url):
    """The flag is informative: the same query is certified with room to read the
    essential postings and not certified without it."""
    docs = [["w1", "de", "la"], ["w2", "de"], ["de", "la", "la"], ["w1", "w2", ","]] * 10 + [["de"]] * 40
    with corpus(server_url) as c:
        c.add(docs)
        q = ["w1", "de", "la", "la"]
        exp = reference(*c.truth(), q, 5)
        tight = Bm25Params(engine="sql", budget=1, repeats=0, depth=5, certify=0)
        roomy = Bm25Params(engine="sql", budget=1, repeats=0, depth=5, certify=10**6)
        assert sql_preselect(c, q, 5, tight)[1] is False
        got, certified = sql_preselect(c, q, 5, roomy)
        assert certified is True and same(got, exp)


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
        got, certified = sql_preselect(c, q, 3, Bm25Params(engine="sql", exact=True))
        assert certified and same(got, reference(*c.truth(), q, 3))
