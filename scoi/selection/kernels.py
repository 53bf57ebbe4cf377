"""Compiled loops for summing posting lists (numba), where numpy's are the bottleneck.

numpy's ``np.add.at(buf, ids, factors * w)`` costs ~6.5 ns a posting here (a product into a
temporary, then the scattered add) and holds the GIL throughout, so ranges read on two
connections summed one after the other. These loops do the same arithmetic, in the same
order, one IEEE product and one addition per posting (no fused multiply-add: numba does not
contract without ``fastmath``), so the sums are the same floats; they release the GIL, and
:func:`add_lists` adds a run of lists one tile of the sums at a time, so the tile stays in
the core's cache while every list's postings in it are added (docs/preselection.md,
"Compiled sums"). Compiled on first use and cached on disk (numba's ``cache=True``).

Imported only where a list cache's lists are summed (:mod:`scoi.selection.blockread`), so a
one-off command that never reuses a list does not pay numba's import (~0.3 s).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

#: cells of the sums added to at once by :func:`add_lists`: 2 MB of float64, a core's L2
TILE = 1 << 18


def _compiled(fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` compiled without the GIL, its machine code cached on disk (beside this file,
    or in the user's cache directory); compiled afresh in each process where neither is
    writable (numba then has no place to cache it). These loops are exercised by
    tests/unit/test_kernels.py against numpy's sums, bit for bit."""
    try:
        return njit(nogil=True, cache=True)(fn)
    except RuntimeError:
        return njit(nogil=True)(fn)


@_compiled
def _add(buf: np.ndarray, ids: np.ndarray, factors: np.ndarray, w: float, base: int) -> None:
    for i in range(ids.shape[0]):
        buf[ids[i] - base] += factors[i] * w


@_compiled
def _add_except(buf: np.ndarray, ids: np.ndarray, factors: np.ndarray, w: float, base: int,
                skip: np.ndarray) -> None:
    for i in range(ids.shape[0]):
        c = ids[i] - base
        if not skip[c]:
            buf[c] += factors[i] * w


def add_list(buf: np.ndarray, ids: np.ndarray, factors: np.ndarray, w: float, base: int,
             skip: np.ndarray | None = None) -> None:
    """``buf[ids - base] += factors * w`` for distinct ``ids``, ascending (checked at both
    ends: the compiled loop does not check bounds), but for the cells marked in ``skip``
    (they have the list already)."""
    if len(ids) and (ids[0] < base or ids[-1] - base >= len(buf)):
        raise IndexError(f"sentence ids {ids[0]}..{ids[-1]} outside the sums' {base}..{base + len(buf) - 1}")
    if skip is None:
        _add(buf, ids, factors, w, base)
    else:
        _add_except(buf, ids, factors, w, base, skip)


def add_lists(buf: np.ndarray, base: int, lists: list[tuple[np.ndarray, np.ndarray, float]], lo: int,
              hi: int, tile: int = TILE) -> int:
    """Add ``lists`` ((ids ascending within [lo, hi], tf factors, weight), in rank order) to
    ``buf`` (cell = id - ``base``), ``tile`` ids at a time, each list in order within a
    tile: every cell gets its contributions in the lists' order, as list by list. Returns
    the postings added."""
    if len(lists) == 1 or hi - lo < tile:
        for ids, f, w in lists:
            add_list(buf, ids, f, w, base)
        return sum(len(x[0]) for x in lists)
    edges = np.arange(lo, hi + tile + 1, tile)
    cuts = [np.searchsorted(ids, edges) for ids, _, _ in lists]
    for t in range(len(edges) - 1):
        for (ids, f, w), c in zip(lists, cuts):
            a, z = c[t], c[t + 1]
            if z > a:
                add_list(buf, ids[a:z], f[a:z], w, base)
    return sum(len(x[0]) for x in lists)


__all__ = ["add_list", "add_lists", "TILE"]
