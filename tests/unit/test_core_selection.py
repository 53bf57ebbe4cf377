"""Coverage (docs/method.md §3), greedy selection (§4) and baselines (§7): hand-worked values, and
the fast numpy path checked against the literal reference in ``tests/reference.py``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi.core.coverage import (
    COV_TOL,
    argmax_first,
    improves,
    l1_matrix,
    poly_distance,
    syn_set_cov,
    term_similarity,
    word_set_cov,
)
from scoi.core.greedy import select
from scoi.core.methods import EMBEDDING_METHODS, METHODS
from scoi.core.pool import Features, PackedCandidates, Choice
from tests import reference as ref
from tests.helpers.hypothesis import examples

# Label dimensions: ROOT, nsubj, punct, advmod.
R1, R2, R2_NSUBJ, R2_PUNCT, R2_ADVMOD = [1, 0, 0, 0], [2, 0, 0, 0], [2, 1, 0, 0], [2, 0, 1, 0], [2, 0, 0, 1]
CATS_SLEEP = np.array([R1, R2, R2_NSUBJ, R2_PUNCT])  # docs/method.md §2: "Cats sleep."
GO_HOME = np.array([R1, R2, R2_ADVMOD])  # go(ROOT) -> home(advmod)
STOP = np.array([R1, R2, R2_PUNCT])  # stop(ROOT) -> !(punct)


def approx(x: Fraction | float) -> object:
    return pytest.approx(float(x), abs=1e-12)


# --- hand-computed coverage -------------------------------------------------------------


def test_term_similarity_values() -> None:
    sim = term_similarity(np.array([R2_NSUBJ]), np.array([R2, R2_ADVMOD, [0, 0, 0, 0]]))
    assert sim[0].tolist() == [approx(Fraction(1, 2)), approx(Fraction(1, 3)), approx(Fraction(1, 4))]
    cos = term_similarity(np.array([R2_NSUBJ]), np.array([R2, R2_ADVMOD, [0, 0, 0, 0]]), "cosine")
    assert cos[0].tolist() == [approx(2 / math.sqrt(5)), approx(4 / 5), 0.0]


def test_syn_set_cov_by_hand() -> None:
    # s = ROOT, ROOT^2 matched exactly; ROOT^2·nsubj and ROOT^2·punct are 1 away from ROOT^2.
    assert syn_set_cov(CATS_SLEEP, [GO_HOME]) == approx(Fraction(1 + 1 + Fraction(1, 2) + Fraction(1, 2), 4))
    # Adding STOP covers ROOT^2·punct exactly: (1 + 1 + 1/2 + 1) / 4.
    assert syn_set_cov(CATS_SLEEP, [GO_HOME, STOP]) == approx(Fraction(7, 8))
    assert syn_set_cov(CATS_SLEEP, [CATS_SLEEP]) == 1.0
    assert syn_set_cov(CATS_SLEEP, []) == 0.0
    # Query multiset: a repeated term counts twice. (R1 exact, R2_NSUBJ twice at 1/2) / 3.
    assert syn_set_cov(np.array([R1, R2_NSUBJ, R2_NSUBJ]), [np.array([R1, R2])]) == approx(Fraction(2, 3))
    # Cosine: ROOT^2·nsubj / ROOT^2·punct best match ROOT^2 with 2/sqrt(5).
    assert syn_set_cov(CATS_SLEEP, [GO_HOME], "cosine") == approx(0.5 + 1 / math.sqrt(5))


def test_word_set_cov_by_hand() -> None:
    assert word_set_cov(["Cats", "sleep", "."], [["Dogs", "sleep", "."]]) == approx(Fraction(2, 3))
    assert word_set_cov(["Cats", "sleep", "."], [["cats"]]) == 0.0  # case-sensitive
    assert word_set_cov([], [["a"]]) == 0.0
    assert word_set_cov([], [["a"]], "multiset") == 0.0
    x = ["the", "cat", "saw", "the", "dog", "."]
    e1, e2 = ["the", "end", "."], ["the", "the", "the"]
    assert word_set_cov(x, [e1]) == approx(Fraction(2, 5))  # {the, .} of 5 unique
    assert word_set_cov(x, [e1, e2]) == approx(Fraction(2, 5))
    assert word_set_cov(x, [e1], "multiset") == approx(Fraction(2, 6))  # min(2,1) + 1
    assert word_set_cov(x, [e1, e2], "multiset") == approx(Fraction(3, 6))  # min(2,4) + 1
    assert word_set_cov(x, [], "multiset") == 0.0


def test_poly_distance_by_hand() -> None:
    # P -> Q: 0 + 0 + 1 + 1; Q -> P: 0 + 0 + 1; over 4 + 3 terms.
    assert poly_distance(CATS_SLEEP, GO_HOME) == 3 / 7  # exact: integer numerator / integer count
    assert poly_distance(GO_HOME, CATS_SLEEP) == 3 / 7
    assert poly_distance(CATS_SLEEP, CATS_SLEEP) == 0.0
    assert poly_distance(CATS_SLEEP, np.zeros((0, 4))) == math.inf


def test_tie_rule() -> None:
    assert argmax_first([0.5, 0.75, 0.75 + COV_TOL / 4, 0.1]) == 1
    assert argmax_first([-math.inf, 0.25, 0.25]) == 1
    assert not improves(0.5 + COV_TOL / 2, 0.5)
    assert improves(0.5 + 1e-9, 0.5)
    assert improves(0.0, -math.inf)


# --- hand-worked greedy runs ------------------------------------------------------------

QUERY_TOKENS = ["Cats", "sleep", "."]
POOL = [
    Features(CATS_SLEEP, ["Dogs", "bark", "!"]),  # A: syntax 1, word 0
    Features(GO_HOME, ["Cats", "sleep", "."]),  # B: syntax 3/4, word 1
    Features(STOP, ["Stop", "!"]),  # C: syntax 7/8, word 0
    Features(np.array([R1, R2]), ["Cats", "."]),  # D: syntax 3/4, word 2/3
    Features(np.array([R1, R2, R2_NSUBJ]), ["sleep"]),  # E: syntax 7/8, word 1/3
]


@pytest.mark.parametrize("impl", [select, ref.select], ids=["fast", "reference"])
def test_scoi_run_with_resets(impl) -> None:
    # 1 syntax: A covers everything (1). 2 word, Z_cur={A}: B adds all words (1).
    # 3 syntax, Z_cur={A,B}: nothing beats 1 -> reset; from scratch C and E tie at 7/8 -> C.
    # 4 word, Z_cur={C}, best 1: D gives only 2/3 -> reset; from scratch D (2/3) beats E (1/3).
    picks = impl(CATS_SLEEP, QUERY_TOKENS, POOL, k=4, method="scoi")
    assert [(p.index, p.criterion) for p in picks] == [(0, "syntax"), (1, "word"), (2, "syntax"), (3, "word")]
    assert [p.coverage for p in picks] == [approx(1), approx(1), approx(Fraction(7, 8)), approx(Fraction(2, 3))]


@pytest.mark.parametrize("impl", [select, ref.select], ids=["fast", "reference"])
def test_syntax_only_run(impl) -> None:
    # A (1); {A,*} = 1 -> reset, C (7/8, first of the tie with E); {C,E} covers nsubj -> E (1);
    # {C,E,*} = 1 -> reset, B (3/4, tie with D); {B,D}: D adds nothing -> reset, D (3/4).
    picks = impl(CATS_SLEEP, QUERY_TOKENS, POOL, k=9, method="syntax")
    assert [p.index for p in picks] == [0, 2, 4, 1, 3]
    assert {p.criterion for p in picks} == {"syntax"}
    assert [p.coverage for p in picks] == [approx(x) for x in (1, Fraction(7, 8), 1, Fraction(3, 4), Fraction(3, 4))]


@pytest.mark.parametrize("impl", [select, ref.select], ids=["fast", "reference"])
def test_word_first_run(impl) -> None:
    # 1 word: B (1). 2 syntax, Z_cur={B}: {B,A} = 1 -> A. 3 word, Z_cur={B,A}: 1 not > 1
    # -> reset; from scratch D (2/3). 4 syntax, best 1, Z_cur={D}: {D,C} = {D,E} = 7/8 -> reset;
    # from scratch C and E tie at 7/8 -> C.
    picks = impl(CATS_SLEEP, QUERY_TOKENS, POOL, k=4, method="scoi-word-first")
    assert [(p.index, p.criterion) for p in picks] == [(1, "word"), (0, "syntax"), (3, "word"), (2, "syntax")]


def test_baselines_by_hand() -> None:
    assert select(CATS_SLEEP, QUERY_TOKENS, POOL, k=2, method="bm25") == [Choice(0, "bm25", None), Choice(1, "bm25", None)]
    assert select(CATS_SLEEP, QUERY_TOKENS, POOL, method="zero") == []
    # Distances: A 0, B 3/7, C 1/7 (only nsubj 1 away), D (2 + 0)/6 = 1/3, E (1 + 0)/7 = 1/7.
    poly = select(CATS_SLEEP, QUERY_TOKENS, POOL, k=4, method="poly-topk")
    assert [(p.index, p.criterion) for p in poly] == [(0, "poly"), (2, "poly"), (4, "poly"), (3, "poly")]
    assert [p.coverage for p in poly] == [0.0, 1 / 7, 1 / 7, 2 / 6]


def test_random_is_deterministic() -> None:
    pool = [Features(np.array([R1]), []) for _ in range(30)]
    a = select(CATS_SLEEP, [], pool, k=4, method="random", seed=7)
    assert a == select(CATS_SLEEP, [], pool, k=4, method="random", seed=7)
    assert len({p.index for p in a}) == 4 and all(p.criterion == "random" for p in a)
    assert [p.index for p in a] == np.random.default_rng(7).permutation(30)[:4].tolist()
    assert a != select(CATS_SLEEP, [], pool, k=4, method="random", seed=8)
    small = select(CATS_SLEEP, [], pool[:3], k=4, method="random", seed=1)
    assert sorted(p.index for p in small) == [0, 1, 2]


def test_poly_topk_is_deterministic() -> None:
    a = select(CATS_SLEEP, QUERY_TOKENS, POOL * 3, k=6, method="poly-topk")
    assert a == select(CATS_SLEEP, QUERY_TOKENS, POOL * 3, k=6, method="poly-topk")
    assert [p.index for p in a] == [0, 5, 10, 2, 4, 7]  # ties keep candidate order


# The embedding methods need vectors besides terms and tokens: tests/unit/test_fuzzy.py.
# ctq: a trained model ranks its pool (scoi.ctq), not scoi.core.greedy (tests/unit/test_ctq_core.py).
TERM_METHODS = [m for m in METHODS if m not in EMBEDDING_METHODS and m != "ctq"]


@pytest.mark.parametrize("method", TERM_METHODS)
def test_edge_cases(method: str) -> None:
    assert select(CATS_SLEEP, QUERY_TOKENS, POOL, k=0, method=method) == []
    assert select(CATS_SLEEP, QUERY_TOKENS, [], k=4, method=method) == []
    small = select(CATS_SLEEP, QUERY_TOKENS, POOL[:2], k=4, method=method)
    assert sorted(p.index for p in small) == ([] if method == "zero" else [0, 1])
    no_tokens = select(CATS_SLEEP, [], POOL, k=4, method=method)
    assert no_tokens == ref.select(CATS_SLEEP, [], POOL, k=4, method=method)
    assert len(no_tokens) == (0 if method == "zero" else 4)


def test_rejects_unknown_options() -> None:
    for kwargs in ({"method": "nope"}, {"similarity": "l2"}, {"word_overlap": "bag"}, {"k": -1}):
        with pytest.raises(ValueError):
            select(CATS_SLEEP, QUERY_TOKENS, POOL, **kwargs)


# --- fast == reference on random tie-heavy inputs ---------------------------------------

VOCAB = ["a", "b", "c", "A", "."]


@st.composite
def problems(draw):
    d = draw(st.integers(3, 6))
    vec = st.lists(st.integers(0, 2), min_size=d, max_size=d)
    terms = lambda lo: st.lists(vec, min_size=lo, max_size=5).map(  # noqa: E731
        lambda rows: np.array(rows, dtype=np.int32).reshape(len(rows), d)
    )
    tokens = st.lists(st.sampled_from(VOCAB), max_size=5)
    query = draw(terms(1))
    pool = draw(st.lists(st.builds(Features, terms(0), tokens), max_size=7))
    return query, draw(tokens), pool


def same_picks(fast: list[Choice], slow: list[Choice]) -> None:
    assert [(p.index, p.criterion) for p in fast] == [(p.index, p.criterion) for p in slow]
    for f, s in zip(fast, slow):
        if s.coverage is None or math.isinf(s.coverage):
            assert f.coverage == s.coverage
        else:
            assert f.coverage == pytest.approx(s.coverage, abs=1e-9)


@pytest.mark.parametrize("method", TERM_METHODS)
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    problem=problems(),
    k=st.integers(0, 8),
    similarity=st.sampled_from(["distance", "cosine"]),
    overlap=st.sampled_from(["set", "multiset"]),
    seed=st.integers(0, 3),
)
def test_fast_matches_reference(method, problem, k, similarity, overlap, seed) -> None:
    """Every method picks what the literal reference picks, ties and all (tie-heavy inputs:
    exponents 0-2, five tokens), whether the pool is a list of candidates or packed as the
    selector hands it over (with and without the table's norms and the query's row ids)."""
    query, tokens, pool = problem
    args = (query, tokens, pool, k, method, similarity, overlap, seed)
    expected = ref.select(*args)
    fast = select(*args)
    same_picks(fast, expected)
    table, pool_packed, q_ids = packed(query, pool)
    same_picks(select(query, tokens, pool_packed, k, method, similarity, overlap, seed,
                      term_table=table, query_term_ids=q_ids), expected)
    bare = PackedCandidates(table, pool_packed.term_ids, pool_packed.offsets, pool_packed.tokens)
    same_picks(select(query, tokens, bare, k, method, similarity, overlap, seed), expected)
    assert len({p.index for p in fast}) == len(fast) == (0 if method == "zero" else min(k, len(pool)))
    # The selector's path: terms as rows of a shared table, distinct terms found by row id.
    table, ids = with_term_table(query, [c.terms for c in pool])
    by_id = [Features(c.terms, c.tokens, i) for c, i in zip(pool, ids[1:])]
    same_picks(select(query, tokens, by_id, k, method, similarity, overlap, seed,
                      term_table=table, query_term_ids=ids[0]), fast)


def packed(query: np.ndarray, pool: list[Features]) -> tuple[np.ndarray, PackedCandidates, np.ndarray]:
    """The problem as the selector hands it over: one shared table (rows in shuffled order),
    the query's row ids, and the candidates packed as row ids with offsets."""
    table, ids = with_term_table(query, [c.terms for c in pool])
    sizes = [len(i) for i in ids[1:]]
    flat = np.concatenate(ids[1:]) if pool else np.zeros(0, dtype=np.int64)
    norms = table.sum(axis=1) if len(table) else np.zeros(0, dtype=np.int64)
    return table, PackedCandidates(table, flat, np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))),
                             [list(c.tokens) for c in pool], norms), ids[0]


def with_term_table(*term_arrays) -> tuple[np.ndarray, list[np.ndarray]]:
    """One table of the distinct term vectors (in a shuffled order, so row ids do not
    follow vector order) and, per input array, its rows' ids in that table."""
    arrays = [np.asarray(a) for a in term_arrays[:1]] + list(term_arrays[1])
    d = arrays[0].shape[1]
    rows = sorted({tuple(r) for a in arrays for r in a.reshape(-1, d).tolist()}, key=lambda r: hash(r) % 7919)
    index = {r: i for i, r in enumerate(rows)}
    table = np.array(rows, dtype=np.int64).reshape(len(rows), d)
    return table, [np.array([index[tuple(r)] for r in a.reshape(-1, d).tolist()], dtype=np.int64) for a in arrays]


@settings(max_examples=examples(200), deadline=None)
@given(problem=problems(), similarity=st.sampled_from(["distance", "cosine"]))
def test_coverage_functions_match_reference(problem, similarity) -> None:
    query, tokens, pool = problem
    terms = [c.terms for c in pool]
    toks = [list(c.tokens) for c in pool]
    assert syn_set_cov(query, terms, similarity) == pytest.approx(ref.syn_set_cov(query, terms, similarity), abs=1e-12)
    for overlap in ("set", "multiset"):
        assert word_set_cov(tokens, toks, overlap) == ref.word_set_cov(tokens, toks, overlap)
    for t in terms:
        assert poly_distance(query, t) == ref.poly_distance(query, t)


@settings(max_examples=examples(300), deadline=None)
@given(
    dims=st.integers(1, 8),
    a_rows=st.integers(0, 6),
    b_rows=st.integers(0, 6),
    low=st.sampled_from([0, 0, -3]),  # negative entries (not term vectors) take the other path
    high=st.integers(1, 9),
    data=st.data(),
)
def test_l1_matrix_is_the_literal_l1(dims, a_rows, b_rows, low, high, data) -> None:
    """The unary-code matrix product equals Σ_l |s_l - t_l| for every pair of rows."""
    ints = st.integers(low, high)
    a = np.array(data.draw(st.lists(st.lists(ints, min_size=dims, max_size=dims), min_size=a_rows, max_size=a_rows)),
                 dtype=np.int64).reshape(a_rows, dims)
    b = np.array(data.draw(st.lists(st.lists(ints, min_size=dims, max_size=dims), min_size=b_rows, max_size=b_rows)),
                 dtype=np.int64).reshape(b_rows, dims)
    got = l1_matrix(a, b)
    assert got.shape == (a_rows, b_rows) and got.dtype == np.int64
    for i in range(a_rows):
        for j in range(b_rows):
            assert got[i, j] == sum(abs(int(x) - int(y)) for x, y in zip(a[i], b[j]))
