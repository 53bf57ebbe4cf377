"""The baselines' ranking functions (docs/method.md §7), one per method of the registry
(scoi.core.methods): each reads a :class:`~scoi.core.pool.Ranking` and returns up to ``k``
:class:`~scoi.core.pool.Choice` s. The arithmetic is in scoi.core.rbm25, scoi.core.dpp and
scoi.core.fuzzy; this module only says how each method reads and pads a pool."""

from __future__ import annotations

import numpy as np

from scoi.core.dpp import dpp
from scoi.core.fuzzy import fuzzy_rank
from scoi.core.pool import Choice, Ranking, pad_in_pool_order, poly_distances
from scoi.core.rbm25 import rbm25


def nothing(r: Ranking, k: int) -> list[Choice]:
    """zero: no example."""
    return []


def bm25_order(r: Ranking, k: int) -> list[Choice]:
    """bm25: the pool's first k, in BM25 order."""
    return [Choice(i, "bm25", None) for i in range(min(k, len(r.candidates)))]


def rbm25_picks(r: Ranking, k: int) -> list[Choice]:
    """rbm25: n-gram recall re-ranking, then pool order (the agrawal variant stops at its threshold)."""
    found = [Choice(i, "rbm25", score) for i, score in rbm25(r.query_tokens, r.token_lists, k, r.rbm25_variant)]
    return found if r.rbm25_variant == "agrawal" else pad_in_pool_order(found, len(r.candidates), k)


def dpp_picks(r: Ranking, k: int) -> list[Choice]:
    """dpp: greedy MAP of the DPP kernel over polynomial distances, then pool order."""
    found = dpp(poly_distances(r.query_terms, r.candidates, r.term_table), r.query_tokens, r.token_lists, k)
    return pad_in_pool_order([Choice(i, "dpp", resid) for i, resid in found], len(r.candidates), k)


def fuzzy_picks(r: Ranking, k: int) -> list[Choice]:
    """fuzzy, fuzzy-ann: the k candidates nearest the query by cosine of sentence embeddings."""
    if r.embeddings is None:
        raise ValueError(f"method {r.method!r} ranks by sentence embeddings; none were given")
    return [Choice(i, "fuzzy", cos) for i, cos in fuzzy_rank(r.embeddings[0], r.embeddings[1], k)]


def random_picks(r: Ranking, k: int) -> list[Choice]:
    """random: k candidates drawn with the seed."""
    order = np.random.default_rng(r.seed).permutation(len(r.candidates))[:k]
    return [Choice(int(i), "random", None) for i in order]


def poly_topk(r: Ranking, k: int) -> list[Choice]:
    """poly-topk: the k candidates nearest the query by polynomial distance."""
    dist = poly_distances(r.query_terms, r.candidates, r.term_table)
    order = np.argsort(dist, kind="stable")[:k]
    return [Choice(int(i), "poly", float(dist[i])) for i in order]


__all__ = ["bm25_order", "dpp_picks", "fuzzy_picks", "nothing", "poly_topk", "random_picks", "rbm25_picks"]
