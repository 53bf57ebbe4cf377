"""The fuzzy lookup's count filter (docs/method.md §8): which of a query's posting lists a
lookup at a minimum match % must read, and which sentences met in them can reach it.
Pure numpy, no I/O.

A stored sentence y (dl tokens) at match >= m (unrounded) against a query of q tokens has
an edit distance of at most (1 - m) * max(q, dl), hence (a prefix/count filter as in
similarity joins: Bayardo et al. 2007, Xiao et al. 2008):

- dl in [ceil(m q), floor(q / m)] (the distance is at least |dl - q|);
- at least ceil(m * max(q, dl)) tokens in common with the query as multisets (an
  alignment's matched positions number at most the common tokens, and the distance is
  at least max(q, dl) minus them).

So the lists of the most frequent query tokens can go unread: if their query counts add
up to K, a qualifying sentence still holds at least ceil(m * max(q, dl)) - K tokens of the
lists read. Every sentence that reaches m is among those kept: recall 1 by construction.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from scoi.core.bm25blocks import DIR

EPS = 1e-9  # slack on products of m: m is already taken a little low (scoi.core.match.unrounded)
#: the lists read must still require at least this share of the s common tokens: skipping
#: more lists reads fewer postings but keeps more sentences to check. Measured at 1M pairs
#: (100 queries a set, alternating, near-dup / short / long p95 ms, with the narrowing
#: below): 0.3 28 / 17 / 12, 0.25 14 / 23 / 9, 0.2 16-22 / 16-25 / 8, 0.15 17 / 23 / 6,
#: 0.1 26 / 16 / 8 (without the narrowing, 0.2 had a tail of 86 ms: too many to check)
KEEP_SHARE = 0.2
#: while the filter keeps more sentences than the rarest unread list holds postings
#: divided by this, reading that list too (the sentences kept need one more hit per query
#: count: fewer) is the cheaper way on: at 1M, checking a sentence (its tokens fetched, its
#: match %) takes ~30-50 us, reading and decoding a posting ~20-60 ns; 300, 500, 1,000 and
#: 3,000 measured within noise of each other; without it the tail was about 4x longer
POSTINGS_PER_CHECK = 500


@dataclass(frozen=True)
class CountPlan:
    """What a lookup at unrounded match ``m`` needs of a query of ``q`` tokens."""

    q: int
    m: float
    shared: int    # tokens in common needed by the shortest qualifying sentence (s)
    dl_min: int
    dl_max: int
    skip: int      # the query counts of the lists left unread may add up to this much (K <= skip)

    def need(self, skipped: int) -> np.ndarray:
        """Per sentence length 0-255, the hits in the lists read a sentence of that length
        needs, when the lists left unread hold ``skipped`` query tokens (huge outside the
        length window: never kept)."""
        dl = np.arange(256)
        out = np.ceil(self.m * np.maximum(self.q, dl) - EPS).astype(np.int64) - skipped
        out[(dl < self.dl_min) | (dl > self.dl_max)] = 1 << 30
        return np.maximum(out, 1)


def plan(q: int, m: float, keep_share: float = KEEP_SHARE) -> CountPlan:
    """The length window, the common tokens needed (s), and how many query tokens the
    unread lists may hold (K): a qualifying sentence still holds s - K of the tokens read,
    which must be at least 1 (else it could be in no list read) and, by choice, at least
    ``keep_share`` of s: skipping more lists reads fewer postings but keeps more sentences
    to check."""
    shared = max(1, math.ceil(m * q - EPS))
    keep = max(1, math.ceil(keep_share * shared))
    return CountPlan(q=q, m=m, shared=shared, dl_min=max(1, math.ceil(m * q - EPS)),
                     dl_max=math.floor(q / m + EPS), skip=max(0, shared - keep))


class Counted(NamedTuple):
    """The sentences a count kept (ids ascending), their hits in the lists read, and their lengths."""

    cand: np.ndarray
    hits: np.ndarray
    length: np.ndarray


def count_filter(lists: Sequence[tuple[np.ndarray, np.ndarray, int]], cplan: CountPlan, skipped: int) -> Counted:
    """Sentence ids (ascending) that may reach the plan's match: those whose hits in the
    ``lists`` read (each: sentence ids ascending, packed ``tf << 8 | dl``, the token's
    count in the query), the sum of min(tf, count), reach what their length needs
    (:meth:`CountPlan.need`), the unread lists holding ``skipped`` query tokens.

    Two steps, so that the per-posting work is a mask and a count: the sentences of the
    length window with enough hits for the shortest length, then, for those few, their
    length and the exact need it sets, from the lists (binary search: a list's ids are
    sorted)."""
    need = cplan.need(skipped)
    least = int(need.min())
    ids = []
    for sids, packed, cnt in lists:
        dl = packed & 255
        inside = (dl >= cplan.dl_min) & (dl <= cplan.dl_max)
        ids.append(sids[inside])
        for tf in range(2, min(cnt, 255) + 1):  # a token the query repeats: min(tf, count) hits
            more = sids[inside & (packed >= tf << 8)]
            if not len(more):
                break
            ids.append(more)
    none = Counted(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    allids = np.concatenate(ids) if ids else none.cand
    if not len(allids):
        return none
    lo, hi = int(allids.min()), int(allids.max())
    if hi - lo < 8 * len(allids):
        counts = np.bincount(allids - lo, minlength=hi - lo + 1)
        cand = np.flatnonzero(counts >= least) + lo
    else:
        uniq, counts = np.unique(allids, return_counts=True)
        cand = uniq[counts >= least]
    counted = Counted(cand.astype(np.int64), np.zeros(len(cand), np.int64), np.zeros(len(cand), np.int64))
    for lst in lists:
        counted = _add(counted, lst)
    keep = counted.hits >= need[counted.length]
    return Counted(*(a[keep] for a in counted))


def narrow(counted: Counted, lst: tuple[np.ndarray, np.ndarray, int], cplan: CountPlan, skipped: int) -> Counted:
    """``counted`` after one more list is read (its token leaving the unread ones, which
    now hold ``skipped`` query tokens): a subset, since the need rises by the token's query
    count and its hits by at most as much; only the sentences kept are looked up in it."""
    counted = _add(counted, lst)
    keep = counted.hits >= cplan.need(skipped)[counted.length]
    return Counted(*(a[keep] for a in counted))


def _add(counted: Counted, lst: tuple[np.ndarray, np.ndarray, int]) -> Counted:
    """The hits (min(tf, count)) and lengths of one list's postings added for the sentences counted."""
    sids, packed, cnt = lst
    if not len(sids) or not len(counted.cand):
        return counted
    pos = np.minimum(np.searchsorted(sids, counted.cand), len(sids) - 1)
    there = sids[pos] == counted.cand
    got = packed[pos].astype(np.int64)
    return Counted(counted.cand, counted.hits + np.where(there, np.minimum(got >> 8, cnt), 0),
                   np.where(there, got & 255, counted.length))


def decode_list(meta: bytes, ids: bytes, tfdl: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(sentence ids, packed ``tf << 8 | dl`` as uint16) of a whole posting list read with
    its directory ``meta`` (scoi.core.bm25blocks' layout); the packed values are unpacked
    only for the few postings :func:`count_filter` looks at."""
    rec = np.frombuffer(meta, dtype=DIR)
    sids = np.frombuffer(ids, dtype=">u4").astype(np.int64)
    sids += np.repeat(rec["first"].astype(np.int64), rec["n"].astype(np.int64))
    return sids, np.frombuffer(tfdl, dtype=">u2").astype(np.uint16)


def bm25_rescore(terms: Sequence[tuple[str, float]], sentences: Sequence[Sequence[str]],
                 factor: np.ndarray) -> np.ndarray:
    """The BM25 scores of ``sentences`` (Moses tokens) exactly as the block preselection
    sums them: ``terms`` the query's indexed tokens (lower-cased) and their weights (idf x
    count in the query) in its order (df, id), ``factor`` its table of tf / (tf + ka + kc dl)
    by ``tf << 8 | dl``; the same products added in the same order, rounded to 9 decimals
    the same way, so the two paths break ties alike."""
    out = np.zeros(len(sentences))
    for i, toks in enumerate(sentences):
        counts = Counter(t.lower() for t in toks)
        dl, total = len(toks), 0.0
        for tok, w in terms:
            tf = counts.get(tok)
            if tf:
                total += float(factor[(tf << 8) | dl]) * w
        out[i] = total
    return np.round(out, 9)


__all__ = ["Counted", "CountPlan", "EPS", "KEEP_SHARE", "POSTINGS_PER_CHECK", "bm25_rescore", "count_filter",
           "decode_list", "narrow", "plan"]
