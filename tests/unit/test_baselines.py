"""R-BM25 and DPP (docs/method.md §7.1, §7.2): the method's worked examples with literal picks,
properties of the picks, and the fast paths against the literal ones in
``tests/reference_baselines.py``. Pure: no database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoi.core.dpp import dpp_kernel, greedy_map, pool_bm25_weights
from scoi.core.greedy import select
from scoi.core.pool import Features, Choice, pad_in_pool_order
from scoi.core.rbm25 import rbm25_ctq
from tests import reference as ref
from tests import reference_baselines as slow
from tests.helpers.hypothesis import examples

NO_TERMS = np.zeros((0, 0), dtype=np.int64)


def pool_of(*sentences: str) -> list[Features]:
    return [Features(NO_TERMS, s.split()) for s in sentences]


# ------------------------------------------------------------------ R-BM25, worked example
QUERY = "a b c d".split()
C0, C1, C2, C3 = "a b x", "c d", "a b c", "y z"
POOL = pool_of(C0, C1, C2, C3)


def test_rbm25_ctq_worked_example() -> None:
    picks = select(NO_TERMS, QUERY, POOL, k=4, method="rbm25")
    # rounds: [0.49, 0.49, 0.76, 0] -> c2; [0.30, 0.75, 0, 0] -> c1; [0.51, 0, 0, 0] -> c0;
    # all 0 -> stop; c3 is padding in pool order.
    assert picks == [Choice(2, "rbm25", 0.76), Choice(1, "rbm25", 0.75), Choice(0, "rbm25", 0.51), Choice(3, "bm25", None)]
    # The round scores that did not win: each candidate alone (round 1), and after c2 (round 2).
    assert [rbm25_ctq(QUERY, [s.split()], 1) for s in (C0, C1, C3)] == [[(0, 0.49)], [(0, 0.49)], []]
    assert rbm25_ctq(QUERY, [C2.split(), C0.split()], 2) == [(0, 0.76), (1, 0.30)]
    assert rbm25_ctq(QUERY, [C2.split(), C1.split(), C0.split()], 3) == [(0, 0.76), (1, 0.75), (2, 0.51)]
    # "a c": only order 1 matches (R_1 = 1/2): e^(ln(1/2)/4) = 0.84. "a b c d": R_1 = R_2 = 1, P = 0.
    assert rbm25_ctq(QUERY, [["a", "c"]], 1) == [(0, 0.84)]
    assert rbm25_ctq(QUERY, [QUERY], 1) == []
    assert select(NO_TERMS, QUERY, pool_of("a b c d", "y z"), k=2, method="rbm25") == [
        Choice(0, "bm25", None), Choice(1, "bm25", None)]


def test_rbm25_agrawal_worked_example() -> None:
    picks = select(NO_TERMS, QUERY, POOL, k=4, method="rbm25", rbm25_variant="agrawal")
    assert [(p.index, p.criterion) for p in picks] == [(2, "rbm25"), (1, "rbm25"), (0, "rbm25")]  # no padding
    # Round 1, c2: recalls 3/4, 2/3, 1/2 and 1 smoothed to 1/2: (75 · 66.7 · 50 · 50)^(1/4).
    assert picks[0].coverage == pytest.approx((75 * 200 / 3 * 50 * 50) ** 0.25)
    assert picks[1].coverage == pytest.approx((100 * 1.1 / 1.3 * 100 / 1.2 * 100 / 2.2 * 25) ** 0.25)
    assert all(p.coverage >= 1.0 for p in picks)
    assert select(NO_TERMS, QUERY, POOL, k=2, method="rbm25", rbm25_variant="agrawal") == picks[:2]


def test_rbm25_ties_go_to_the_first_in_pool_order() -> None:
    # c1 and c0 tie at 0.49 in round 1. A copy of c2 ties with it in round 1 (0.76: the
    # first wins), scores 0.47 < 0.75 (c1) in round 2 and 0.74 > 0.51 (c0) in round 3;
    # c0 comes last at 0.31 (a, b, ab down-weighted twice).
    assert [p.index for p in select(NO_TERMS, QUERY, pool_of(C1, C0), k=1, method="rbm25")] == [0]
    picks = select(NO_TERMS, QUERY, pool_of(C0, C2, C1, C2), k=4, method="rbm25")
    assert [(p.index, p.coverage) for p in picks] == [(1, 0.76), (2, 0.75), (3, 0.74), (0, 0.31)]
    for variant in ("moses", "ctq", "agrawal"):
        twins = select(NO_TERMS, QUERY, pool_of(C3, C2, C2), k=1, method="rbm25", rbm25_variant=variant)
        assert [p.index for p in twins] == [1]


def test_rbm25_rejects_unknown_variant() -> None:
    with pytest.raises(ValueError, match="R-BM25 variant"):
        select(NO_TERMS, QUERY, POOL, method="rbm25", rbm25_variant="bleu")


# ------------------------------------------------------------------ R-BM25, properties
WORDS = ["a", "b", "c", "d", "A", "."]
sentences = st.lists(st.sampled_from(WORDS), max_size=7)


@settings(max_examples=examples(300), deadline=None)
@given(query=sentences, pool=st.lists(sentences, max_size=9), k=st.integers(0, 10),
       variant=st.sampled_from(["moses", "ctq", "agrawal"]))
def test_rbm25_properties_and_reference(query, pool, k, variant) -> None:
    cands = [Features(NO_TERMS, toks) for toks in pool]
    picks = select(NO_TERMS, query, cands, k=k, method="rbm25", rbm25_variant=variant)
    idx = [p.index for p in picks]
    assert all(0 <= i < len(pool) for i in idx) and len(set(idx)) == len(idx)  # in the pool, no repeats
    own = [p for p in picks if p.criterion == "rbm25"]
    assert picks[:len(own)] == own  # R-BM25's own picks first, then padding
    if variant != "agrawal":
        assert len(picks) == min(k, len(pool))
        assert all(p.coverage > 0 for p in own)
        rest = [i for i in range(len(pool)) if i not in {p.index for p in own}]
        assert idx[len(own):] == rest[:k - len(own)]  # padding: the others in pool order
    else:
        assert len(picks) == len(own) <= k and all(p.coverage >= 1.0 for p in own)
    assert picks == select(NO_TERMS, query, cands, k=k, method="rbm25", rbm25_variant=variant)  # deterministic
    assert picks == ref.select(NO_TERMS, query, cands, k, "rbm25", rbm25_variant=variant)  # the literal loop
    # The greedy is a prefix of itself: a smaller k keeps the first picks.
    if variant == "agrawal" or k <= len(own):
        assert select(NO_TERMS, query, cands, k=max(k - 1, 0), method="rbm25", rbm25_variant=variant) == picks[:max(k - 1, 0)]


# ------------------------------------------------------------------ DPP, worked example
def test_dpp_worked_example() -> None:
    distances = np.array([1.0, 0.0, 3.0])
    vectors = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0]])
    q = np.array([1.64872, 2.71828, 1.28403])
    S = np.array([[1, 0.6, 0.8], [0.6, 1, 0], [0.8, 0, 1]])
    L = dpp_kernel(distances, vectors)
    assert L == pytest.approx(q[:, None] * S * q[None, :], abs=1e-4)
    assert [j for j, _ in greedy_map(L, 2)] == [1, 0]
    # k = 3: the third residual is 0 up to rounding (rank 2): stop, pad from pool order.
    picks = greedy_map(L, 3)
    assert [j for j, _ in picks] == [1, 0]
    assert picks[0][1] == pytest.approx(math.e ** 2)  # L_11 = q_1²
    assert picks[1][1] == pytest.approx(math.e - (1.64872 * 0.6) ** 2, abs=1e-4)
    padded = pad_in_pool_order([Choice(j, "dpp", r) for j, r in picks], 3, 3)
    assert [(p.index, p.criterion) for p in padded] == [(1, "dpp"), (0, "dpp"), (2, "bm25")]


def test_pool_bm25_weights_by_hand() -> None:
    # N = 2, avgdl = 2.5; "chat" in both (df 2), "dort" in one (df 1); repeats are columns.
    w = pool_bm25_weights(["Chat", "dort", "chat"], [["le", "chat", "dort"], ["chat", "."]])
    idf2, idf1 = math.log(1 + 0.5 / 2.5), math.log(1 + 1.5 / 1.5)
    norm = [1.2 * (0.25 + 0.75 * 3 / 2.5), 1.2 * (0.25 + 0.75 * 2 / 2.5)]
    expected = [[idf2 * 2.2 / (1 + norm[0]), idf1 * 2.2 / (1 + norm[0]), idf2 * 2.2 / (1 + norm[0])],
                [idf2 * 2.2 / (1 + norm[1]), 0.0, idf2 * 2.2 / (1 + norm[1])]]
    assert w == pytest.approx(np.array(expected), abs=1e-12)


def test_dpp_edge_cases() -> None:
    assert greedy_map(np.zeros((0, 0)), 4) == []
    assert greedy_map(np.zeros((3, 3)), 2) == []  # nothing but zero residuals: all padding
    no_words = select(NO_TERMS, [], POOL, k=3, method="dpp")
    assert [(p.index, p.criterion) for p in no_words] == [(0, "bm25"), (1, "bm25"), (2, "bm25")]
    # Identical candidates: the first of the tie, never both (the second's residual is 0).
    twins = [[1.0, 2.0], [1.0, 2.0], [2.0, 0.0]]
    assert [j for j, _ in greedy_map(dpp_kernel(np.zeros(3), np.array(twins)), 3)] == [0, 2]


# ------------------------------------------------------------------ DPP, fast == literal
small_float = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.0])


@st.composite
def dpp_inputs(draw):
    n = draw(st.integers(0, 7))
    dims = draw(st.integers(0, 4))
    distances = draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 1.5, 3.0, math.inf]), min_size=n, max_size=n))
    vectors = draw(st.lists(st.lists(small_float, min_size=dims, max_size=dims), min_size=n, max_size=n))
    return distances, np.array(vectors, dtype=np.float64).reshape(n, dims)


def clear_margins(trace: list[list[float]]) -> bool:
    """No step where the best gain is near the stopping threshold, or where a runner-up is
    near the tie tolerance of it: there two correct computations may legitimately differ."""
    for gains in trace:
        top = max(gains)
        if 1e-13 < top < 1e-7:
            return False
        if any(1e-11 < top - g < 1e-7 for g in gains):
            return False
    return True


#: Of the examples a DPP property draws, at least this share must have clear margins and be
#: compared (the others are drawn but not compared: two correct computations may differ).
COMPARED_SHARE = 0.5


def test_dpp_fast_matches_literal() -> None:
    compared = []
    n = examples(400)

    @settings(max_examples=n, deadline=None)
    @given(inputs=dpp_inputs(), k=st.integers(0, 8))
    def check(inputs, k) -> None:
        distances, vectors = inputs
        fast_kernel = dpp_kernel(np.array(distances), vectors)
        slow_kernel = slow.kernel(distances, vectors.tolist())
        assert fast_kernel == pytest.approx(slow_kernel, abs=1e-12)
        trace: list[list[float]] = []
        expected = slow.greedy_map(slow_kernel, k, trace)
        got = greedy_map(fast_kernel, k)
        assert len(got) <= min(k, len(distances))
        if not clear_margins(trace):
            return
        compared.append(k)
        assert [j for j, _ in got] == [j for j, _ in expected]
        assert [r for _, r in got] == pytest.approx([r for _, r in expected], rel=1e-9, abs=1e-9)

    check()
    assert len(compared) >= COMPARED_SHARE * n, f"{len(compared)} of {n} examples compared"


TERM_VECS = st.lists(st.integers(0, 2), min_size=3, max_size=3)
terms = st.lists(TERM_VECS, max_size=4).map(lambda rows: np.array(rows, dtype=np.int64).reshape(len(rows), 3))


def test_dpp_selection_matches_literal() -> None:
    """The whole path: polynomial distances, pool BM25 vectors, kernel, greedy, padding."""
    compared = []
    n = examples(200)

    @settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(query_terms=terms, query=sentences, pool=st.lists(st.tuples(terms, sentences), max_size=8),
           k=st.integers(0, 6))
    def check(query_terms, query, pool, k) -> None:
        cands = [Features(t, toks) for t, toks in pool]
        dists = [ref.poly_distance(query_terms, c.terms) for c in cands]
        trace: list[list[float]] = []
        slow.greedy_map(slow.kernel(dists, slow.bm25_vectors(query, [c.tokens for c in cands])), k, trace)
        got = select(query_terms, query, cands, k=k, method="dpp")
        assert len(got) == min(k, len(cands)) and len({p.index for p in got}) == len(got)
        assert pool_bm25_weights(query, [c.tokens for c in cands]) == pytest.approx(
            np.array(slow.bm25_vectors(query, [c.tokens for c in cands])).reshape(len(cands), len(query)),
            abs=1e-12)
        if not clear_margins(trace):
            return
        compared.append(k)
        expected = ref.select(query_terms, query, cands, k, "dpp")
        assert [(p.index, p.criterion) for p in got] == [(p.index, p.criterion) for p in expected]

    check()
    assert len(compared) >= COMPARED_SHARE * n, f"{len(compared)} of {n} examples compared"
