"""Selection against a real database (docs/method.md §3-5): the SQL preselection checked against a
BM25 written here from its definition (and against bm25s), the candidate fetch, the
selector checked against the slow reference on the fetched pools, edge cases, recording.

The demo corpus is ingested once per module (``demo_db``); a second module database holds
two corpora ingested one after the other (``two_db``) for the idf/avgdl drift and the
corpus restriction.
"""

from __future__ import annotations

import json
import math
import signal
from collections import Counter
from contextlib import contextmanager

import numpy as np
import psycopg
import pytest

from scoi.core.pool import Features
from scoi.core.polynomial import LabelSpace, expand, parse_key
from scoi.selection.preselect import Stats
from scoi.selection.selector import Bm25Params, SelectionError, Selector
from tests import reference as ref
from tests.helpers.database import scratch_database
from tests.helpers.ingest import (
    DEMO,
    DEMO_TEST,
    PIPELINES,
    demo_pairs,
    ingest_inprocess,
    long_french_sentence,
    spacy_tokens,
    write_tsv,
)

K1, B = 1.5, 0.75
EXACT = Bm25Params()  # the block preselection: exact BM25's top n
METHODS = ("scoi", "scoi-word-first", "syntax", "word", "poly-topk", "bm25", "random")
TOL = 1e-9


# ------------------------------------------------------------------ exact BM25 in Python
_MOSES: dict[str, tuple] = {}


def moses_tokens(text: str, lang: str) -> list[str]:
    """W(x): sacremoses punctuation normalisation + tokenisation, no escaping."""
    if lang not in _MOSES:
        from sacremoses import MosesPunctNormalizer, MosesTokenizer

        _MOSES[lang] = (MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang))
    norm, tok = _MOSES[lang]
    return tok.tokenize(norm.normalize(text), escape=False)


class PyBm25:
    """BM25 (Lucene idf) over the distinct eligible source sentences, straight from the
    definition; ranks *pairs* by score desc then pair id."""

    def __init__(self, texts, lang: str, pairs_of: dict[str, list[int]]) -> None:
        self.docs: dict[str, list[str]] = {}
        for text in dict.fromkeys(texts):
            toks = moses_tokens(text, lang)
            if len(toks) <= 120:  # docs/method.md §1: longer sentences are never examples
                self.docs[text] = [t.lower() for t in toks]
        self.pairs_of = pairs_of
        self.n = len(self.docs)
        self.avgdl = sum(len(d) for d in self.docs.values()) / self.n
        self.df = Counter(t for d in self.docs.values() for t in set(d))

    def idf(self, tok: str) -> float:
        df = self.df[tok]
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def score_text(self, q: list[str], text: str) -> float:
        d = self.docs[text]
        tf = Counter(d)
        norm = K1 * (1 - B + B * len(d) / self.avgdl)
        # fsum: documents with the same contributions get bit-identical scores (true ties).
        return math.fsum(self.idf(t) * tf[t] / (tf[t] + norm) for t in q if tf[t])

    def ranking(self, query_tokens: list[str], allowed: set[int] | None = None) -> list[tuple[int, float]]:
        q = [t.lower() for t in query_tokens]
        qs = set(q)
        out = []
        for text, d in self.docs.items():
            if qs.isdisjoint(d):
                continue
            s = self.score_text(q, text)
            out += [(p, s) for p in self.pairs_of.get(text, []) if allowed is None or p in allowed]
        return sorted(out, key=lambda x: (-x[1], x[0]))

    def scores(self, query_tokens: list[str]) -> dict[int, float]:
        return dict(self.ranking(query_tokens))


def pairs_by_source_text(url: str, src: str, tgt: str) -> dict[str, list[int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("""
            SELECT s.text, e.pair_id FROM example e JOIN sentence s ON s.id = e.src_id
            WHERE e.src_lang = %s AND e.tgt_lang = %s ORDER BY e.pair_id""", (src, tgt)).fetchall()
    out: dict[str, list[int]] = {}
    for text, pid in rows:
        out.setdefault(text, []).append(pid)
    return out


def corpus_pairs(url: str, name: str) -> set[int]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute(
            "SELECT p.id FROM pair p JOIN corpus c ON c.id = p.corpus_id WHERE c.name = %s", (name,))}


def assert_same_ranking(got: list[tuple[int, float]], exp: list[tuple[int, float]], what: str = "") -> None:
    assert [p for p, _ in got] == [p for p, _ in exp], what
    for (p, s), (_, e) in zip(got, exp):
        assert abs(s - e) <= TOL, (what, p, s, e)


@contextmanager
def time_limit(seconds: int):
    """Fail instead of hanging (a greedy loop that never ends)."""
    def boom(*_):
        raise TimeoutError(f"took more than {seconds}s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def demo():
    return demo_pairs(DEMO)


@pytest.fixture(scope="module")
def queries():
    """20 French sentences that are not in the demo database."""
    return [fr for fr, _ in demo_pairs(DEMO_TEST)]


@pytest.fixture(scope="module")
def demo_db(server_url, template_url):
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        yield url


@pytest.fixture(scope="module")
def py_bm25(demo_db, demo):
    return PyBm25([fr for fr, _ in demo], "fr", pairs_by_source_text(demo_db, "fr", "en"))


@pytest.fixture(scope="module")
def exact_sel(demo_db):
    with Selector("fr", "en", url=demo_db, bm25=EXACT) as sel:
        yield sel


@pytest.fixture(scope="module")
def sel(demo_db):
    with Selector("fr", "en", url=demo_db) as s:
        yield s


@pytest.fixture(scope="module")
def rare_token(demo_db):
    """An alphabetic French token found in exactly one demo sentence."""
    with psycopg.connect(demo_db) as conn:
        tok = conn.execute("""SELECT token FROM vocab WHERE lang = 'fr' AND df = 1 AND token ~ '^[a-z]{6,}$'
                              ORDER BY token LIMIT 1""").fetchone()[0]
    assert moses_tokens(tok, "fr") == [tok]
    return tok


# Second database: corpus "part-a" (80 demo pairs), then corpus "part-b" (the test pairs,
# five part-a French sentences with new translations, one sentence over 120 tokens).
PART_A = 80


@pytest.fixture(scope="module")
def two_db(server_url, template_url, demo, queries, tmp_path_factory):
    d = tmp_path_factory.mktemp("two")
    part_a = demo[:PART_A]
    part_b = demo_pairs(DEMO_TEST) + [(fr, f"Another translation number {i}.") for i, (fr, _) in
                                      enumerate(part_a[:5])] + [(long_french_sentence(), "A very long sentence.")]
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [write_tsv(d / "a.tsv", part_a)], corpus="part-a")
        py_a = PyBm25([fr for fr, _ in part_a], "fr", pairs_by_source_text(url, "fr", "en"))
        with Selector("fr", "en", url=url, bm25=EXACT) as s:
            before = {q: (s.preselect(moses_tokens(q, "fr")), py_a.ranking(moses_tokens(q, "fr"))[:100])
                      for q in queries}
        ingest_inprocess(url, [write_tsv(d / "b.tsv", part_b)], corpus="part-b")
        py_ab = PyBm25([fr for fr, _ in part_a + part_b], "fr", pairs_by_source_text(url, "fr", "en"))
        yield {"url": url, "before": before, "py": py_ab, "part_b": part_b}


# ------------------------------------------------------------------ 1. BM25 parity
def test_exact_params_equal_python_bm25(exact_sel, py_bm25, queries):
    assert len(queries) >= 20
    for q in queries:
        toks = moses_tokens(q, "fr")
        got = exact_sel.preselect(toks)
        exp = py_bm25.ranking(toks)[:exact_sel.options.pool]
        assert len(got) == min(100, len(py_bm25.ranking(toks))) > 0
        assert_same_ranking(got, exp, q)


def test_query_token_repeats_count(exact_sel, py_bm25):
    toks = ["chat", "chat", "chat", "le"]
    got, exp = exact_sel.preselect(toks), py_bm25.ranking(toks)[:100]
    assert_same_ranking(got, exp)
    once = dict(exact_sel.preselect(["chat", "le"]))
    assert any(abs(once[p] - s) > 1e-6 for p, s in got if p in once)  # repeats change the scores


def test_default_params_overlap_and_exact_scores(sel, py_bm25, queries):
    overlaps = []
    for q in queries:
        toks = moses_tokens(q, "fr")
        got = sel.preselect(toks)
        exp = py_bm25.ranking(toks)[:sel.options.pool]
        overlaps.append(len({p for p, _ in got} & {p for p, _ in exp}) / len(exp))
        exact = py_bm25.scores(toks)
        for p, s in got:
            assert abs(s - exact[p]) <= TOL, (q, p)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert sum(overlaps) / len(overlaps) >= 0.9


def test_maxscore_with_a_small_budget_equals_python_bm25(demo_db, py_bm25, queries):
    """MaxScore with block bounds (read_all=0) and a rare-token budget far below the query's
    postings: the top n is still exact BM25's, ties by pair id."""
    with Selector("fr", "en", url=demo_db, bm25=Bm25Params(read_all=0, rare=100)) as s:
        for q in queries:
            toks = moses_tokens(q, "fr")
            assert_same_ranking(s.preselect(toks), py_bm25.ranking(toks)[:s.options.pool], q)


def test_bm25s_lucene_agrees(exact_sel, py_bm25, queries):
    import bm25s

    texts = list(py_bm25.docs)
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene", dtype="float64")
    retriever.index([py_bm25.docs[t] for t in texts], show_progress=False)
    for q in queries[:6]:
        toks = moses_tokens(q, "fr")
        scores = retriever.get_scores([t.lower() for t in toks])
        by_pair = {p: float(scores[i]) for i, t in enumerate(texts) for p in py_bm25.pairs_of[t]}
        got = exact_sel.preselect(toks)
        for p, s in got:
            assert abs(by_pair[p] - s) <= 1e-6, (q, p)
        ranked = sorted(by_pair.values(), reverse=True)
        tenth = ranked[9]
        sql_top = {p for p, _ in got[:10]}
        must = {p for p, s in by_pair.items() if s > tenth + 1e-6}
        may = {p for p, s in by_pair.items() if s >= tenth - 1e-6}
        assert must <= sql_top <= may, q


# ------------------------------------------------------------------ 2. drift
def test_stats_follow_a_second_ingest(two_db, queries):
    url, py = two_db["url"], two_db["py"]
    changed = 0
    for q in queries:
        before_sql, before_py = two_db["before"][q]
        assert_same_ranking(before_sql, before_py, "before: " + q)
    with Selector("fr", "en", url=url, bm25=EXACT) as s:
        for q in queries:
            toks = moses_tokens(q, "fr")
            got = s.preselect(toks)
            assert_same_ranking(got, py.ranking(toks)[:100], "after: " + q)
            old = dict(two_db["before"][q][0])
            changed += any(p in old and abs(old[p] - sc) > 1e-6 for p, sc in got)
    assert changed >= len(queries) // 2  # idf and avgdl did move
    with psycopg.connect(url) as conn:
        n_docs, total = conn.execute("SELECT n_docs, total_len FROM bm25_stats WHERE lang = 'fr'").fetchone()
    assert n_docs == py.n and total / n_docs == pytest.approx(py.avgdl, abs=1e-12)


def test_shared_sentence_gives_tied_pairs_and_long_one_is_never_a_candidate(two_db):
    url, py, part_b = two_db["url"], two_db["py"], two_db["part_b"]
    shared = part_b[-2][0]  # a part-a sentence with a second translation
    assert len(py.pairs_of[shared]) == 2
    long_text = part_b[-1][0]
    with Selector("fr", "en", url=url, bm25=EXACT) as s:
        got = s.preselect(moses_tokens(shared, "fr"))
        ids = [p for p, _ in got]
        i = ids.index(min(py.pairs_of[shared]))
        assert ids[i:i + 2] == sorted(py.pairs_of[shared]) and got[i][1] == got[i + 1][1]
        res = s.select(long_text, k=4)
    long_pairs = set(pairs_by_source_text(url, "fr", "en")[long_text])
    assert long_pairs and long_pairs.isdisjoint(c.pair_id for c in res.candidates)
    assert len(res.query_tokens) > 120 and res.selected


# ------------------------------------------------------------------ 3. candidate fetch
def test_fetch_candidates(sel, demo_db, demo, queries):
    fr_to_en = dict(demo)
    with psycopg.connect(demo_db) as conn:
        stored = {}
        for text, key, mult in conn.execute("""
                SELECT s.text, t.key, st.mult FROM sentence s JOIN sentence_term st ON st.sentence_id = s.id
                JOIN term t ON t.id = st.term_id WHERE s.lang = 'fr'"""):
            stored.setdefault(text, {})[key] = mult
    for q in queries[:5]:
        scored = sel.preselect(moses_tokens(q, "fr"))
        rows = sel.fetch(scored)
        assert len(rows) == 100
        assert [(r.pair_id, r.score) for r in rows] == scored
        for r in rows:
            assert fr_to_en[r.src] == r.tgt
            assert r.tokens == moses_tokens(r.src, "fr")
            assert sum(r.term_mults) == len(spacy_tokens(PIPELINES["fr"], r.src)) + 1  # tree over spaCy's tokens
            assert len(set(r.term_keys)) == len(r.term_keys) and all(m > 0 for m in r.term_mults)
            assert dict(zip(r.term_keys, r.term_mults)) == stored[r.src]
            assert "ROOT" in r.term_keys
    # any order of ids comes back in that order
    ids = [(p, 0.0) for p, _ in sel.preselect(moses_tokens(queries[0], "fr"))[:10]][::-1]
    assert [r.pair_id for r in sel.fetch(ids)] == [p for p, _ in ids]
    assert sel.fetch([]) == []


def test_pool_equals_preselect_then_fetch_one_pair_per_source(sel, queries):
    """The pool select() uses is the preselection then the fetch: same rows, same order, one
    pair per source sentence (the reference's pool rule over a deeper ranking)."""
    for q in queries[:10] + ["zzz-inconnu", "."]:
        toks = moses_tokens(q, "fr")
        pool = ref.distinct_pool(sel.fetch(sel.preselect(toks, n=2 * sel.options.pool)), sel.options.pool)
        assert sel.pool_of(toks).rows == pool
        assert [c.pair_id for c in sel.select(q).candidates] == [c.pair_id for c in pool]
    assert sel.pool_of([]).rows == []


# ------------------------------------------------------------------ 4. selector == reference
def reference_picks(result, method: str, similarity: str, word_overlap: str, seed: int = 0):
    """tests/reference.select on the selector's fetched pool, as (pair_id, criterion, coverage)."""
    labels = LabelSpace()
    cand_keys = [expand(dict(zip(c.term_keys, c.term_mults))) for c in result.candidates]
    q_keys = expand(result.query_terms)
    for key in q_keys + [k for keys in cand_keys for k in keys]:
        labels.register(key)
    width = len(labels.index)
    cands = [Features(terms=labels.matrix(keys, width), tokens=list(c.tokens))
             for keys, c in zip(cand_keys, result.candidates)]
    picks = ref.select(labels.matrix(q_keys, width), list(result.query_tokens), cands, k=result.k,
                       method=method, similarity=similarity, word_overlap=word_overlap, seed=seed)
    return [(result.candidates[p.index].pair_id, p.criterion, p.coverage) for p in picks]


def assert_same_picks(result, expected, what=""):
    got = [(p.pair_id, p.criterion, p.coverage) for p in result.selected]
    assert [g[:2] for g in got] == [e[:2] for e in expected], what
    for g, e in zip(got, expected):
        assert (g[2] is None) == (e[2] is None), what
        if g[2] is not None:
            assert abs(g[2] - e[2]) <= TOL, what


def test_selector_equals_reference_on_real_pools(demo_db, queries):
    """Every method x similarity x word overlap, 15 queries, pools of 25 (keeps the slow
    reference affordable). Reference runs whose settings cannot matter are shared."""
    cache: dict[tuple, list] = {}
    n_checked = 0
    for similarity in ("distance", "cosine"):
        for overlap in ("set", "multiset"):
            with Selector("fr", "en", url=demo_db, pool=25, similarity=similarity, word_overlap=overlap) as s:
                for q in queries[:15]:
                    for method in METHODS:
                        res = s.select(q, method=method)
                        assert len(res.candidates) == 25 and len(res.selected) == 4
                        key = (q, method,
                               similarity if method in ("scoi", "scoi-word-first", "syntax") else None,
                               overlap if method in ("scoi", "scoi-word-first", "word") else None)
                        if key not in cache:
                            cache[key] = reference_picks(res, method, similarity, overlap)
                        assert_same_picks(res, cache[key], f"{q} {method} {similarity} {overlap}")
                        n_checked += 1
    assert n_checked == 15 * len(METHODS) * 4


def test_selector_equals_reference_on_full_pools(sel, queries):
    """The default pool of 100, a few queries, default settings."""
    for q in queries[15:18]:
        for method in METHODS:
            res = sel.select(q, method=method)
            assert len(res.candidates) == 100
            assert_same_picks(res, reference_picks(res, method, "distance", "set"), f"{q} {method}")


# ------------------------------------------------------------------ 5. both directions
def test_both_directions_from_one_database(demo_db, demo):
    fr_side, en_side = {fr for fr, _ in demo}, {en for _, en in demo}
    en_to_fr = {en: fr for fr, en in demo}
    py_en = PyBm25([en for _, en in demo], "en", pairs_by_source_text(demo_db, "en", "fr"))
    with Selector("en", "fr", url=demo_db, bm25=EXACT) as s:
        q = "The cat is sleeping on the sofa near the window."
        res = s.select(q, k=4)
        assert res.src_lang == "en" and res.tgt_lang == "fr"
        assert_same_ranking([(c.pair_id, c.score) for c in res.candidates],
                            py_en.ranking(moses_tokens(q, "en"))[:100])
        assert len(res.selected) == 4
        for p in res.selected:
            assert p.src in en_side and p.tgt in fr_side and en_to_fr[p.src] == p.tgt
        for c in res.candidates:
            assert c.tokens == moses_tokens(c.src, "en")
    with Selector("fr", "en", url=demo_db) as s:
        res_fr = s.select("Le chat dort sur le canapé.", k=4)
    # the same pair ids serve both directions
    assert {p.src for p in res_fr.selected} <= fr_side
    assert set(pairs_by_source_text(demo_db, "en", "fr").keys()) == en_side


# ------------------------------------------------------------------ 6. edge cases
def test_fewer_candidates_than_k(sel, rare_token, demo):
    res = sel.select(rare_token, k=4)
    assert len(res.candidates) == 1
    assert rare_token in [t.lower() for t in res.candidates[0].tokens]
    assert [p.pair_id for p in res.selected] == [res.candidates[0].pair_id]
    assert res.selected[0].criterion == "syntax"


def test_random_fill(demo_db, rare_token, demo):
    fr_to_en = dict(demo)

    def run(seed):
        with Selector("fr", "en", url=demo_db, fill="random", seed=seed) as s:
            return s.select(rare_token, k=4)

    res = run(7)
    assert len(res.selected) == 4
    assert res.selected[0].pair_id == res.candidates[0].pair_id and res.selected[0].criterion != "fill"
    fills = res.selected[1:]
    assert [p.criterion for p in fills] == ["fill"] * 3 and all(p.coverage is None for p in fills)
    assert len({p.pair_id for p in res.selected}) == 4
    assert all(fr_to_en[p.src] == p.tgt for p in fills)
    again = run(7)
    assert [p.pair_id for p in again.selected] == [p.pair_id for p in res.selected]
    others = {tuple(p.pair_id for p in run(seed).selected) for seed in range(4)}
    assert len(others) > 1  # the seed matters
    assert "fill:random" in res.signature and "seed:7" in res.signature


def test_query_sharing_no_token(demo_db):
    with Selector("fr", "en", url=demo_db) as s:
        res = s.select("Xqzvw Brplk", k=4)
        assert res.candidates == [] and res.selected == []
        assert res.to_dict()["candidates"] == [] and res.to_dict()["selected"] == []
    with Selector("fr", "en", url=demo_db, fill="random") as s:
        res = s.select("Xqzvw Brplk", k=3)
        assert res.candidates == [] and [p.criterion for p in res.selected] == ["fill"] * 3


def test_one_token_query(sel, demo_db):
    with psycopg.connect(demo_db) as conn:
        tok, df = conn.execute("""SELECT token, df FROM vocab WHERE lang = 'fr' AND df BETWEEN 3 AND 20
                                  AND token ~ '^[a-z]{4,}$' ORDER BY df DESC, token LIMIT 1""").fetchone()
    res = sel.select(tok, k=4)
    assert res.query_tokens == [tok]
    assert len(res.candidates) == df
    assert all(tok in [t.lower() for t in c.tokens] for c in res.candidates)
    assert_same_picks(res, reference_picks(res, "scoi", "distance", "set"))
    assert len(res.selected) == 4


def test_query_longer_than_120_tokens(demo_db):
    text = long_french_sentence()
    with Selector("fr", "en", url=demo_db, pool=10) as s:
        res = s.select(text, k=4)
    assert len(res.query_tokens) > 120
    assert len(res.candidates) == 10 and len(res.selected) == 4
    assert_same_picks(res, reference_picks(res, "scoi", "distance", "set"))


def test_direction_without_corpus(demo_db):
    with pytest.raises(SelectionError) as e:
        Selector("fr", "de", url=demo_db)
    msg = str(e.value)
    assert "fr-de" in msg and "scoi ingest" in msg and "--src fr --tgt de" in msg


def test_unknown_corpus(demo_db):
    with pytest.raises(SelectionError, match="nope"):
        Selector("fr", "en", url=demo_db, corpora=["nope"])


def test_bad_options(demo_db):
    with pytest.raises(ValueError):
        Selector("fr", "en", url=demo_db, method="nope")
    with pytest.raises(SelectionError):
        Selector("fr", "en", url=demo_db, fill="always")
    with pytest.raises(SelectionError):
        Selector("fr", "en", url=demo_db, pool=0)


def test_pool_smaller_than_k_never_loops(demo_db, queries):
    with Selector("fr", "en", url=demo_db, pool=3) as s, time_limit(60):
        for method in METHODS:
            res = s.select(queries[0], k=10, method=method)
            assert len(res.candidates) == 3
            assert sorted(p.pair_id for p in res.selected) == sorted(c.pair_id for c in res.candidates)
        assert s.select(queries[0], k=0).selected == []
        assert s.select(queries[0], method="zero").selected == []


def test_corpus_restriction(two_db, queries):
    url, py = two_db["url"], two_db["py"]
    part_a, part_b = corpus_pairs(url, "part-a"), corpus_pairs(url, "part-b")
    assert part_a and part_b and part_a.isdisjoint(part_b)
    with Selector("fr", "en", url=url, corpora=["part-a"], bm25=EXACT) as s:
        for q in queries[:5]:
            res = s.select(q, k=4)
            assert {c.pair_id for c in res.candidates} <= part_a
            assert_same_ranking([(c.pair_id, c.score) for c in res.candidates],
                                py.ranking(res.query_tokens, allowed=part_a)[:100], q)
    with Selector("fr", "en", url=url, corpora=["part-b"], fill="random") as s:
        res = s.select("Xqzvw Brplk", k=4)
        assert len(res.selected) == 4 and {p.pair_id for p in res.selected} <= part_b


def test_corpus_restriction_fills_the_pool(two_db, demo):
    """Restricted to a corpus, the pool holds the best pairs *of that corpus*, even when
    other corpora score higher (the depth cut must not be taken before the restriction)."""
    url, py = two_db["url"], two_db["py"]
    part_b = corpus_pairs(url, "part-b")
    q = demo[3][0]  # a part-a sentence: its best matches are part-a pairs
    with Selector("fr", "en", url=url, corpora=["part-b"], pool=5, bm25=Bm25Params(read_all=0)) as s:  # MaxScore
        got = s.preselect(moses_tokens(q, "fr"))
    exp = py.ranking(moses_tokens(q, "fr"), allowed=part_b)
    assert len(exp) >= 5
    assert_same_ranking(got, exp[:5])


def test_metadata_filter_restricts_the_pool_like_python_bm25_over_the_subset(two_db, demo, queries):
    """--where domain=legal: the pool of either path (every list read, MaxScore) is exact BM25's top n over the pairs
    holding that metadata (every third pair here, across both corpora), even when other
    pairs score higher; random fills come from those pairs too."""
    url, py = two_db["url"], two_db["py"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE pair SET meta = jsonb_build_object('domain', 'legal') WHERE id % 3 = 0")
        legal = {r[0] for r in conn.execute("SELECT id FROM pair WHERE meta @> '{\"domain\": \"legal\"}'")}
    try:
        for bm25 in (Bm25Params(), Bm25Params(read_all=0, rare=50)):  # every list read, and MaxScore
            with Selector("fr", "en", url=url, where={"domain": "legal"}, pool=10, bm25=bm25) as s:
                for q in queries[:5] + [demo[3][0]]:
                    toks = moses_tokens(q, "fr")
                    got = s.preselect(toks)
                    assert_same_ranking(got, py.ranking(toks, allowed=legal)[:10], q)
                assert "where:domain=legal" in s.signature("scoi", 4)
        with Selector("fr", "en", url=url, where={"domain": "legal"}, fill="random") as s:
            res = s.select("Xqzvw Brplk", k=4)
            assert len(res.selected) == 4 and {p.pair_id for p in res.selected} <= legal
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE pair SET meta = '{}' WHERE meta <> '{}'")


def test_lists_read_one_id_range_at_a_time_give_the_same_pools_with_bounded_sums(two_db, demo, queries):
    """Bm25Params.span: lists spanning more sentence ids than the span are streamed one
    range at a time and cut to each range's best 2n before the next (a bounded memory
    per query at any size). The pools equal Python BM25's, also restricted by metadata
    to every third pair (where the best 2n sentences map to too few pairs and the lists
    are read again whole), and no sums array held is longer than the span."""
    url, py = two_db["url"], two_db["py"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE pair SET meta = jsonb_build_object('domain', 'legal') WHERE id % 3 = 0")
        legal = {r[0] for r in conn.execute("SELECT id FROM pair WHERE meta @> '{\"domain\": \"legal\"}'")}
    reread = []
    try:
        for where, allowed in ((None, None), ({"domain": "legal"}, legal)):
            with Selector("fr", "en", url=url, where=where, pool=10, bm25=Bm25Params(span=7)) as s:
                for q in queries[:8] + [demo[3][0]]:
                    toks = moses_tokens(q, "fr")
                    st = Stats()
                    got = s.engine.top(s.reader, toks, 10, stats=st)
                    assert_same_ranking(got, py.ranking(toks, allowed=allowed)[:10], q)
                    assert st.extra["ranges"] > 1 and 0 < st.extra["cells"] <= 7, st.extra
                    reread.append((where is not None, st.extra.get("reread", False)))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE pair SET meta = '{}' WHERE meta <> '{}'")
    assert not any(r for filtered, r in reread if not filtered) and any(r for filtered, r in reread if filtered)


def test_a_small_memory_skips_the_extent_round_trip_after_its_first_query(demo_db, queries):
    """Lists within half a span: the first query asks where its lists lie and reads them
    in one go; the next ones skip that question (one round trip fewer), same pools."""
    with Selector("fr", "en", url=demo_db, pool=10) as s:
        toks = moses_tokens(queries[0], "fr")
        first, again = Stats(), Stats()
        a = s.engine.top(s.reader, toks, 10, stats=first)
        b = s.engine.top(s.reader, toks, 10, stats=again)
    assert a == b and "ranges" not in first.extra
    assert 0 < s.engine.extent < Bm25Params().span // 2
    assert again.round_trips == first.round_trips - 1


# ------------------------------------------------------------------ 7. recording
def _l1(a: str, b: str) -> int:
    x, y = parse_key(a), parse_key(b)
    return sum(abs(x.get(n, 0) - y.get(n, 0)) for n in set(x) | set(y))


def test_recording_and_views(demo_db, queries):
    with Selector("fr", "en", url=demo_db, pool=30) as s:
        res = s.select(queries[10], k=4, record=True)
    sid = res.selection_id
    assert isinstance(sid, int)
    with psycopg.connect(demo_db) as conn:
        row = conn.execute("""SELECT query, src_lang, tgt_lang, method, k, params, signature, query_tokens
                              FROM selection WHERE id = %s""", (sid,)).fetchone()
        cands = conn.execute("SELECT rank, pair_id, score FROM selection_candidate WHERE selection_id = %s "
                             "ORDER BY rank", (sid,)).fetchall()
        picks = conn.execute("SELECT position, pair_id, criterion, coverage FROM selection_pick "
                             "WHERE selection_id = %s ORDER BY position", (sid,)).fetchall()
        qterms = dict(conn.execute("SELECT key, mult FROM selection_query_term WHERE selection_id = %s",
                                   (sid,)).fetchall())
        # the recorded exponent vectors use the same dimensions as the stored terms
        dists = conn.execute("""SELECT q.key, q.exps <+> t.exps FROM selection_query_term q
                                JOIN term t ON t.key = q.key
                                JOIN parser p ON p.id = t.parser_id AND p.lang = 'fr'
                                WHERE q.selection_id = %s""", (sid,)).fetchall()
        cov = conn.execute("""SELECT query_term, mult, best_position, best_pair_id, best_example_term, similarity
                              FROM selection_term_coverage WHERE selection_id = %s""", (sid,)).fetchall()
        words = conn.execute("""SELECT position, pair_id, query_words, new_words FROM selection_word_contribution
                                WHERE selection_id = %s ORDER BY position""", (sid,)).fetchall()
    assert row[:5] == (res.query, "fr", "en", "scoi", 4)
    assert row[5] == json.loads(json.dumps(res.params)) and row[6] == res.signature
    assert list(row[7]) == res.query_tokens
    assert [(r, p) for r, p, _ in cands] == [(i, c.pair_id) for i, c in enumerate(res.candidates, 1)]
    assert all(abs(sc - c.score) <= TOL for (_, _, sc), c in zip(cands, res.candidates))
    assert [(pos, pid, crit) for pos, pid, crit, _ in picks] == \
        [(i, p.pair_id, p.criterion) for i, p in enumerate(res.selected, 1)]
    assert all(abs(c - p.coverage) <= TOL for (*_, c), p in zip(picks, res.selected))
    assert qterms == res.query_terms
    assert dists and all(d == 0 for _, d in dists)

    terms_of = {c.pair_id: c.term_keys for c in res.candidates}
    tokens_of = {c.pair_id: c.tokens for c in res.candidates}
    pick_ids = [p.pair_id for p in res.selected]
    assert sorted(r[0] for r in cov) == sorted(res.query_terms)  # one row per query term
    for qkey, mult, pos, pid, ex_term, similarity in cov:
        best = min(_l1(qkey, t) for p in pick_ids for t in terms_of[p])
        assert mult == res.query_terms[qkey]
        assert float(similarity) == pytest.approx(round(1 / (1 + best), 4), abs=1e-12)
        assert pick_ids[pos - 1] == pid and ex_term in terms_of[pid] and _l1(qkey, ex_term) == best
        first = min(i for i, p in enumerate(pick_ids, 1) if any(_l1(qkey, t) == best for t in terms_of[p]))
        assert pos == first

    qwords = set(res.query_tokens)
    seen: set[str] = set()
    assert [(pos, pid) for pos, pid, _, _ in words] == list(enumerate(pick_ids, 1))
    for _, pid, found, new in words:
        expected = qwords & set(tokens_of[pid])
        assert sorted(found) == sorted(expected)
        assert sorted(new) == sorted(expected - seen)
        seen |= expected
    assert any(len(w[2]) for w in words)


def test_recording_a_fill_pick(demo_db, rare_token):
    with Selector("fr", "en", url=demo_db, fill="random") as s:
        res = s.select(rare_token, k=3, record=True)
    with psycopg.connect(demo_db) as conn:
        picks = conn.execute("SELECT pair_id, criterion, coverage FROM selection_pick WHERE selection_id = %s "
                             "ORDER BY position", (res.selection_id,)).fetchall()
        n_cov = conn.execute("SELECT count(*) FROM selection_term_coverage WHERE selection_id = %s",
                             (res.selection_id,)).fetchone()[0]
    assert [(p.pair_id, p.criterion) for p in res.selected] == [(p, c) for p, c, _ in picks]
    assert [c for _, c, _ in picks][1:] == ["fill", "fill"] and picks[1][2] is None
    assert n_cov == len(res.query_terms)


def test_term_matrices_are_exponent_vectors(sel, queries):
    """The selector's shared term table holds the exponents of each key (used by coverage)."""
    res = sel.select(queries[0], k=1)
    table = sel.query.terms.matrix
    labels = sel.query.labels.index
    for key in res.candidates[0].term_keys:
        row = table[sel.query.terms.ids[key]]
        want = np.zeros(table.shape[1], dtype=np.int64)
        for name, power in parse_key(key).items():
            want[labels[name]] = power
        assert row.tolist() == want.tolist()


def test_packed_pool_holds_each_candidates_terms(sel, queries):
    """coverage_inputs packs every fetched candidate's terms (each key repeated by its
    multiplicity, in the stored order) and tokens, candidate by candidate."""
    for q in queries[:5]:
        res = sel.select(q, k=2)
        query, _, pool, _ = sel.query.coverage_inputs(res.query_terms, res.candidates)
        labels = sel.query.labels.index
        assert len(pool) == len(res.candidates)
        for cand, row in zip(pool, res.candidates):
            keys = [k for k, m in zip(row.term_keys, row.term_mults) for _ in range(m)]
            want = np.zeros((len(keys), pool.table.shape[1]), dtype=np.int64)
            for i, key in enumerate(keys):
                for name, power in parse_key(key).items():
                    want[i, labels[name]] = power
            assert cand.terms.tolist() == want.tolist() and cand.tokens == row.tokens
        assert len(query) == sum(res.query_terms.values())


def test_migration_0004_rebuilds_the_index_of_an_existing_database(server_url, template_url, queries):
    """A database ingested before 0004 (downgraded to 0003: no signatures, no forward
    index) gets both from its postings on upgrade, consistent with what ingest writes, and
    the preselection returns what it returned before the round trip."""
    from scoi.db.engine import get_engine
    from scoi.db.migrate import current_revision, downgrade, head_revision, upgrade
    from tests.helpers.ingest import assert_consistent

    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        with Selector("fr", "en", url=url) as s:
            before = [s.preselect(s.query.analyze(q)[0]) for q in queries]
        engine = get_engine(url)
        downgrade(engine, "0003")
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT to_regclass('bm25_doc')").fetchone()[0] is None
            assert conn.execute("SELECT count(*) FROM information_schema.columns "
                                "WHERE table_name = 'posting' AND column_name = 'sig'").fetchone()[0] == 0
        upgrade(engine)
        assert current_revision(engine) == head_revision()
        assert_consistent(url)
        # 0007 marks every sentence stored before it as the old analysis scheme: selection
        # asks for `scoi reanalyze`, which leaves the BM25 index alone.
        with pytest.raises(SelectionError, match="scoi reanalyze --lang fr"):
            Selector("fr", "en", url=url)
        from ingest.reanalyze import ReanalyzeOptions, reanalyze

        assert reanalyze(ReanalyzeOptions(workers=0, parsers=dict(PIPELINES)), url).reanalyzed == 2 * len(demo_pairs())
        assert_consistent(url)
        with Selector("fr", "en", url=url) as s:
            after = [s.preselect(s.query.analyze(q)[0]) for q in queries]
        engine.dispose()
    assert after == before
