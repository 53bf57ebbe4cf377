"""The packed pool (the selector's form of a candidate pool) and the distance kernel it uses,
checked against the literal reference in ``tests/reference.py`` and the per-candidate path
they replace. Picks on packed pools equal the reference's in test_core_selection.py's
``test_fast_matches_reference``, beside the list form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.core.coverage import l1_to_rows
from scoi.core.pool import PackedCandidates, poly_distances
from scoi.core.polynomial import ROOT, LabelSpace, TermTable, term_key
from tests import reference as ref
from tests.helpers.hypothesis import examples
from tests.unit.test_core_selection import packed, problems


@settings(max_examples=examples(200), deadline=None)
@given(problem=problems())
def test_packed_poly_distances_are_the_literal_ones(problem) -> None:
    query, _, pool = problem
    table, pool_packed, _ = packed(query, pool)
    got = poly_distances(query, pool_packed, table)
    assert got.tolist() == [ref.poly_distance(query, c.terms) for c in pool]


@settings(max_examples=examples(50), deadline=None)
@given(problem=problems())
def test_packed_pool_is_a_sequence_of_the_candidates(problem) -> None:
    query, _, pool = problem
    _, pool_packed, _ = packed(query, pool)
    assert len(pool_packed) == len(pool)
    for got, want in zip(pool_packed, pool):
        assert got.terms.tolist() == np.asarray(want.terms).tolist() and list(got.tokens) == list(want.tokens)
    if pool:
        assert pool_packed[-1].terms.tolist() == np.asarray(pool[-1].terms).tolist()
        assert [c.tokens for c in pool_packed[1:]] == [list(c.tokens) for c in pool[1:]]
        with pytest.raises(IndexError):
            pool_packed[len(pool)]
    other = pool_packed.with_tokens([["x"]] * len(pool))
    assert [c.tokens for c in other] == [["x"]] * len(pool) and other.term_ids is pool_packed.term_ids


def test_packed_pool_rejects_offsets_that_do_not_fit() -> None:
    table = np.array([[1, 0], [2, 1]])
    with pytest.raises(ValueError, match="2 candidates need 3 offsets"):
        PackedCandidates(table, np.array([0, 1, 1]), np.array([0, 3]), [["a"], ["b"]])
    with pytest.raises(ValueError, match="from 0 to 3"):
        PackedCandidates(table, np.array([0, 1, 1]), np.array([0, 1, 2]), [["a"], ["b"]])


@settings(max_examples=examples(300), deadline=None)
@given(
    dims=st.integers(1, 8),
    a_rows=st.integers(0, 6),
    table_rows=st.integers(1, 8),
    low=st.sampled_from([0, 0, -3]),  # a negative query entry (not a term vector) takes l1_matrix
    high=st.integers(1, 9),
    with_norms=st.booleans(),
    data=st.data(),
)
def test_l1_to_rows_is_the_literal_l1(dims, a_rows, table_rows, low, high, with_norms, data) -> None:
    """The query-column unary product equals Σ_l |s_l - t_l| for every query row and every
    requested table row (repeats and any order)."""
    a = np.array(data.draw(st.lists(st.lists(st.integers(low, high), min_size=dims, max_size=dims),
                                    min_size=a_rows, max_size=a_rows)), dtype=np.int64).reshape(a_rows, dims)
    table = np.array(data.draw(st.lists(st.lists(st.integers(0, high), min_size=dims, max_size=dims),
                                        min_size=table_rows, max_size=table_rows)), dtype=np.int64)
    rows = np.array(data.draw(st.lists(st.integers(0, table_rows - 1), max_size=10)), dtype=np.int64)
    got = l1_to_rows(a, table, rows, table.sum(axis=1) if with_norms else None)
    assert got.shape == (a_rows, len(rows)) and got.dtype == np.int64
    for i in range(a_rows):
        for j, r in enumerate(rows):
            assert got[i, j] == sum(abs(int(x) - int(y)) for x, y in zip(a[i], table[r]))


def test_term_table_norms_and_repeated_new_keys() -> None:
    """New keys repeated within one call get one row; rows keep their exponents when a later
    key brings a new label (the table widens); norms are the rows' sums throughout."""
    table = TermTable(LabelSpace())
    first = [term_key({ROOT: 2, "nsubj": 1}), ROOT, term_key({ROOT: 2, "nsubj": 1})]
    ids = table.ids_of(first)
    assert ids.tolist() == [0, 1, 0]
    assert table.matrix.tolist() == [[2, 1], [1, 0]] and table.norms.tolist() == [3, 1]
    more = table.ids_of([term_key({ROOT: 3, "obl": 2}), ROOT])
    assert more.tolist() == [2, 1]
    assert table.matrix.tolist() == [[2, 1, 0], [1, 0, 0], [3, 0, 2]] and table.norms.tolist() == [3, 1, 5]
    assert table.ids_of([]).tolist() == []
