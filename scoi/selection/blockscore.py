"""Scoring a query's posting lists in numpy, for the block engine (:mod:`scoi.selection.preselect`).

BM25's idf and tf factors, the one rule by which the lists read are added up by sentence,
a query token's MaxScore bookkeeping, and the top n pairs of scored sentences. No I/O:
the sentences' pairs come through the ``fetch`` function the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from scoi.core.bm25blocks import Directory

SLACK = 2e-9  # scores are rounded to 9 decimals: raw sums this close to the k-th may round to a tie


class QueryToken:
    """One query token on the MaxScore path: its weight (idf x count in the query), block
    directory and per-block bounds, and (once read) its postings' sentence ids,
    contributions and lengths."""

    __slots__ = ("id", "w", "dir", "bounds", "ub", "sids", "contrib", "dl")

    def __init__(self, tid: int, w: float, directory: Directory, bounds: np.ndarray) -> None:
        self.id, self.w, self.dir, self.bounds = tid, w, directory, bounds
        self.ub = float(bounds.max()) if len(bounds) else 0.0
        self.sids: np.ndarray | None = None
        self.contrib: np.ndarray | None = None
        self.dl: np.ndarray | None = None


def bm25_idf(n_docs: int, df: int) -> float:
    """BM25's (Lucene's) idf: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return float(np.log(1 + (n_docs - df + 0.5) / (df + 0.5)))


@lru_cache(maxsize=8)
def tf_factors(ka: float, kc: float) -> np.ndarray:
    """tf / (tf + ka + kc dl) for every packed ``tf << 8 | dl`` (a table: one gather per
    posting). Kept for the next queries (0.4 ms to build; kc changes only with the corpus);
    read-only, as it is shared."""
    packed = np.arange(1 << 16)
    tf, dl = (packed >> 8).astype(np.float64), (packed & 255).astype(np.float64)
    table = tf / (tf + ka + kc * dl)
    table.flags.writeable = False
    return table


def accumulate(terms: list[QueryToken], lengths: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sentence ids met in the lists read (ascending), the sum of their contributions
    there (:func:`sum_by_sentence`) and (``lengths``) their lengths."""
    read = [t for t in terms if t.sids is not None]
    if not read:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64)
    sids = np.concatenate([t.sids for t in read]) if len(read) > 1 else read[0].sids
    contrib = np.concatenate([t.contrib for t in read]) if len(read) > 1 else read[0].contrib
    cand, sums = sum_by_sentence(sids, contrib)
    if not lengths:
        return cand, sums, None
    length = np.zeros(len(cand), dtype=np.int64)
    length[np.searchsorted(cand, sids)] = np.concatenate([t.dl for t in read])
    return cand, sums, length


def sum_by_sentence(sids: np.ndarray, contrib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sentence ids met (ascending) and the sum of their contributions: the one rule by
    which the lists read are added up (the MaxScore path, and the read-all path's sparse
    case): a bincount over the id range when it is dense enough, else a sort. Every
    contribution is > 0, so a sentence is met iff its sum is."""
    if not len(sids):
        return sids.astype(np.int64), contrib
    lo, hi = int(sids.min()), int(sids.max())
    if hi - lo < 8 * len(sids):
        sums = np.bincount(sids - lo, weights=contrib, minlength=hi - lo + 1)
        met = np.flatnonzero(sums)
        return met + lo, sums[met]
    cand, inv = np.unique(sids, return_inverse=True)
    return cand, np.bincount(inv, weights=contrib, minlength=len(cand))


def nth_pair_score(exact: dict[int, float], pairs: dict[int, list[int]], n: int) -> float:
    """The n-th best pair's score among the sentences scored (0 with fewer than n pairs)."""
    counted = 0
    for sid, s in sorted(exact.items(), key=lambda x: -x[1]):
        counted += len(pairs.get(sid, ()))
        if counted >= n:
            return s
    return 0.0


def top_pairs(sids: np.ndarray, scores: np.ndarray, pairs: dict[int, list[int]], n: int,
               fetch: Callable[[list[int]], None]) -> list[tuple[int, float]]:
    """Top n (pair id, score) of the sentences ``sids`` with exact ``scores``: sentences
    in score order, their pairs fetched (``fetch``) a growing chunk at a time until n pairs
    are in and the next sentence scores below the n-th (ties are all taken). Only the best
    8n sentences are sorted first; the rest only if they hold fewer than n pairs."""
    k = 8 * n
    if len(sids) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        head = scores >= cut
        out = _walk(sids[head], scores[head], pairs, n, fetch)
        if len(out) >= n and out[n - 1][1] >= cut:  # every sentence scoring >= the n-th is in head
            return out[:n]
    return _walk(sids, scores, pairs, n, fetch)[:n]


def _walk(sids: np.ndarray, scores: np.ndarray, pairs: dict[int, list[int]], n: int,
          fetch: Callable[[list[int]], None]) -> list[tuple[int, float]]:
    """:func:`top_pairs` over every sentence given, in score order."""
    order = np.lexsort((sids, -scores))
    sids, scores = sids[order], scores[order]
    out: list[tuple[int, float]] = []
    i, step = 0, max(2 * n, 64)
    while i < len(sids):
        chunk = list(zip(sids[i:i + step].tolist(), scores[i:i + step].tolist()))
        missing = [sid for sid, _ in chunk if sid not in pairs]
        if missing:
            fetch(missing)
        for sid, v in chunk:
            out.extend((p, v) for p in pairs.get(sid, ()))
        i, step = i + step, step * 4
        if len(out) >= n:
            out.sort(key=lambda x: (-x[1], x[0]))
            if i >= len(sids) or scores[i] < out[n - 1][1]:
                break
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def merge_heads(heads: list[tuple[np.ndarray, np.ndarray, float | None]], k: int
                ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The best ``k`` sentences of several disjoint ranges (ids, rounded scores, and a bound
    on every sentence left out: None if none is) from each range's own best ``k`` (the same
    triple; ties with a range's k-th included): the k best of the union, every one tied
    with the k-th, and as the bound the largest of the ranges' bounds and of the scores
    dropped. Exact: a sentence missing from its range's head scores at most that range's
    bound. What ranges on other connections or servers send back (docs/replicas.md)."""
    ids = np.concatenate([h[0] for h in heads]) if heads else np.zeros(0, np.int64)
    scores = np.concatenate([h[1] for h in heads]) if heads else np.zeros(0)
    bounds = [h[2] for h in heads if h[2] is not None]
    rest = max(bounds) if bounds else None
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        top = scores >= kth - SLACK
        if not top.all():
            dropped = float(scores[~top].max())
            rest = dropped if rest is None else max(rest, dropped)
        ids, scores = ids[top], scores[top]
    return ids, scores, rest


__all__ = ["accumulate", "bm25_idf", "merge_heads", "nth_pair_score", "QueryToken", "SLACK", "sum_by_sentence",
           "tf_factors", "top_pairs"]
