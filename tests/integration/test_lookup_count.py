"""The fuzzy lookup's count filter (docs/method.md §8, scoi.core.countfilter): at a minimum
match of 50 % or more, ``scoi lookup`` returns exactly the brute force over every stored
source sentence of the direction (match % >= the minimum, ranked by match %, then BM25,
then pair id), and the BM25 pool's path, forced, returns the same.

Random corpora with near-duplicates are written through the real ingest writer
(tests/helpers/bm25.py) into a real database; the brute force is computed here: match %
by the textbook dynamic programme (tests/reference.py), BM25 from its definition.
"""

from __future__ import annotations

import random

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi import lookup as lookup_mod
from scoi.lookup import lookup
from scoi.selection.selector import Selector
from tests import reference as ref
from tests.helpers.bm25 import Corpus, corpus, reference
from tests.helpers.edits import edited
from tests.helpers.hypothesis import examples

VOCAB = ["de", "la", ",", "le", "et"] + [f"w{i}" for i in range(25)]
token = st.one_of(st.sampled_from(VOCAB[:5]), st.sampled_from(VOCAB))
sentence = st.lists(token, min_size=1, max_size=14)


def brute_force(c: Corpus, query: list[str], n: int, min_match: float, *, corpora: list[str] | None = None,
                where: dict[str, str] | None = None) -> list[tuple[int, float, float]]:
    """(pair id, match %, BM25) of the best n pairs over every stored sentence at or above
    ``min_match``: match % descending, BM25 descending, pair id ascending."""
    docs, pairs_of = c.truth(corpora=corpora, where=where)
    lowered = [t.lower() for t in query]
    bm25 = dict(reference(docs, pairs_of, lowered, 10**9))
    out = []
    for sid, toks in docs.items():
        m = ref.match_percent(query, toks)
        if m >= min_match:
            out += [(p, m, bm25.get(p, 0.0)) for p in pairs_of.get(sid, ())]
    return sorted(out, key=lambda r: (-r[1], -r[2], r[0]))[:n]


def found(result) -> list[tuple[int, float, float]]:
    return [(m.pair_id, m.match, m.score) for m in result.matches]


def assert_same(got: list[tuple[int, float, float]], want: list[tuple[int, float, float]]) -> None:
    """The same pairs in the same order with the same match %; BM25 within float noise
    (the brute force adds the terms in another order)."""
    assert [(p, m) for p, m, _ in got] == [(p, m) for p, m, _ in want]
    assert all(abs(a[2] - b[2]) < 1e-6 for a, b in zip(got, want))


def near_duplicates(rng: random.Random, base: list[list[str]], count: int) -> list[list[str]]:
    """Stored-like sentences with one to three tokens replaced, deleted or inserted."""
    return [edited(rng, rng.choice(base), VOCAB) for _ in range(count)]


@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(base=st.lists(sentence, min_size=3, max_size=30), seed=st.integers(0, 10**6),
       n=st.integers(1, 8), min_match=st.sampled_from([50.0, 60.0, 66.67, 70.0, 75.0, 80.0, 90.0, 100.0]))
def test_count_filter_lookup_equals_the_brute_force_and_the_pool_path(server_url, template_url, base, seed, n,
                                                                       min_match):
    rng = random.Random(seed)
    stored = base + near_duplicates(rng, base, len(base))
    queries = near_duplicates(rng, stored, 4) + [rng.choice(stored)] + [rng.choices(VOCAB + ["inconnu"], k=6)]
    with corpus(server_url) as c:
        c.add(stored)
        with Selector("fr", "en", url=c.url, method="bm25") as sel:
            for q in queries:
                text = " ".join(q)
                got = lookup(sel, text, n=n, min_match=min_match)
                assert got.search["path"] == "count"
                assert_same(found(got), brute_force(c, q, n, min_match))
                forced = lookup(sel, text, n=n, min_match=min_match, count_limit=0)  # the BM25 pool's path
                assert forced.search["path"] == "pool" or got.search["candidates"] == 0
                assert found(forced) == found(got)  # the same scores to the last bit: ties break alike


def test_count_filter_edge_cases_equal_the_brute_force(server_url, template_url):
    rng = random.Random(5)
    base = [rng.choices(VOCAB, k=rng.randint(1, 14)) for _ in range(40)]
    repeated = ["w1", "w1", "w1", "de", "w2", "w1", "la", "w1"]
    long = [rng.choice(VOCAB) for _ in range(118)]
    stored = base + near_duplicates(rng, base, 40) + [repeated, repeated[:-1], long, long[:-3] + ["w3"]]
    queries = [
        ["w1", "w1", "w1", "de", "w2", "w1", "la", "w1"],          # a token repeated (tf and query counts)
        ["w1", "w1", "de", "w2", "w1", "la", "w1", "w7"],
        ["inconnu", "w1", "w1", "w1", "de", "w2", "w1", "la"],      # a token in no stored sentence
        ["inconnu", "jamais", "vu"],                                 # no token stored at all
        long + ["w4"] * 4,                                           # longer than 120 tokens with the rest
        long[:-3] + ["w3"] + long[:10],
    ]
    with corpus(server_url) as c:
        c.add(stored)
        c.add(near_duplicates(rng, base, 20), corpus="other")
        c.tag_pairs()
        with Selector("fr", "en", url=c.url, method="bm25") as sel:
            for q in queries + [repeated, long, base[0], base[1]]:
                for min_match in (50.0, 70.0, 100.0):
                    got = lookup(sel, " ".join(q), n=5, min_match=min_match)
                    assert got.search["path"] == "count"
                    assert_same(found(got), brute_force(c, q, 5, min_match)), (q, min_match)
            exact = lookup(sel, " ".join(long), n=5, min_match=100)
            assert [m.match for m in exact.matches] == [100.0]
            assert lookup(sel, "inconnu jamais vu", min_match=50).matches == []
        for corpora, where in ((["other"], None), (None, {"client": "acme"}), (["random"], {"domain": "legal"})):
            with Selector("fr", "en", url=c.url, method="bm25", corpora=corpora, where=where) as sel:
                for q in base[:6]:
                    got = lookup(sel, " ".join(q), n=5, min_match=60)
                    assert_same(found(got), brute_force(c, q, 5, 60, corpora=corpora, where=where))


def test_count_filter_reads_fewer_postings_than_the_query_has(server_url, template_url, monkeypatch):
    """The most frequent tokens' lists go unread, and the count filter keeps only the
    sentences that can reach the minimum, not every sentence sharing a token; when it
    keeps many, reading the other lists too (an exact count) gives the same matches."""
    rng = random.Random(11)
    common = ["de", "la", ",", "le", "et"]
    stored = [common + rng.choices([f"r{i}" for i in range(400)], k=8) for _ in range(1500)]
    with corpus(server_url) as c:
        c.add(stored)
        with Selector("fr", "en", url=c.url, method="bm25") as sel:
            query = " ".join(stored[7][:-1] + ["w1"])
            got = lookup(sel, query, n=3)
            monkeypatch.setattr(lookup_mod, "POSTINGS_PER_CHECK", 10**9)  # always worth reading them
            recounted = lookup(sel, query, n=3)
    assert got.min_match == 70 and got.matches[0].match == 92.31
    assert got.search["postings"] <= got.search["postings_total"] - 5 * 1500  # the five common lists unread
    assert 1 <= got.search["candidates"] < 10  # of the 1,500 sentences sharing tokens with it
    assert recounted.search["postings"] == got.search["postings_total"] > got.search["postings"]
    assert found(recounted) == found(got) and recounted.search["candidates"] <= got.search["candidates"]


def test_a_stored_sentence_without_pairs_of_the_direction_is_not_a_match(server_url, template_url):
    with corpus(server_url) as c:
        c.add([["w1", "w2", "w3", "w4"]], corpus="german", tgt="de")  # a fr-de pair only
        c.add([["w9", "w8"]])
        with psycopg.connect(c.url) as conn:
            assert conn.execute("SELECT count(*) FROM sentence WHERE lang = 'fr'").fetchone()[0] == 2
        with Selector("fr", "en", url=c.url, method="bm25") as sel:
            assert lookup(sel, "w1 w2 w3 w4").matches == []
