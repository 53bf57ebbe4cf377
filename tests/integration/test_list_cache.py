"""The list cache (scoi/selection/listcache.py): posting lists kept decoded in the selector's
process, valid while their ``bm25_dir`` row keeps its version.

Random corpora go through the real ingest writer; a warm cache must give the very same
pools as no cache (scores compared as floats, not within a tolerance, and the sums array
byte for byte), and plain-Python BM25's; after new batches, pair deletes and corpus
deletes the next query reads the changed lists again; a disabled cache reads everything;
the bound on postings holds; threads share one cache.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.delete import remove_corpus, remove_pairs
from scoi.selection.blockread import stream_all
from scoi.selection.listcache import ListCache, shared
from scoi.selection.preselect import Stats, preselect_blocks
from scoi.selection.preselector import BlockPreselector, Bm25Params, snapshot
from tests.helpers.bm25 import corpus, reference, same
from tests.helpers.hypothesis import examples

VOCAB = ["de", "la", ",", "le", "et"] + [f"w{i}" for i in range(25)]
token = st.one_of(st.sampled_from(VOCAB[:5]), st.sampled_from(VOCAB))
sentence = st.lists(token, min_size=1, max_size=14)
query = st.lists(st.one_of(token, st.just("inconnu")), min_size=1, max_size=10)
batch = st.tuples(st.lists(sentence, min_size=1, max_size=60), st.sampled_from(["a", "b"]))
SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                            HealthCheck.too_slow])


def top(conn: psycopg.Connection, q: list[str], n: int, cache: ListCache | None, min_df: int = 1,
        st_: Stats | None = None, **kw) -> list[tuple[int, float]]:
    return preselect_blocks(conn, lang="fr", tgt="en", tokens=q, n=n, corpora=None, cache=cache, cache_min_df=min_df,
                            stats=st_, **kw)


def sums(conn: psycopg.Connection, q: list[str], cache: ListCache | None, min_df: int = 1, k: int = 4
         ) -> tuple[tuple[bytes, bytes, float | None], bytes, int, float | None]:
    """The read-all path's best ``k`` sentences (ids and scores as bytes, and the bound on
    the others), then its whole sums array (bytes), the postings taken from the cache, and
    the best score of a sentence outside those k (None: there is none)."""
    st_ = Stats()
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        _, read = stream_all(conn.cursor(binary=True), "fr", q, 2**62, 1.5, 0.75, st_, cache, min_df)
    if read is None:
        return (b"", b"", None), b"", 0, None
    ids, scores, rest = read.head(k)  # the commonest cached lists added only where they matter
    order = np.argsort(ids)
    best = (ids[order].tobytes(), scores[order].tobytes(), rest)
    met, all_scores = read.all_scores()  # ... and then everywhere
    outside = all_scores[~np.isin(met, ids)]
    return best, read.sums.tobytes(), st_.extra.get("cached", 0), float(outside.max()) if len(outside) else None


def df(conn: psycopg.Connection, tok: str) -> int:
    row = conn.execute("SELECT df FROM vocab WHERE lang = 'fr' AND token = %s", (tok,)).fetchone()
    return row[0] if row else 0


def uncached_pools(c, batches, queries, n: int):
    """After each batch is added, each query's uncached pool (checked against plain-Python
    BM25): the reference the cached reads must equal float for float."""
    for frs, name in batches:
        c.add(frs + frs[: len(frs) // 5], corpus=name)
        docs, pairs_of = c.truth()
        for q in queries:
            cold = top(c.conn, q, n, None)
            assert same(cold, reference(docs, pairs_of, q, n)), (q, cold)
            yield q, cold


@SETTINGS
@given(batches=st.lists(batch, min_size=1, max_size=4), queries=st.lists(query, min_size=1, max_size=4),
       n=st.integers(1, 12), min_df=st.sampled_from([1, 1, 5, 30]))
def test_warm_cache_gives_the_same_floats_as_no_cache_after_each_batch(server_url, template_url, batches, queries, n,
                                                                       min_df):
    cache = ListCache(10**6)
    with corpus(server_url) as c:
        for q, cold in uncached_pools(c, batches, queries, n):
            for _ in range(2):  # fills (or refreshes) the cache, then reads from it
                assert top(c.conn, q, n, cache, min_df) == cold  # bitwise: the same floats, same order
            for k in (1, n, 2 * n):
                best, plain, _, outside = sums(c.conn, q, None, k=k)
                warm_best, warm, hits, _ = sums(c.conn, q, cache, min_df, k=k)
                assert warm_best[:2] == best[:2] and warm == plain
                # both bound the sentences left out (neither need be the other's: both may exceed the best of them)
                if outside is not None:
                    assert min(best[2], warm_best[2]) >= round(outside, 9) - 1e-9
            assert hits == sum(df(c.conn, t) for t in set(q) if df(c.conn, t) >= min_df)


def test_a_batch_invalidates_the_lists_it_appends_to(server_url, template_url):
    frs = [["de", "la", f"w{i % 5}", f"u{i}"] for i in range(300)]  # distinct sentences
    q = ["de", "la", "w1"]
    cache = ListCache(10**6)
    with corpus(server_url) as c:
        c.add(frs)
        top(c.conn, q, 20, cache)
        st_ = Stats()
        top(c.conn, q, 20, cache, st_=st_)
        assert st_.extra["cached"] == 300 + 300 + 60  # every list from the cache
        c.add([["de", "w1", "nouveau"]] * 1 + [["de", f"x{i}"] for i in range(40)])  # "la" untouched
        docs, pairs_of = c.truth()
        st_ = Stats()
        got = top(c.conn, q, 20, cache, st_=st_)
        assert st_.extra["cached"] == 300  # "la" only: "de" and "w1" were read again
        assert same(got, reference(docs, pairs_of, q, 20))
        new = {p for sid, ps in pairs_of.items() if docs[sid] == ["de", "w1", "nouveau"] for p in ps}
        assert new & {p for p, _ in top(c.conn, ["nouveau", "w1"], 5, cache)}
        assert got == top(c.conn, q, 20, None)
        c.conn.execute("VACUUM (FREEZE) bm25_dir")  # a frozen row keeps its xmin: still current
        st_ = Stats()
        assert top(c.conn, q, 20, cache, st_=st_) == got and st_.extra["cached"] == 341 + 300 + 61


def test_deletes_invalidate_the_lists_they_rewrite(server_url, template_url):
    frs = [["de", "la", f"w{i % 7}", f"u{i}"] + ["de"] * (i % 3) for i in range(1300)]
    q = ["de", "la", "w3"]
    cache = ListCache(10**6)
    with corpus(server_url) as c:
        c.add(frs[:700], corpus="a")
        c.add(frs[700:], corpus="b")
        top(c.conn, q, 30, cache)
        best = [p for p, _ in top(c.conn, q, 30, cache)]
        remove_pairs(c.conn, ids=best[:10])  # rewrites the lists from their first deleted posting on
        docs, pairs_of = c.truth()
        got = top(c.conn, q, 30, cache)
        assert not {p for p, _ in got} & set(best[:10])
        assert same(got, reference(docs, pairs_of, q, 30)) and got == top(c.conn, q, 30, None)
        c.finish("a")
        remove_corpus(c.conn, "a")
        docs, pairs_of = c.truth()
        got = top(c.conn, q, 30, cache)
        assert same(got, reference(docs, pairs_of, q, 30)) and got == top(c.conn, q, 30, None)
        assert sums(c.conn, q, cache)[0][:2] == sums(c.conn, q, None)[0][:2]


def test_a_disabled_cache_reads_every_list(server_url, template_url):
    frs = [["de", "la", f"w{i % 5}", f"u{i}"] for i in range(200)]
    with corpus(server_url) as c:
        c.add(frs)
        engine = BlockPreselector("fr", "en", bm25=Bm25Params(cache_postings=0))
        assert engine.cache is None and shared(0) is None
        for _ in range(2):
            st_ = Stats()
            engine.top(c.conn, ["de", "la", "w2"], 10, stats=st_)
            assert "cached" not in st_.extra and st_.postings == 200 + 200 + 40
        on = BlockPreselector("fr", "en", bm25=Bm25Params(cache_min_df=100))
        assert on.cache is shared(Bm25Params().cache_postings)  # one cache per process and setting
        on.top(c.conn, ["de", "la", "w2"], 10)
        st_ = Stats()
        assert on.top(c.conn, ["de", "la", "w2"], 10, stats=st_) == engine.top(c.conn, ["de", "la", "w2"], 10)
        assert st_.extra["cached"] == 400  # "w2" (40 postings) is below cache_min_df


def test_the_bound_on_cached_postings_holds(server_url, template_url):
    frs = [["de", "la", f"w{i % 4}", f"v{i % 3}", f"u{i}"] for i in range(400)]
    cache = ListCache(500)
    with corpus(server_url) as c:
        c.add(frs)
        docs, pairs_of = c.truth()
        for q in (["de", "w1"], ["la", "v2"], ["w0", "w1", "w2", "w3"], ["de", "la"], ["v0", "v1", "v2"]):
            got = top(c.conn, q, 15, cache)
            assert same(got, reference(docs, pairs_of, q, 15)) and got == top(c.conn, q, 15, None)
            assert cache.postings <= 500 and cache.postings == sum(len(e.ids) for e in cache.lists.values())
        assert all(len(e.ids) <= 500 for e in cache.lists.values())
        assert cache.info()["postings"] == cache.postings and cache.info()["mb"] > 0


def test_threads_share_one_cache(server_url, template_url):
    frs = [["de", "la", f"w{i % 9}", f"u{i % 40}", f"t{i}"] + ["la"] * (i % 2) for i in range(900)]
    queries = [["de", "w1", "u3"], ["la", "la", "w2"], ["u7", "de", "de", "w8"], ["w4", "la", "u1"]]
    cache = ListCache(2_000)  # smaller than the lists in all: entries come and go while threads read
    with corpus(server_url) as c:
        c.add(frs)
        expected = {tuple(q): top(c.conn, q, 25, None) for q in queries}
        bad: list[object] = []

        def run(k: int) -> None:
            with psycopg.connect(c.url, autocommit=True) as conn:
                for i in range(12):
                    q = queries[(i + k) % len(queries)]
                    with conn.transaction():
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        got = top(conn, q, 25, cache)
                    if got != expected[tuple(q)]:
                        bad.append((q, got))

        threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not bad
        assert cache.postings <= 2_000 and cache.hits > 0


@SETTINGS
@given(batches=st.lists(batch, min_size=1, max_size=3), queries=st.lists(query, min_size=1, max_size=3),
       n=st.integers(1, 12), min_df=st.sampled_from([1, 5, 30]), span=st.integers(3, 150),
       helpers=st.integers(0, 2))
def test_lists_read_by_range_from_a_warm_cache_give_the_same_floats(server_url, template_url, batches, queries, n,
                                                                    min_df, span, helpers):
    """Bm25Params.span with the cache: a list the cache holds is sliced to each range
    (never read), the commonest are added in each range only where they can matter, and
    a list read range by range is stored whole, as one read would store it, also when
    the ranges are read side by side on 1-2 more connections. The pools are the very
    floats of one uncached read, and the entries the same arrays."""
    cache, whole = ListCache(10**6), ListCache(10**6)
    with corpus(server_url) as c, ExitStack() as stack:
        extra = [stack.enter_context(psycopg.connect(c.url, autocommit=True)) for _ in range(helpers)]
        for q, cold in uncached_pools(c, batches, queries, n):
            for _ in range(2):  # fills (or refreshes) the cache range by range, then reads from it
                st_ = Stats()
                with snapshot(c.conn):
                    assert top(c.conn, q, n, cache, min_df, st_, span=span, helpers=extra) == cold
            cacheable = sum(df(c.conn, t) for t in set(q) if df(c.conn, t) >= min_df)
            if st_.extra.get("ranges", 0) > 1 and not st_.extra.get("reread"):
                assert st_.extra.get("cached", 0) >= cacheable > 0 or cacheable == 0
            sums(c.conn, q, whole, min_df)  # the same lists stored by one read
            for key, e in cache.lists.items():
                if key in whole.lists:
                    w = whole.lists[key]
                    assert (w.version, w.df) != (e.version, e.df) or (
                        np.array_equal(w.ids, e.ids) and np.array_equal(w.packed, e.packed))


@pytest.mark.parametrize("span", [0, 700])
def test_the_commonest_cached_lists_are_added_only_where_they_can_matter(server_url, template_url, span):
    """With every list cached, the commonest ones (whose contributions add up to little) are
    added only to the sentences that can still be among the best: fewer postings summed, the
    same floats, and the same pools as reading every list, for every depth asked. Read in
    ranges of 700 ids (``span``), the same in each range: those within reach of that
    range's best; also with the ranges on two connections in one snapshot."""
    frs = [["de"] + ["la"] * (i % 3 > 0) + [f"w{i % 50}", f"u{i % 300}", f"t{i}"] for i in range(3000)]
    q = ["de", "la", "w3", "u7", "u8"]
    cache = ListCache(10**6)
    with corpus(server_url) as c:
        c.add(frs)
        docs, pairs_of = c.truth()
        top(c.conn, q, 20, cache, span=span)  # fills the cache (range by range)
        assert {e.token for e in cache.lists.values()} >= {"de", "la", "w3"}
        for n in (1, 5, 20, 60):
            st_ = Stats()
            got = top(c.conn, q, n, cache, st_=st_, span=span)
            assert got == top(c.conn, q, n, None) and same(got, reference(docs, pairs_of, q, n))
            assert st_.extra["deferred"] >= 3000 + 2000 and st_.postings < 100  # "de" and "la" at least
            assert (st_.extra.get("ranges", 0) > 2) == bool(span), st_.extra
        if not span:
            best, whole, _, outside = sums(c.conn, q, cache, k=40)
            plain_best, plain_whole, _, _ = sums(c.conn, q, None, k=40)
            assert best[:2] == plain_best[:2] and whole == plain_whole and best[2] >= round(outside, 9) - 1e-9
            return
        with psycopg.connect(c.url, autocommit=True) as helper, psycopg.connect(c.url, autocommit=True) as reader:
            before = top(c.conn, q, 20, None)
            with snapshot(reader):  # two connections, one snapshot: a batch committed meanwhile is not seen
                st_ = Stats()
                assert top(reader, q, 20, cache, span=700, st_=st_, helpers=[helper]) == before
                assert st_.extra["ranges"] % 2 == 0 and st_.extra["deferred"] >= 5000
                c.add([q] * 3)
                assert top(reader, q, 20, cache, span=700, helpers=[helper]) == before
            with snapshot(reader):
                after = top(reader, q, 20, cache, span=700, helpers=[helper])
            assert after != before and after == top(c.conn, q, 20, None)


def test_two_connections_read_ranges_from_the_cache_at_any_size(server_url, template_url):
    """Bm25Params(connections=2) on a small memory: still the ranged read (one range per
    connection), with the cache, after the first query too (where one connection skips
    the extent's round trip and reads in one go); the same pools as one connection."""
    frs = [["de", "la", f"w{i % 5}", f"u{i}"] + ["x"] * (i % 7) for i in range(400)]  # lengths vary: few ties
    with corpus(server_url) as c:
        c.add(frs)
        one = BlockPreselector("fr", "en", bm25=Bm25Params(cache_min_df=100))
        two = BlockPreselector("fr", "en", bm25=Bm25Params(cache_min_df=100, connections=2))
        try:
            for q in (["de", "la", "w2"], ["la", "u7", "w3", "de"]):
                for _ in range(3):
                    st_ = Stats()
                    assert two.top(c.conn, q, 10, stats=st_) == one.top(c.conn, q, 10)
                assert st_.extra["ranges"] == 2 and st_.extra["cached"] == 800, st_.extra
        finally:
            two.close()
