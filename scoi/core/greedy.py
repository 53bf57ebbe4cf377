"""Example selection over a preselected candidate pool (docs/method.md §4 and the §7 baselines;
R-BM25 in :mod:`scoi.core.rbm25`, DPP in :mod:`scoi.core.dpp`, Fuzzy in :mod:`scoi.core.fuzzy`).

The greedy SCOI loop is the paper's; only the arithmetic is reorganised (docs/method.md §4,
implementation note): coverage is a sum of per-query-term maxima, so the per-candidate
maxima are computed once per query as a small matrix, and each greedy step scores all
unselected candidates at once with one elementwise maximum. The slow, literal version in
``tests/reference.py`` recomputes every coverage from scratch; both use the tie rule of
:mod:`scoi.core.coverage` (:func:`argmax_first`, :func:`improves`), so they pick the same
candidates in the same order.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import NamedTuple

import numpy as np

from scoi.core.coverage import (
    argmax_first,
    as_terms,
    improves,
    l1_to_rows,
    poly_distance,
    term_similarity,
)
from scoi.core.dpp import dpp
from scoi.core.fuzzy import fuzzy_rank
from scoi.core.limits import check_range
from scoi.core.methods import EMBEDDING_METHODS, METHODS
from scoi.core.rbm25 import DEFAULT_RBM25_VARIANT, check_variant, rbm25

SIMILARITIES = ("distance", "cosine")
WORD_OVERLAPS = ("set", "multiset")


class Candidate(NamedTuple):
    """One candidate example: its term multiset (n_terms, d) and its Moses tokens.

    (A NamedTuple: the selector builds a hundred per query, and a tuple is the cheapest.)
    """

    terms: np.ndarray
    tokens: Sequence[str]
    # Optional: rows of a shared term table (see ``select(term_table=...)``) for the same
    # multiset, so the distinct terms of a pool are found without sorting vectors.
    term_ids: np.ndarray | None = None


class PackedPool(Sequence[Candidate]):
    """A pool's candidates as flat arrays: every candidate's terms as rows of one term
    table (``term_ids``, candidate i's being ``term_ids[offsets[i]:offsets[i + 1]]``,
    repeats kept) and its tokens.

    The selector's form of a pool. As a sequence it yields :class:`Candidate` s (built on
    demand), so every method and the reference read it like a list; the SCOI methods and
    poly distances read the arrays instead, with no per-candidate work (a long query's
    pool: 100 candidates, ~2,700 terms). ``norms``: the L1 norm of every table row, when
    the caller keeps them (:attr:`scoi.core.polynomial.TermTable.norms`).
    """

    __slots__ = ("table", "term_ids", "offsets", "tokens", "norms")

    def __init__(self, table: np.ndarray, term_ids: np.ndarray, offsets: np.ndarray,
                 tokens: Sequence[Sequence[str]], norms: np.ndarray | None = None) -> None:
        self.table = as_terms(table)
        self.term_ids = np.asarray(term_ids, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.tokens = tokens
        self.norms = norms
        if len(self.offsets) != len(tokens) + 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.term_ids):
            raise ValueError(f"{len(tokens)} candidates need {len(tokens) + 1} offsets from 0 to "
                             f"{len(self.term_ids)}, got {len(self.offsets)}")

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        ids = self.term_ids[self.offsets[i]:self.offsets[i + 1]]
        return Candidate(self.table[ids], self.tokens[i], ids)

    def __iter__(self) -> Iterator[Candidate]:
        return (self[i] for i in range(len(self)))

    def with_tokens(self, tokens: Sequence[Sequence[str]]) -> PackedPool:
        """The same terms with other tokens (R-BM25's variants tokenise the texts their way)."""
        return PackedPool(self.table, self.term_ids, self.offsets, tokens, self.norms)


def _token_lists(candidates: Sequence[Candidate]) -> Sequence[Sequence[str]]:
    """Every candidate's tokens (a packed pool's without building candidates)."""
    return candidates.tokens if isinstance(candidates, PackedPool) else [c.tokens for c in candidates]


@dataclass(frozen=True)
class Pick:
    """One selected example.

    ``coverage``: for syntax/word picks, the criterion's running best after the pick (the
    accepted maximum); for poly picks, the polynomial distance; for rbm25 picks, the
    R-BM25 score; for dpp picks, the residual (gain in det L_Y); for fuzzy picks, the
    cosine with the query; otherwise None (bm25 picks,
    including the pool-order padding of rbm25 and dpp).
    """

    index: int
    criterion: str
    coverage: float | None


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


def _candidate_term_rows(
    candidates: Sequence[Candidate], d: int, term_table: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Deduplicated terms of all candidates, for computing each distinct term pair once.

    Returns (a term matrix, the rows of it that are the distinct terms (u,), their L1
    norms' source (the matrix rows' norms, or None), inverse (N,) mapping every stacked
    term to its distinct row, segment starts of the non-empty candidates, indices of
    those candidates). The matrix is the packed pool's table or ``term_table`` when the
    candidates carry row ids (distinct terms by a 1-D unique of ids), else the distinct
    vectors themselves.
    """
    if isinstance(candidates, PackedPool):
        sizes = np.diff(candidates.offsets)
        nonempty = np.flatnonzero(sizes > 0)
        uniq_ids, inv = np.unique(candidates.term_ids, return_inverse=True)
        starts = candidates.offsets[nonempty]
        return candidates.table, uniq_ids, candidates.norms, inv.reshape(-1), starts, nonempty
    sizes = np.array([len(c.terms) for c in candidates], dtype=np.int64)
    nonempty = np.flatnonzero(sizes > 0)
    if nonempty.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros((0, d), dtype=np.int64), empty, None, empty, empty, nonempty
    if term_table is not None and all(candidates[i].term_ids is not None for i in nonempty):
        ids = np.concatenate([np.asarray(candidates[i].term_ids, dtype=np.int64) for i in nonempty])
        uniq_ids, inv = np.unique(ids, return_inverse=True)
        source = as_terms(term_table)
    else:
        stacked = np.concatenate([as_terms(candidates[i].terms) for i in nonempty])
        source, inv = np.unique(stacked, axis=0, return_inverse=True)
        uniq_ids = np.arange(len(source))
    starts = np.concatenate(([0], np.cumsum(sizes[nonempty])[:-1]))
    return source, uniq_ids, None, inv.reshape(-1), starts, nonempty


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
        candidates: Sequence[Candidate],
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
            source, rows, norms, inv, starts, nonempty = _candidate_term_rows(candidates, q.shape[1], term_table)
            self.syn = np.zeros((len(uq), n))  # 0 is the neutral max: similarities >= 0
            if nonempty.size and similarity == "distance":
                # c = 1 / (1 + d) falls as d grows, so max_t c(s, t) = 1 / (1 + min_t d(s, t)):
                # the per-candidate minimum on exact integer distances, then one division per
                # (query term, candidate) instead of per term pair (the same floats, bit for bit).
                dist = l1_to_rows(uq, source, rows, norms)[:, inv]
                closest = np.minimum.reduceat(dist, starts, axis=1).astype(np.float64)
                self.syn[:, nonempty] = 1.0 / (1.0 + closest)
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
            token_lists = _token_lists(candidates)
            lengths = [len(t) for t in token_lists]
            flat = chain.from_iterable(token_lists)
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


def greedy_cover(covers: _Covers, n: int, k: int, method: str) -> list[Pick]:
    """docs/method.md §4 loop: alternate criteria, accept strict improvements, otherwise reset.

    A reset empties Z_cur and sets only this criterion's best to -inf; selected candidates
    stay selected. The repeated step then always accepts (anything beats -inf), so every
    pass of the loop but at most one per pick selects a candidate and the loop ends.
    """
    best = {"syntax": -np.inf, "word": -np.inf}
    selected = np.zeros(n, dtype=bool)
    picks: list[Pick] = []
    while len(picks) < min(k, n):
        crit = criterion_at(method, len(picks))
        scores = np.where(selected, -np.inf, covers.scores(crit))
        z = argmax_first(scores)
        top = float(scores.max())
        if improves(top, best[crit]):
            selected[z] = True
            covers.add(z)
            best[crit] = top
            picks.append(Pick(z, crit, top))
        else:
            covers.reset()
            best[crit] = -np.inf
    return picks


def poly_distances(query_terms: np.ndarray, candidates: Sequence[Candidate],
                   term_table: np.ndarray | None = None) -> np.ndarray:
    """:func:`poly_distance` of the query to every candidate, sharing the distance matrix."""
    q = as_terms(query_terms)
    n = len(candidates)
    if len(q) == 0:
        return np.array([poly_distance(q, c.terms) for c in candidates], dtype=np.float64)
    uq, counts = np.unique(q, axis=0, return_counts=True)
    source, rows, norms, inv, starts, nonempty = _candidate_term_rows(candidates, q.shape[1], term_table)
    out = np.full(n, np.inf)
    if nonempty.size:
        dist = l1_to_rows(uq, source, rows, norms)[:, inv]  # (unique query terms, all candidate terms)
        to_cand = counts @ np.minimum.reduceat(dist, starts, axis=1)
        to_query = np.add.reduceat(dist.min(axis=0), starts)
        sizes = np.diff(np.append(starts, dist.shape[1]))
        out[nonempty] = (to_cand + to_query) / (len(q) + sizes)  # exact integer numerators
    return out


def source_key(text: str) -> str:
    """What makes two example sources the same sentence: the text in NFC, whitespace runs
    as one space, ends stripped (ingest stores each stripped text once per language)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def distinct_sources(sources: Sequence[str]) -> list[int]:
    """Indices of the first candidate of each source sentence (:func:`source_key`), in pool
    order: a pool holds a source sentence once, by its best-ranked pair (BM25, then pair
    id), so no selection fills two slots with one source and two targets (docs/method.md §5)."""
    seen: set[str] = set()
    keep: list[int] = []
    for i, text in enumerate(sources):
        key = source_key(text)
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return keep


def pad_in_pool_order(picks: list[Pick], n: int, k: int) -> list[Pick]:
    """``picks`` followed by the unpicked candidates in pool (BM25) order, up to k in all."""
    taken = {p.index for p in picks}
    rest = (i for i in range(n) if i not in taken)
    return picks + [Pick(i, "bm25", None) for _, i in zip(range(k - len(picks)), rest)]


def select(
    query_terms: np.ndarray,
    query_tokens: Sequence[str],
    candidates: Sequence[Candidate],
    k: int = 4,
    method: str = "scoi",
    similarity: str = "distance",
    word_overlap: str = "set",
    seed: int = 0,
    term_table: np.ndarray | None = None,
    query_term_ids: np.ndarray | None = None,
    rbm25_variant: str = DEFAULT_RBM25_VARIANT,
    embeddings: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[Pick]:
    """Select up to k candidates for one query with ``method`` (one of :data:`METHODS`).

    Pools smaller than k return every candidate (except ``rbm25`` with ``rbm25_variant``
    ``agrawal``, which stops at its threshold); ``zero`` and k = 0 return [].
    ``rbm25`` reads ``query_tokens`` and the candidates' tokens as given (the selector
    passes Moses tokens for ``moses``, :func:`scoi.core.rbm25.ctq_tokens` for ``ctq`` and
    sacreBLEU 13a tokens for ``agrawal``).
    ``term_table``: when every candidate carries ``term_ids`` (rows of this table, the
    same multiset as its ``terms``), distinct terms are found by id — same result, faster;
    likewise for the query with ``query_term_ids`` (the rows of ``query_terms``).
    ``candidates`` may be a :class:`PackedPool` (the selector's form): the same picks,
    without per-candidate work.
    ``embeddings``: (query vector, candidates' vectors in candidate order), which the
    :data:`EMBEDDING_METHODS` rank by cosine (:func:`scoi.core.fuzzy.fuzzy_rank`).
    """
    check_args(method, similarity, word_overlap, k)
    check_variant(rbm25_variant)
    n = len(candidates)
    if method == "zero" or k == 0 or n == 0:
        return []
    if method == "bm25":
        return [Pick(i, "bm25", None) for i in range(min(k, n))]
    if method == "rbm25":
        found = rbm25(query_tokens, _token_lists(candidates), k, rbm25_variant)
        picks = [Pick(i, "rbm25", score) for i, score in found]
        return picks if rbm25_variant == "agrawal" else pad_in_pool_order(picks, n, k)
    if method == "dpp":
        found = dpp(poly_distances(query_terms, candidates, term_table), query_tokens,
                    _token_lists(candidates), k)
        return pad_in_pool_order([Pick(i, "dpp", resid) for i, resid in found], n, k)
    if method in EMBEDDING_METHODS:
        if embeddings is None:
            raise ValueError(f"method {method!r} ranks by sentence embeddings; none were given")
        return [Pick(i, "fuzzy", cos) for i, cos in fuzzy_rank(embeddings[0], embeddings[1], k)]
    if method == "random":
        order = np.random.default_rng(seed).permutation(n)[:k]
        return [Pick(int(i), "random", None) for i in order]
    if method == "ctq":  # a trained model ranks its pool (scoi.ctq.CtqRanker), never the coverage below
        raise ValueError("method ctq ranks with a trained CTQ Scorer model (scoi.ctq.CtqRanker), not scoi.core.greedy")
    if method == "poly-topk":
        dist = poly_distances(query_terms, candidates, term_table)
        order = np.argsort(dist, kind="stable")[:k]
        return [Pick(int(i), "poly", float(dist[i])) for i in order]
    covers = _Covers(
        query_terms,
        query_tokens,
        candidates,
        similarity,
        word_overlap,
        need_syntax=method != "word",
        need_word=method != "syntax",
        term_table=term_table,
        query_term_ids=query_term_ids,
    )
    return greedy_cover(covers, n, k, method)
