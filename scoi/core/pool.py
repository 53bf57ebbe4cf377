"""A pool as the methods read it, shared by the SCOI cover (scoi.core.greedy) and the
baselines (scoi.core.baselines): each candidate's terms and tokens (:class:`Features`, or
a whole :class:`PackedCandidates`), a method's choice of one by index (:class:`Choice`; the
selection layer turns it into a scoi.selection.types.Pick), what a ranking function is
given (:class:`Ranking`), and the pieces several methods use (polynomial distances,
pool-order padding, one candidate per source sentence)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from scoi.core.coverage import as_terms, l1_to_rows, poly_distance
from scoi.core.defaults import RBM25_VARIANT


class Features(NamedTuple):
    """What a method reads of one candidate: its term multiset (n_terms, d) and its tokens.

    (A NamedTuple: the selector builds a hundred per query, and a tuple is the cheapest.)
    """

    terms: np.ndarray
    tokens: Sequence[str]
    # Optional: rows of a shared term table (see ``select(term_table=...)``) for the same
    # multiset, so the distinct terms of a pool are found without sorting vectors.
    term_ids: np.ndarray | None = None


class PackedCandidates(Sequence[Features]):
    """A pool's candidates as flat arrays: every candidate's terms as rows of one term
    table (``term_ids``, candidate i's being ``term_ids[offsets[i]:offsets[i + 1]]``,
    repeats kept) and its tokens.

    The selector's form of a pool. As a sequence it yields :class:`Features` s (built on
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
        return Features(self.table[ids], self.tokens[i], ids)

    def __iter__(self) -> Iterator[Features]:
        return (self[i] for i in range(len(self)))

    def with_tokens(self, tokens: Sequence[Sequence[str]]) -> PackedCandidates:
        """The same terms with other tokens (R-BM25's variants tokenise the texts their way)."""
        return PackedCandidates(self.table, self.term_ids, self.offsets, tokens, self.norms)


def token_lists(candidates: Sequence[Features]) -> Sequence[Sequence[str]]:
    """Every candidate's tokens (a packed pool's without building candidates)."""
    return candidates.tokens if isinstance(candidates, PackedCandidates) else [c.tokens for c in candidates]


@dataclass(frozen=True)
class Choice:
    """A method's choice: the candidate's index in the pool, the criterion, its score.

    ``coverage``: for syntax/word picks, the criterion's running best after the pick (the
    accepted maximum); for poly picks, the polynomial distance; for rbm25 picks, the
    R-BM25 score; for dpp picks, the residual (gain in det L_Y); for fuzzy picks, the
    cosine with the query; otherwise None (bm25 picks,
    including the pool-order padding of rbm25 and dpp).
    """

    index: int
    criterion: str
    coverage: float | None


def candidate_term_rows(
    candidates: Sequence[Features], d: int, term_table: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Deduplicated terms of all candidates, for computing each distinct term pair once.

    Returns (a term matrix, the rows of it that are the distinct terms (u,), their L1
    norms' source (the matrix rows' norms, or None), inverse (N,) mapping every stacked
    term to its distinct row, segment starts of the non-empty candidates, indices of
    those candidates). The matrix is the packed pool's table or ``term_table`` when the
    candidates carry row ids (distinct terms by a 1-D unique of ids), else the distinct
    vectors themselves.
    """
    if isinstance(candidates, PackedCandidates):
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


def poly_distances(query_terms: np.ndarray, candidates: Sequence[Features],
                   term_table: np.ndarray | None = None) -> np.ndarray:
    """:func:`poly_distance` of the query to every candidate, sharing the distance matrix."""
    q = as_terms(query_terms)
    n = len(candidates)
    if len(q) == 0:
        return np.array([poly_distance(q, c.terms) for c in candidates], dtype=np.float64)
    uq, counts = np.unique(q, axis=0, return_counts=True)
    source, rows, norms, inv, starts, nonempty = candidate_term_rows(candidates, q.shape[1], term_table)
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


def pad_in_pool_order(picks: list[Choice], n: int, k: int) -> list[Choice]:
    """``picks`` followed by the unpicked candidates in pool (BM25) order, up to k in all."""
    taken = {p.index for p in picks}
    rest = (i for i in range(n) if i not in taken)
    return picks + [Choice(i, "bm25", None) for _, i in zip(range(k - len(picks)), rest)]


class PoolTexts(NamedTuple):
    """The query's and candidates' texts and BM25 scores, for a method that ranks from the
    texts themselves (a learned one: scoi.core.methods.Method.learned)."""

    query: str
    sources: Sequence[str]
    targets: Sequence[str]
    scores: Sequence[float]


@dataclass(frozen=True)
class Ranking:
    """What a method's ranking function reads (scoi.core.greedy.select's arguments): the
    query's term matrix and tokens, the pool, and the settings some methods take."""

    method: str
    query_terms: np.ndarray
    query_tokens: Sequence[str]
    candidates: Sequence[Features]
    similarity: str = "distance"
    word_overlap: str = "set"
    seed: int = 0
    term_table: np.ndarray | None = None
    query_term_ids: np.ndarray | None = None
    rbm25_variant: str = RBM25_VARIANT
    embeddings: tuple[np.ndarray, np.ndarray] | None = None
    model: Any = None               # a learned method's model (scoi.core.methods.Method.learned)
    texts: PoolTexts | None = None  # ... and the texts it predicts from

    @property
    def token_lists(self) -> Sequence[Sequence[str]]:
        """Every candidate's tokens (a packed pool's without building candidates)."""
        return token_lists(self.candidates)
