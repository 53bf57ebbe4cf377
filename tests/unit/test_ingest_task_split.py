"""How ingest cuts its work: batches split into near-equal tasks, the last one flagged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st


@given(n=st.integers(1, 60), parts=st.integers(1, 6))
def test_a_batch_splits_into_near_equal_consecutive_tasks(n, parts):
    from ingest.batching import split_batch

    batch = list(range(n))
    pieces = split_batch(batch, parts)
    assert [x for p in pieces for x in p] == batch
    assert len(pieces) == min(n, parts) and max(map(len, pieces)) - min(map(len, pieces)) <= 1


@given(n=st.integers(0, 6))
def test_with_last_flags_only_the_last_item(n):
    from ingest.batching import with_last

    assert list(with_last(iter([[i] for i in range(n)]))) == [([i], i == n - 1) for i in range(n)]
