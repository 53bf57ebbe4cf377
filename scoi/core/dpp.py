"""DPP: syntax relevance × lexical diversity over the BM25 pool (docs/method.md §7.2).

Pure numpy, no I/O. The kernel is L = diag(q)·S·diag(q): q_i = exp(s_i / 2θ) grows with
the candidate's syntactic similarity to the query, S is the cosine similarity of the
candidates' BM25 word vectors. :func:`greedy_map` is Chen et al.'s (2018) fast greedy MAP
inference: it keeps the incremental Cholesky rows of the picks, so every candidate's
residual d²_i = det(L_{Y∪{i}}) / det(L_Y) is updated in O(n) per candidate and step
instead of recomputing determinants (``tests/reference_baselines.py`` does the latter).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from scoi.core import defaults
from scoi.core.coverage import distance_similarity

THETA = defaults.DPP_THETA
K1, B = defaults.DPP_BM25_K1, defaults.DPP_BM25_B
RESIDUAL_TOL = 1e-10
"""Stop when the best residual is at most this: the rest would add (numerically) nothing."""
TIE_TOL = 1e-9
"""Residuals within this of the maximum are tied; the first candidate (pool order) wins."""


def pool_bm25_weights(query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]],
                      k1: float = K1, b: float = B) -> np.ndarray:
    """W[i, t]: BM25 weight of query token t (one column per occurrence, lowercased) in
    candidate i, with df, N and avgdl taken over the pool alone (docs/method.md §7.2)."""
    query = [t.lower() for t in query_tokens]
    docs = [Counter(t.lower() for t in toks) for toks in cand_tokens]
    n = len(docs)
    weights = np.zeros((n, len(query)))
    if n == 0 or not query:
        return weights
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    avgdl = lengths.mean()
    norm = k1 * (1 - b + b * (lengths / avgdl if avgdl > 0 else np.zeros(n)))
    distinct = list(dict.fromkeys(query))
    tf = np.array([[d[t] for t in distinct] for d in docs], dtype=np.float64)
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    per_token = idf * tf * (k1 + 1) / (tf + norm[:, None])
    return per_token[:, [distinct.index(t) for t in query]]


def dpp_kernel(distances: np.ndarray, word_vectors: np.ndarray, theta: float = THETA) -> np.ndarray:
    """L = diag(q)·S·diag(q) with s_i = 1/(1 + d_i) (0 for d_i = inf), q_i = exp(s_i / 2θ),
    S the Gram matrix of the L2-normalised rows of ``word_vectors`` (a zero row stays zero)."""
    dist = np.asarray(distances, dtype=np.float64)
    s = np.where(np.isinf(dist), 0.0, distance_similarity(dist))
    q = np.exp(s / (2 * theta))
    w = np.asarray(word_vectors, dtype=np.float64)
    norms = np.linalg.norm(w, axis=1)
    unit = w / np.where(norms > 0, norms, 1.0)[:, None]
    return q[:, None] * (unit @ unit.T) * q[None, :]


def greedy_map(kernel: np.ndarray, k: int, tol: float = RESIDUAL_TOL) -> list[tuple[int, float]]:
    """Up to k (index, residual) in pick order: each pick maximises det(L_Y) given the
    earlier ones; stops when the best residual is ≤ ``tol`` (docs/method.md §7.2)."""
    L = np.asarray(kernel, dtype=np.float64)
    n = len(L)
    k = min(k, n)
    chol = np.zeros((k, n))
    resid = np.diag(L).copy()
    taken = np.zeros(n, dtype=bool)
    picks: list[tuple[int, float]] = []
    while len(picks) < k:
        open_ = np.where(taken, -np.inf, resid)
        j = int(np.flatnonzero(open_ >= open_.max() - TIE_TOL)[0])
        if not open_[j] > tol:
            break
        m = len(picks)
        picks.append((j, float(resid[j])))
        taken[j] = True
        if m + 1 == k:
            break
        e = (L[j] - chol[:m, j] @ chol[:m]) / np.sqrt(resid[j])
        chol[m] = e
        resid -= e * e
    return picks


def dpp(distances: np.ndarray, query_tokens: Sequence[str], cand_tokens: Sequence[Sequence[str]],
        k: int) -> list[tuple[int, float]]:
    """DPP picks (index, residual) for one query before padding: ``distances`` are the
    polynomial distances d(P_query, P_i) of docs/method.md §7, tokens the Moses tokens."""
    kernel = dpp_kernel(distances, pool_bm25_weights(query_tokens, cand_tokens))
    return greedy_map(kernel, k)
