"""Fuzzy re-ranking (docs/method.md §7.3): the worked example, the tie rule, and
scoi.core.fuzzy against the literal reference in tests/reference_baselines.py. Pure."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from scoi.core.fuzzy import cosines, fuzzy_rank
from scoi.core.greedy import select
from scoi.core.pool import Features
from tests import reference as ref, reference_baselines as slow


def test_spec_worked_example() -> None:
    """u = (1,0); (1,1), (2,0), (0,3), (-1,0.5) -> cosines 0.7071, 1.0, 0.0, -0.8944 -> top 2 [1, 0]."""
    u = np.array([1.0, 0.0])
    cands = np.array([[1, 1], [2, 0], [0, 3], [-1, 0.5]], dtype=float)
    assert np.allclose(cosines(u, cands), [0.7071, 1.0, 0.0, -0.8944], atol=1e-4)
    assert [i for i, _ in fuzzy_rank(u, cands, 2)] == [1, 0]
    assert [i for i, _ in fuzzy_rank(u, cands, 8)] == [1, 0, 2, 3]  # keeps at most what there is


def test_ties_go_to_the_lower_bm25_rank() -> None:
    u = np.array([0.0, 1.0])
    cands = np.array([[0, 2], [1, 0], [0, 5], [0, 1], [3, 0]], dtype=float)  # cos 1, 0, 1, 1, 0
    assert [i for i, _ in fuzzy_rank(u, cands, 5)] == [0, 2, 3, 1, 4]


def test_zero_vectors_and_empty_inputs() -> None:
    assert fuzzy_rank(np.ones(3), np.zeros((0, 3)), 4) == []
    assert fuzzy_rank(np.ones(3), np.ones((2, 3)), 0) == []
    got = fuzzy_rank(np.ones(2), np.array([[0.0, 0.0], [1.0, -1.0], [1.0, 1.0]]), 3)
    assert [i for i, _ in got] == [2, 0, 1] and got[1][1] == 0.0  # zero vector: cosine 0


def test_selection_dispatch_labels_fuzzy_and_needs_embeddings() -> None:
    cands = [Features(np.zeros((0, 2), dtype=np.int64), ["x"]) for _ in range(3)]
    emb = (np.array([1.0, 0.0]), np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 0.0]]))
    for method in ("fuzzy", "fuzzy-ann"):
        picks = select(np.zeros((0, 2)), ["x"], cands, k=2, method=method, embeddings=emb)
        assert [(p.index, p.criterion) for p in picks] == [(2, "fuzzy"), (1, "fuzzy")]
        assert picks[0].coverage == pytest.approx(1.0)
        with pytest.raises(ValueError, match="embeddings"):
            select(np.zeros((0, 2)), ["x"], cands, k=2, method=method)


vectors = st.lists(st.integers(-3, 3), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(query=vectors, pool=st.lists(vectors, min_size=0, max_size=12), k=st.integers(0, 14))
def test_fast_matches_literal(query, pool, k) -> None:
    """Small integer vectors: many exact ties and zero vectors."""
    cands = np.array(pool, dtype=float).reshape(-1, 3)
    got = fuzzy_rank(np.array(query, dtype=float), cands, k)
    want = slow.fuzzy(query, pool, k)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([c for _, c in got], [c for _, c in want])


@settings(max_examples=100, deadline=None)
@given(query=vectors, pool=st.lists(vectors, min_size=0, max_size=9), k=st.integers(0, 10),
       method=st.sampled_from(["fuzzy", "fuzzy-ann"]))
def test_selection_matches_reference_selection(query, pool, k, method) -> None:
    """greedy.select's fuzzy branches = tests/reference.py's (edge cases: k = 0, empty pool)."""
    cands = [Features(np.zeros((0, 2), dtype=np.int64), []) for _ in pool]
    emb = (np.array(query, dtype=float), np.array(pool, dtype=float).reshape(-1, 3))
    args = (np.zeros((0, 2)), [], cands, k, method)
    fast, slow_picks = select(*args, embeddings=emb), ref.select(*args, embeddings=emb)
    assert [(p.index, p.criterion) for p in fast] == [(p.index, p.criterion) for p in slow_picks]
    assert len(fast) == min(k, len(pool))
