"""How ingest cuts its work: batches split into near-equal tasks, the last one flagged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st


@given(n=st.integers(1, 60), parts=st.integers(1, 6))
def test_a_batch_splits_into_near_equal_consecutive_tasks(n, parts):
    from ingest.pipeline import _split

    batch = list(range(n))
    pieces = _split(batch, parts)
    assert [x for p in pieces for x in p] == batch
    assert len(pieces) == min(n, parts) and max(map(len, pieces)) - min(map(len, pieces)) <= 1


@given(n=st.integers(0, 6))
def test_with_last_flags_only_the_last_item(n):
    from ingest.pipeline import _with_last

    assert list(_with_last(iter([[i] for i in range(n)]))) == [([i], i == n - 1) for i in range(n)]
