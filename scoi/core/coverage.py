"""Coverage of a test input by a set of examples (docs/method.md §3) and polynomial distance (§7).

Pure numpy: no I/O, no database. Term vectors are integer exponent vectors (docs/method.md §2), one
row per term, repeats kept (a term multiset). All arrays of one query share the width d.

Tie rule (one rule, used by both the fast selector and the slow reference in
``tests/reference.py``): coverage values are compared with an absolute tolerance
:data:`COV_TOL` = 1e-12. Coverages lie in [0, 1], and two implementations that sum the same
per-term maxima in a different order can disagree in the last ulp, which would otherwise
break ties differently. So "the first candidate reaching the maximum" is the first one
within ``COV_TOL`` of the maximum (:func:`argmax_first`), and "strictly greater than the
running best" means greater than ``best + COV_TOL`` (:func:`improves`). Genuine coverage
differences are ratios of small integers (or cosines of small integer vectors) and are
far larger than 1e-12, so the tolerance only absorbs rounding noise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

Similarity = Literal["distance", "cosine"]
WordOverlap = Literal["set", "multiset"]

COV_TOL = 1e-12
"""Absolute tolerance for comparing coverage values; see the module docstring."""


def distance_similarity(distance: float | np.ndarray) -> float | np.ndarray:
    """c = 1 / (1 + d) of an L1 distance d (docs/method.md §3): 1 for equal terms, falling
    towards 0 as they differ. The one definition: the coverage measures, the greedy cover's
    per-candidate matrix (scoi.core.greedy), the page's explanation and the DPP kernel all
    call it (d = inf gives 0)."""
    return 1.0 / (1.0 + distance)


def is_word(token: str) -> bool:
    """Whether a token counts as a word for coverage gaps: it has a letter or a digit
    (Unicode categories L and N), so punctuation is never reported as missing. The page's
    script and the ``selection_gap`` view (SQL ``is_word``, ranges from scoi.core.word_ranges)
    spell the same rule; tests tie them to this one."""
    return any(ch.isalnum() for ch in token)



def argmax_first(values: Sequence[float] | np.ndarray) -> int:
    """Index of the first value within :data:`COV_TOL` of the maximum (the tie rule).

    ``-inf`` entries (masked candidates) are never chosen unless all entries are ``-inf``.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("argmax_first of an empty sequence")
    top = arr.max()
    return int(np.flatnonzero(arr >= top - COV_TOL)[0])


def improves(new: float, best: float) -> bool:
    """True when ``new`` is strictly greater than ``best`` under the tie rule."""
    return bool(new > best + COV_TOL)


def as_terms(x: np.ndarray) -> np.ndarray:
    """2-D int64 view of a term array (int64 so L1 sums and dot products cannot overflow).

    An empty array of any shape becomes (0, 0) so "no terms" needs no width.
    """
    arr = np.asarray(x, dtype=np.int64)
    if arr.size == 0 and arr.ndim != 2:
        return arr.reshape(0, 0)
    if arr.ndim != 2:
        raise ValueError(f"term arrays must be 2-D (n_terms, d), got shape {arr.shape}")
    return arr


def l1_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(m, n) int64 matrix of L1 distances between rows of ``a`` (m, d) and ``b`` (n, d).

    Exponent vectors are non-negative, so ||s - t||_1 = |s| + |t| - 2 Σ_l min(s_l, t_l),
    and min(s_l, t_l) = Σ_{e ≥ 1} [s_l ≥ e][t_l ≥ e]: with each label written in unary
    (one 0/1 column per exponent level), the sum of minima is one matrix product. For a
    30-token query against a 100-sentence pool (25 x 2,000 distinct terms, 36 labels) that
    is 0.3 ms instead of 5 ms for one (m, n) pass per label. Integer-exact: the product
    sums at most a few hundred ones, in float32 (exact up to 2^24; float64 measured ~8x
    slower here on 30-token queries). Inputs with negative entries (not term vectors)
    take the per-label loop.
    """
    a, b = as_terms(a), as_terms(b)
    m, n = len(a), len(b)
    out = np.empty((m, n), dtype=np.int64)
    if m == 0 or n == 0:
        return out
    # Labels absent from both sides contribute 0 and are skipped (most of an inventory).
    active = np.flatnonzero(a.any(axis=0) | b.any(axis=0))
    a, b = a[:, active], b[:, active]
    if a.size and b.size and min(a.min(), b.min()) >= 0:
        levels = np.maximum(a.max(axis=0), b.max(axis=0))  # unary width of each label
        cols = np.repeat(np.arange(len(active)), levels)
        thresholds = np.arange(1, int(levels.sum()) + 1) - np.repeat(np.cumsum(levels) - levels, levels)
        shared = (a[:, cols] >= thresholds).astype(np.float32) @ (b[:, cols] >= thresholds).astype(np.float32).T
        out[:] = a.sum(axis=1)[:, None] + b.sum(axis=1)[None, :]
        out -= 2 * np.rint(shared).astype(np.int64)
        return out
    # One (m, n) pass per dimension: contiguous arithmetic, no (m, n, d) temporary.
    out[:] = 0
    for j in range(len(active)):
        out += np.abs(a[:, j, None] - b[None, :, j])
    return out


def l1_to_rows(a: np.ndarray, table: np.ndarray, rows: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """(m, len(rows)) int64 L1 distances between the term vectors ``a`` (m, d) and
    ``table[rows]``: :func:`l1_matrix` for a small ``a`` against many rows of a term table,
    reading only the columns ``a`` uses.

    Same identity as :func:`l1_matrix`, with the unary code cut to a's levels: min(s_l,
    t_l) = Σ_{e=1..max s_l} [s_l ≥ e][t_l ≥ e], so the labels ``a`` never uses, and the
    levels above its largest exponent, add nothing. For a 30-token query that is ~20
    unary columns of the table instead of every label at every level of both sides.
    ``norms``: the L1 norm of every table row, when the caller keeps them (else summed
    here). Rows are term vectors (non-negative; with ``norms`` this is trusted, without
    it checked); inputs with negative entries take :func:`l1_matrix`.
    """
    a, table = as_terms(a), as_terms(table)
    rows = np.asarray(rows, dtype=np.intp)
    picked = table[rows] if norms is None else None
    if len(a) == 0 or len(rows) == 0 or a.min() < 0 or (picked is not None and picked.min() < 0):
        return l1_matrix(a, table[rows])
    levels = a.max(axis=0)
    labels = np.flatnonzero(levels)
    levels = levels[labels]
    cols = np.repeat(labels, levels)
    thresholds = np.arange(1, int(levels.sum()) + 1) - np.repeat(np.cumsum(levels) - levels, levels)
    t_norms = picked.sum(axis=1) if picked is not None else np.asarray(norms, dtype=np.int64)[rows]
    out = a.sum(axis=1)[:, None] + t_norms[None, :]
    if len(cols):
        shared = (a[:, cols] >= thresholds).astype(np.float32) @ (table[rows[:, None], cols] >= thresholds).astype(
            np.float32).T  # exact: at most sum(levels) ones per entry, far below 2^24
        out -= 2 * np.rint(shared).astype(np.int64)
    return out


def term_similarity(
    a: np.ndarray, b: np.ndarray, similarity: Similarity = "distance"
) -> np.ndarray:
    """c(s, t) for all rows s of ``a`` (m, d) and t of ``b`` (n, d) -> (m, n) float64.

    ``distance``: 1 / (1 + ||s - t||_1) (the default). ``cosine``: s·t / (|s| |t|),
    defined as 0 when either vector is zero.
    """
    if similarity == "distance":
        return distance_similarity(l1_matrix(a, b).astype(np.float64))
    if similarity == "cosine":
        a, b = as_terms(a), as_terms(b)
        dots = (a @ b.T).astype(np.float64)
        na = np.sqrt((a * a).sum(axis=1).astype(np.float64))
        nb = np.sqrt((b * b).sum(axis=1).astype(np.float64))
        denom = na[:, None] * nb[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
    raise ValueError(f"unknown similarity {similarity!r}")


def syn_set_cov(
    query_terms: np.ndarray,
    example_terms_list: Sequence[np.ndarray],
    similarity: Similarity = "distance",
) -> float:
    """SynSetCov(x, Z) = mean over query terms s (repeats counted) of max_{t in T_Z} c(s, t).

    T_Z is the union of the examples' terms. An empty Z (or Z without terms, or a query
    without terms) gives 0.0; term similarities are >= 0, so 0 is the neutral maximum.
    """
    q = as_terms(query_terms)
    parts = [as_terms(t) for t in example_terms_list if len(t)]
    if len(q) == 0 or not parts:
        return 0.0
    return float(term_similarity(q, np.concatenate(parts), similarity).max(axis=1).mean())


def word_set_cov(
    query_tokens: Sequence[str],
    example_tokens_list: Sequence[Sequence[str]],
    overlap: WordOverlap = "set",
) -> float:
    """WordSetCov(x, Z) = |W_x ∩ W_Z| / |W_x|; 0.0 when x has no tokens.

    ``set`` (released code): W are sets of unique, case-sensitive tokens and W_Z is the
    union of the examples' token sets. ``multiset`` (paper text): W_x is the token
    multiset of x, W_Z the multiset *sum* of the examples' tokens, and the intersection
    takes min counts, so |W_x ∩ W_Z| = Σ_w min(count_x(w), Σ_z count_z(w)).
    """
    if overlap == "set":
        wx = set(query_tokens)
        if not wx:
            return 0.0
        wz: set[str] = set().union(*map(set, example_tokens_list))
        return len(wx & wz) / len(wx)
    if overlap == "multiset":
        cx = Counter(query_tokens)
        total = sum(cx.values())
        if total == 0:
            return 0.0
        cz: Counter[str] = Counter()
        for toks in example_tokens_list:
            cz.update(toks)
        return sum(min(c, cz[w]) for w, c in cx.items()) / total
    raise ValueError(f"unknown word overlap {overlap!r}")


def poly_distance(p: np.ndarray, q: np.ndarray) -> float:
    """docs/method.md §7 d(P, Q) = (Σ_{s∈P} min_t ||s-t||_1 + Σ_{t∈Q} min_s ||s-t||_1) / (|P| + |Q|).

    P and Q are term multisets (repeats counted). The numerator is an exact integer, so
    equal distances compare exactly equal. Both empty -> 0.0; one empty -> inf.
    """
    dist = l1_matrix(p, q)
    m, n = dist.shape
    if m == 0 and n == 0:
        return 0.0
    if m == 0 or n == 0:
        return float("inf")
    return int(dist.min(axis=1).sum() + dist.min(axis=0).sum()) / (m + n)
