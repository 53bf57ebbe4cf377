"""The compiled sums (scoi/selection/kernels.py) against numpy's, the obvious version:
the same floats, bit for bit, list by list or a tile at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoi.selection.kernels import add_list, add_lists


def lists_of(seed: int, n_ids: int, n_lists: int, lo: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_lists):
        size = int(rng.integers(0, n_ids))
        ids = lo + np.sort(rng.choice(n_ids, size, replace=False)).astype(np.intp)
        f = rng.random(size)
        f.flags.writeable = False  # as the list cache holds them
        out.append((ids, f, float(rng.choice([0.013, 1.7, 9.25]) * rng.random())))
    return out


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_ids=st.integers(1, 3_000), n_lists=st.integers(1, 6),
       lo=st.integers(0, 10**9), base_at_lo=st.booleans(), tile=st.sampled_from([1, 7, 64, 1000, 1 << 18]))
def test_lists_added_a_tile_at_a_time_are_numpys_sums(seed: int, n_ids: int, n_lists: int, lo: int,
                                                      base_at_lo: bool, tile: int) -> None:
    lists = lists_of(seed, n_ids, n_lists, lo)
    base = lo if base_at_lo else lo - 5
    start = np.random.default_rng(seed).random(n_ids + 5) * 3  # sums of rarer lists first
    expected = start.copy()
    for ids, f, w in lists:
        np.add.at(expected, ids - base, f * w)
    got = start.copy()
    assert add_lists(got, base, lists, lo, lo + n_ids - 1, tile) == sum(len(x[0]) for x in lists)
    assert got.tobytes() == expected.tobytes()


def test_one_list_and_every_cell_but_some() -> None:
    (ids, f, w), = lists_of(3, 5_000, 1, 100)
    expected = np.zeros(5_100)
    np.add.at(expected, ids, f * w)
    got = np.zeros(5_100)
    add_list(got, ids, f, w, 0)
    assert got.tobytes() == expected.tobytes()
    skip = np.zeros(5_100, dtype=bool)
    skip[::3] = True
    got = np.ones(5_100)
    add_list(got, ids, f, w, 0, skip)
    expected = np.ones(5_100)
    keep = ~skip[ids]
    np.add.at(expected, ids[keep], f[keep] * w)
    assert got.tobytes() == expected.tobytes()


def test_ids_outside_the_sums_are_refused_not_written() -> None:
    """The compiled loop does not check bounds; the ends of the (ascending) ids are."""
    buf = np.zeros(10)
    for ids in (np.array([3, 10]), np.array([-1, 2]), np.array([4, 5])):
        with pytest.raises(IndexError, match="outside the sums"):
            add_list(buf, ids, np.ones(2), 1.0, 0 if ids[0] != 4 else 6)
    assert not buf.any()
