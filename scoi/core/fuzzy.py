"""Fuzzy: re-rank candidates by the cosine of sentence embeddings (docs/method.md §7).

Pure: vectors in, (candidate index, cosine) out; no I/O, no model. The selector passes the
source sides' embeddings of the BM25 pool (``fuzzy``) or of the nearest neighbours an HNSW
index found over the whole database (``fuzzy-ann``), in pool / index order; the rule is
the same: cosine descending, ties by that order (the released code's sort is not stable,
so scoi fixes the tie rule to the lower BM25 rank: docs/method.md §7.3).
"""

from __future__ import annotations

import numpy as np


def cosines(query: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Cosine of ``query`` (d,) with each row of ``candidates`` (n, d); 0 for a zero vector
    (no direction: neither similar nor dissimilar)."""
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    c = np.asarray(candidates, dtype=np.float64).reshape(-1, q.size) if q.size else np.zeros((len(candidates), 0))
    norms = np.linalg.norm(c, axis=1) * np.linalg.norm(q)
    dots = c @ q
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def fuzzy_rank(query: np.ndarray, candidates: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The first ``k`` candidates by cosine with ``query``, descending; ties: lower index
    (earlier in pool order) first. Returns (index, cosine) pairs."""
    if k <= 0 or len(candidates) == 0:
        return []
    sims = cosines(query, candidates)
    order = np.argsort(-sims, kind="stable")[:k]
    return [(int(i), float(sims[i])) for i in order]
