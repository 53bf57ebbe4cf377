"""Example selection over a preselected candidate pool: :func:`select` runs the method's
ranking function from the registry (scoi.core.methods); the SCOI cover (docs/method.md §4)
is :func:`cover`, here; the §7 baselines are in :mod:`scoi.core.baselines`.

The greedy SCOI loop is the paper's; only the arithmetic is reorganised (docs/method.md §4,
implementation note): coverage is a sum of per-query-term maxima, so the per-candidate
maxima are computed once per query as a small matrix, and each greedy step scores all
unselected candidates at once with one elementwise maximum. The slow, literal version in
``tests/reference.py`` recomputes every coverage from scratch; both use the tie rule of
:mod:`scoi.core.coverage` (:func:`argmax_first`, :func:`improves`), so they pick the same
candidates in the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np

from scoi.core.coverage import argmax_first, as_terms, distance_similarity, improves, l1_to_rows, term_similarity
from scoi.core.limits import check_range
from scoi.core.methods import METHODS, method as registry_entry
from scoi.core.pool import Choice, Features, PackedCandidates, PoolTexts, Ranking, candidate_term_rows, token_lists
from scoi.core.rbm25 import DEFAULT_RBM25_VARIANT, check_variant

SIMILARITIES = ("distance", "cosine")
WORD_OVERLAPS = ("set", "multiset")


def criterion_at(method: str, n_selected: int) -> str:
    """Coverage criterion of a greedy step, given how many examples are already selected."""
    if method in ("syntax", "word"):
        return method
    first, second = ("syntax", "word") if method == "scoi" else ("word", "syntax")
    return first if n_selected % 2 == 0 else second


def check_args(method: str, similarity: str, word_overlap: str, k: int) -> None:
    """Reject unknown options early (shared with the reference implementation)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown similarity {similarity!r}")
    if word_overlap not in WORD_OVERLAPS:
        raise ValueError(f"unknown word overlap {word_overlap!r}")
    check_range("k", k, "k")  # 0..256: also what a selection row's integer column holds


class _Covers:
    """Per-query coverage matrices plus the state of the current cover Z_cur.

    ``syn[s, z]`` = max_{t in T_z} c(s, t) over the unique query terms s (weights = their
    multiplicities); ``hits[w, z]`` = whether (set) or how often (multiset) unique query
    token w occurs in candidate z. Coverage of Z_cur ∪ {z} for every z is then one
    elementwise max (or capped sum) against the state of Z_cur.
    """

    def __init__(
        self,
        query_terms: np.ndarray,
        query_tokens: Sequence[str],
        candidates: Sequence[Features],
        similarity: str,
        word_overlap: str,
        need_syntax: bool,
        need_word: bool,
        term_table: np.ndarray | None = None,
        query_term_ids: np.ndarray | None = None,
    ) -> None:
        n = len(candidates)
        q = as_terms(query_terms)
        self.multiset = word_overlap == "multiset"
        self.syn = np.zeros((0, n))
        self.weights = np.zeros(0)
        if need_syntax and len(q):
            if term_table is not None and query_term_ids is not None:
                # Distinct query terms by table row id (a 1-D unique, not a sort of vectors).
                uq_ids, counts = np.unique(query_term_ids, return_counts=True)
                uq = as_terms(term_table)[uq_ids]
            else:
                uq, counts = np.unique(q, axis=0, return_counts=True)
            self.weights = counts.astype(np.float64)
            source, rows, norms, inv, starts, nonempty = candidate_term_rows(candidates, q.shape[1], term_table)
            self.syn = np.zeros((len(uq), n))  # 0 is the neutral max: similarities >= 0
            if nonempty.size and similarity == "distance":
                # c = 1 / (1 + d) falls as d grows, so max_t c(s, t) = 1 / (1 + min_t d(s, t)):
                # the per-candidate minimum on exact integer distances, then one division per
                # (query term, candidate) instead of per term pair (the same floats, bit for bit).
                dist = l1_to_rows(uq, source, rows, norms)[:, inv]
                closest = np.minimum.reduceat(dist, starts, axis=1).astype(np.float64)
                self.syn[:, nonempty] = distance_similarity(closest)
            elif nonempty.size:
                per_term = term_similarity(uq, source[rows], similarity)[:, inv]
                self.syn[:, nonempty] = np.maximum.reduceat(per_term, starts, axis=1)
        qcount = Counter(query_tokens)
        self.qcount = np.array(list(qcount.values()), dtype=np.int64)
        self.hits = np.zeros((len(qcount), n), dtype=np.int64)
        if need_word and qcount:
            # Every candidate token at once: its query-word row (-1 for other words) and its
            # candidate, then one scatter (set: present; multiset: occurrences counted).
            row = {w: i for i, w in enumerate(qcount)}
            lists = token_lists(candidates)
            lengths = [len(t) for t in lists]
            flat = chain.from_iterable(lists)
            rows = np.fromiter(map(row.get, flat, repeat(-1)), dtype=np.int64, count=sum(lengths))
            cands = np.repeat(np.arange(n), lengths)
            found = rows >= 0
            if self.multiset:
                np.add.at(self.hits, (rows[found], cands[found]), 1)
            else:
                self.hits[rows[found], cands[found]] = 1
        self.reset()

    def reset(self) -> None:
        """Empty Z_cur."""
        self.cur_syn = np.zeros(len(self.weights))
        self.cur_hits = np.zeros(len(self.qcount), dtype=np.int64)

    def add(self, z: int) -> None:
        """Add candidate z to Z_cur."""
        np.maximum(self.cur_syn, self.syn[:, z], out=self.cur_syn)
        if self.multiset:
            self.cur_hits += self.hits[:, z]
        else:
            np.maximum(self.cur_hits, self.hits[:, z], out=self.cur_hits)

    def scores(self, criterion: str) -> np.ndarray:
        """Coverage of Z_cur ∪ {z} for every candidate z (selected ones included)."""
        n = self.syn.shape[1] if criterion == "syntax" else self.hits.shape[1]
        if criterion == "syntax":
            if not len(self.weights):
                return np.zeros(n)
            best = np.maximum(self.cur_syn[:, None], self.syn)
            return (self.weights @ best) / self.weights.sum()
        if not len(self.qcount):
            return np.zeros(n)
        if self.multiset:
            hit = np.minimum(self.qcount[:, None], self.cur_hits[:, None] + self.hits)
            return hit.sum(axis=0) / self.qcount.sum()
        return np.maximum(self.cur_hits[:, None], self.hits).sum(axis=0) / len(self.qcount)


def greedy_cover(covers: _Covers, n: int, k: int, method: str) -> list[Choice]:
    """docs/method.md §4 loop: alternate criteria, accept strict improvements, otherwise reset.

    A reset empties Z_cur and sets only this criterion's best to -inf; selected candidates
    stay selected. The repeated step then always accepts (anything beats -inf), so every
    pass of the loop but at most one per pick selects a candidate and the loop ends.
    """
    best = {"syntax": -np.inf, "word": -np.inf}
    selected = np.zeros(n, dtype=bool)
    picks: list[Choice] = []
    while len(picks) < min(k, n):
        crit = criterion_at(method, len(picks))
        scores = np.where(selected, -np.inf, covers.scores(crit))
        z = argmax_first(scores)
        top = float(scores.max())
        if improves(top, best[crit]):
            selected[z] = True
            covers.add(z)
            best[crit] = top
            picks.append(Choice(z, crit, top))
        else:
            covers.reset()
            best[crit] = -np.inf
    return picks


def select(
    query_terms: np.ndarray,
    query_tokens: Sequence[str],
    candidates: Sequence[Features],
    k: int = 4,
    method: str = "scoi",
    similarity: str = "distance",
    word_overlap: str = "set",
    seed: int = 0,
    term_table: np.ndarray | None = None,
    query_term_ids: np.ndarray | None = None,
    rbm25_variant: str = DEFAULT_RBM25_VARIANT,
    embeddings: tuple[np.ndarray, np.ndarray] | None = None,
    model: Any = None,
    texts: PoolTexts | None = None,
) -> list[Choice]:
    """Select up to k candidates for one query with ``method`` (one of :data:`METHODS`).

    Pools smaller than k return every candidate (except ``rbm25`` with ``rbm25_variant``
    ``agrawal``, which stops at its threshold); ``zero`` and k = 0 return [].
    ``rbm25`` reads ``query_tokens`` and the candidates' tokens as given (the selector
    passes Moses tokens for ``moses``, :func:`scoi.core.rbm25.ctq_tokens` for ``ctq`` and
    sacreBLEU 13a tokens for ``agrawal``).
    ``term_table``: when every candidate carries ``term_ids`` (rows of this table, the
    same multiset as its ``terms``), distinct terms are found by id — same result, faster;
    likewise for the query with ``query_term_ids`` (the rows of ``query_terms``).
    ``candidates`` may be a :class:`PackedCandidates` (the selector's form): the same picks,
    without per-candidate work.
    ``embeddings``: (query vector, candidates' vectors in candidate order), which the
    embedding methods rank by cosine (:func:`scoi.core.fuzzy.fuzzy_rank`). The ranking
    itself is the method's registry entry's (scoi.core.methods).
    ``model`` and ``texts``: a learned method's model (``ctq``: scoi.ctq.CtqRanker) and the
    query's and candidates' texts and BM25 scores it predicts from.
    """
    check_args(method, similarity, word_overlap, k)
    check_variant(rbm25_variant)
    if k == 0 or len(candidates) == 0:
        return []
    ranking = Ranking(method, query_terms, query_tokens, candidates, similarity, word_overlap, seed, term_table,
                      query_term_ids, rbm25_variant, embeddings, model, texts)
    return registry_entry(method).rank(ranking, k)


def cover(r: Ranking, k: int) -> list[Choice]:
    """The SCOI methods (scoi, scoi-word-first, syntax, word): docs/method.md §4's greedy
    cover of the query's terms and words."""
    covers = _Covers(r.query_terms, r.query_tokens, r.candidates, r.similarity, r.word_overlap,
                     need_syntax=r.method != "word", need_word=r.method != "syntax", term_table=r.term_table,
                     query_term_ids=r.query_term_ids)
    return greedy_cover(covers, len(r.candidates), k, r.method)


__all__ = ["SIMILARITIES", "WORD_OVERLAPS", "check_args", "cover", "criterion_at", "greedy_cover", "select"]
