"""Merging the best sentences of several sentence-id ranges (scoi.selection.blockscore.merge_heads):
what ranges scored on other connections or servers send back must merge into exactly the
best sentences of the whole, ties and the bound on the sentences left out included."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scoi.selection.blockscore import merge_heads


def head(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The k best of one set (every one tied with the k-th too) and the best score left
    out (None: none is), by sorting: the definition the merge must meet."""
    met = scores > 0
    ids, scores = ids[met], scores[met]
    if len(scores) <= k:
        return ids, scores, None
    kth = np.sort(scores)[::-1][k - 1]
    top = scores >= kth
    return ids[top], scores[top], (float(scores[~top].max()) if (~top).any() else None)


@given(scores=st.lists(st.integers(0, 40), min_size=0, max_size=300), k=st.integers(1, 30),
       cuts=st.lists(st.integers(0, 300), max_size=4))
def test_merged_range_heads_equal_the_head_of_the_whole(scores, k, cuts):
    values = np.array(scores, dtype=float) / 8  # few distinct values: many ties at the k-th
    ids = np.arange(len(values), dtype=np.int64) + 1000
    bounds = [0, *sorted(cuts), len(values)]
    parts = [head(ids[a:b], values[a:b], k) for a, b in zip(bounds, bounds[1:]) if a <= b]
    got_ids, got_scores, got_rest = merge_heads(parts, k)
    exp_ids, exp_scores, exp_rest = head(ids, values, k)
    assert sorted(zip(got_ids.tolist(), got_scores.tolist())) == sorted(zip(exp_ids.tolist(), exp_scores.tolist()))
    assert got_rest == exp_rest


def test_merging_nothing_gives_nothing():
    ids, scores, rest = merge_heads([(np.zeros(0, np.int64), np.zeros(0), None)] * 2, 5)
    assert len(ids) == len(scores) == 0 and rest is None
