"""Reading a query's posting lists for the block engine (:mod:`scoi.selection.preselect`).

Streaming every list in chunks of blocks and summing them as they come
(:class:`AllLists`, :func:`stream_all`, :func:`sum_chunks`), and decoding lists or blocks
read whole (:func:`decode_ids`, :func:`read_list`). What was read is counted in
:class:`Stats`. The same read one sentence-id range at a time, or split over helper
connections, is :mod:`scoi.selection.rangeread`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scoi.core.bm25blocks import DIR, Directory
from scoi.db.queries import load
from scoi.selection.blockscore import SLACK, QueryToken, bm25_idf, sum_by_sentence, tf_factors
from scoi.selection.listcache import CachedList, Deferred, ListCache, QueryLists

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
CHUNK = 256  # blocks per streamed row (a multiple of GROUP: a grouped row is never split)
NO_CACHE: dict[str, list[int]] = {"cached": [], "versions": [], "cached_df": []}


@dataclass
class Stats:
    """What one preselection read and did (for benchmarks and ``--verbose``)."""

    tokens: int = 0
    postings: int = 0      # postings decoded
    blocks: int = 0        # of blocks
    blocks_total: int = 0  # blocks of the query's tokens
    bytes: int = 0         # bytes of blocks and directories received
    probed: int = 0        # sentences scored exactly to find theta
    round_trips: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: milliseconds per step when every list is read: ``wait`` (for the server's rows),
    #: ``decode``, ``sum``, ``head`` (the best 2n sentences), ``top`` (pair mapping round trip);
    #: ``ranges``: each range's best, the waiting lists added where they matter (read by range)
    ms: dict[str, float] = field(default_factory=dict)

    def add(self, other: Stats) -> None:
        """Count what ``other`` read too (another connection's ranges): counts and
        milliseconds add up (the latter as work done, not time waited), ``cells`` is the
        largest."""
        self.postings += other.postings
        self.blocks += other.blocks
        self.blocks_total += other.blocks_total
        self.bytes += other.bytes
        self.round_trips += other.round_trips
        for k, v in other.ms.items():
            self.ms[k] = self.ms.get(k, 0.0) + v
        for k in ("cached", "deferred"):
            if k in other.extra:
                self.extra[k] = self.extra.get(k, 0) + other.extra[k]
        if "cells" in other.extra:
            self.extra["cells"] = max(self.extra.get("cells", 0), other.extra["cells"])


def decode_ids(directory: Directory, ids: bytes, tfdl: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(sentence ids, packed tf << 8 | dl) of concatenated blocks."""
    offsets = np.frombuffer(ids, dtype=">u4").astype(np.int64)
    return offsets + np.repeat(directory.first, directory.n), np.frombuffer(tfdl, dtype=">u2").astype(np.intp)


def read_list(tok: QueryToken, ids: bytes, tfdl: bytes, factor: np.ndarray, st: Stats) -> None:
    """Decode a token's whole list into ``tok`` (ids, weighted contributions, lengths)."""
    sids, packed = decode_ids(tok.dir, ids, tfdl)
    tok.sids, tok.contrib, tok.dl = sids, (tok.w * factor)[packed], packed & 255
    st.postings += len(sids)
    st.blocks += len(tok.dir)
    st.bytes += len(ids) + len(tfdl)


class AllLists:
    """Every posting list of a query, summed by sentence as :func:`stream_all` receives
    them (each token's contribution added in (df, id) order, whatever order rows arrive
    in: the same floats every time). Dense over the lists' id range when the postings
    fill it well enough (``sums``, index = id - ``lo``), else kept per chunk and summed
    at the end (a sort)."""

    def __init__(self, row: tuple[Any, ...], k1: float, b: float, st: Stats | None = None) -> None:
        n_docs, total_len, lo, hi, total = row[7:12]
        self.n_docs, self.lo, self.hi = n_docs, lo, hi
        self.ka = k1 * (1 - b)
        self.kc = k1 * b * max(n_docs, 1) / max(total_len, 1)
        self.factor = tf_factors(self.ka, self.kc)
        self.dense = 0 <= hi - lo < 8 * total  # (a range holding no posting: total 0)
        # ids relative to ``base``: 0 if the array from id 0 is at most twice the range (cached ids as they are)
        self.base = 0 if self.dense and lo <= hi - lo + 1 else lo
        self.buf = np.zeros(hi - self.base + 1) if self.dense else None
        self.sums: np.ndarray | None = self.buf[lo - self.base:] if self.dense else None
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.terms: list[tuple[float, int]] = []  # (idf, count in the query) of each token read
        self.deferred: Deferred | None = None  # the commonest cached lists, added when needed
        #: cached lists to add next (in rank order), added together a tile at a time (scoi.selection.kernels)
        self.batch: list[tuple[np.ndarray, np.ndarray, float]] = []
        self.st = st if st is not None else Stats()

    def add(self, df: int, cnt: int, meta: bytes, ids: bytes, tfdl: bytes, st: Stats,
            keep: tuple[list[np.ndarray], list[np.ndarray]] | None = None) -> None:
        """One chunk of a token's list (its blocks' records ``meta`` and postings); ``keep``:
        where its absolute ids and packed tf/dl go too (the list cache's)."""
        t0 = time.perf_counter()
        rec = np.frombuffer(meta, dtype=DIR)
        first = rec["first"].astype(np.int64) - self.base
        sids = np.repeat(first, rec["n"].astype(np.int64))
        sids += np.frombuffer(ids, dtype=">u4")
        # the weighted factors of the tf the chunk can hold (tf <= its blocks' max_tf): a
        # table of ~1-2k entries, one gather per posting and no product (the same floats)
        top = (int(rec["max_tf"].max()) + 1) << 8 if len(rec) else 0
        table = self.factor[:top] * (bm25_idf(self.n_docs, df) * cnt)
        packed = np.frombuffer(tfdl, dtype=">u2").astype(np.intp)
        contrib = table[packed]
        if len(rec) and (rec["first"][0] < self.lo or rec["last"][-1] > self.hi):  # a range's edge row
            keep_in = (sids >= self.lo - self.base) & (sids <= self.hi - self.base)
            sids, contrib, packed = sids[keep_in], contrib[keep_in], packed[keep_in]
        if keep is not None:  # (the ranges of one list partition it: their postings add up to it)
            keep[0].append(sids + self.base)
            keep[1].append(packed)
        t1 = time.perf_counter()
        self.flush()  # cached lists before this one in rank order: added first
        self._sum(sids, contrib)
        st.ms["decode"] = st.ms.get("decode", 0.0) + 1000 * (t1 - t0)
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t1)
        st.postings += len(sids)
        st.blocks += len(rec)
        st.bytes += len(meta) + len(ids) + len(tfdl)

    def add_cached(self, df: int, cnt: int, entry: CachedList, st: Stats, defer: bool = False) -> None:
        """A token's list from the list cache (its postings within [lo, hi]: a range's), in
        place of its chunks: the same contributions (tf factor x weight, one product each)
        added to the same cells, dense sums with the next cached lists (:meth:`flush`);
        ``defer``: kept aside until the best sentences are asked for (:class:`Deferred`)."""
        t0 = time.perf_counter()
        factors, fmax = entry.factors(self.ka, self.kc, self.factor)
        ids = entry.ids
        if len(ids) and (ids[0] < self.lo or ids[-1] > self.hi):  # read by range: this range's slice
            i0, i1 = np.searchsorted(ids, [self.lo, self.hi + 1])
            ids, factors = ids[i0:i1], factors[i0:i1]
        w = bm25_idf(self.n_docs, df) * cnt
        st.extra["cached"] = st.extra.get("cached", 0) + len(ids)
        st.ms["decode"] = st.ms.get("decode", 0.0) + 1000 * (time.perf_counter() - t0)
        if defer and self.dense:
            self.deferred = self.deferred or Deferred()
            self.deferred.add(ids, factors, fmax, w)
            st.extra["deferred"] = st.extra.get("deferred", 0) + len(ids)
            return
        if self.dense:
            self.batch.append((ids, factors, w))
            return
        t1 = time.perf_counter()
        self._sum(ids if self.base == 0 else ids - self.base, factors * w)
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t1)
        st.postings += len(ids)

    def flush(self) -> None:
        """Add the cached lists collected so far (:func:`scoi.selection.kernels.add_lists`:
        compiled, a tile of the sums at a time, the same floats as one by one)."""
        if not self.batch:
            return
        from scoi.selection.kernels import add_lists  # numba's import only once a cached list is summed
        t0 = time.perf_counter()
        self.st.postings += add_lists(self.buf, self.base, self.batch, self.lo, self.hi)
        self.batch = []
        self.st.ms["sum"] = self.st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t0)

    def _sum(self, sids: np.ndarray, contrib: np.ndarray) -> None:
        if self.dense:  # a token's ids are distinct: one addition per cell, as `buf[sids] += contrib`
            np.add.at(self.buf, sids, contrib)
        else:
            self.parts.append((sids if self.base == self.lo else sids + (self.base - self.lo), contrib))

    def complete(self) -> None:
        """Every sentence's whole sum: the deferred lists added where they are not yet."""
        self.flush()
        if self.deferred is not None:
            self.deferred.complete(self.buf, self.base)
            self.deferred = None

    def finish(self) -> None:
        self.flush()
        if not self.dense:
            sids = np.concatenate([p[0] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
            contrib = np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0)
            cand, self.sums = sum_by_sentence(sids, contrib)
            self.cand, self.parts = cand + self.lo, []

    def head(self, k: int, floor: float = 0.0) -> tuple[np.ndarray, np.ndarray, float | None]:
        """Sentence ids of the ``k`` best sums and of every sum within rounding of the k-th
        (scores rounded to 9 decimals: the exact scores), and a rounded bound no lower than
        any other sentence's score (None: there is no other). A partition of a million sums
        takes ~10 ms; so first a floor from the maxima of >= k chunks (the k-th largest of
        them: at least k sums reach it), then a partition of the few sums that reach it.
        ``floor``: a score k sentences elsewhere reach (a range's: earlier ranges' k-th
        best), so the waiting lists need only go where a sentence can still reach it; the
        head may then hold fewer than k sentences (the others score below the bound)."""
        self.flush()
        raw = self.sums
        ids = (lambda idx: idx + self.lo) if self.dense else (lambda idx: self.cand[idx])
        if self.deferred is not None:  # the commonest cached lists, added where they matter (Deferred)
            d, at = self.deferred, self.lo - self.base
            t = d.resolve(self.buf, self.base, at, k, floor) if d.done is None and len(raw) > k else None
            if t is None:  # (a later head, for another k, needs every sum)
                self.complete()
            else:  # the best k are among the sentences resolved; every other one scores below t
                idx = d.done - at
                sub = raw[idx]
                kth = np.partition(sub, len(sub) - k)[len(sub) - k] if len(sub) > k else 0.0
                top = (sub >= kth - SLACK) & (sub > 0)
                rest = max(float(sub[~top].max()) if not top.all() else t, t)
                return ids(idx[top]), np.round(sub[top], 9), round(rest, 9)
        if len(raw) <= k:
            idx = np.flatnonzero(raw > 0)
            return ids(idx), np.round(raw[idx], 9), None
        size = max(1, len(raw) // (8 * k))
        maxima = np.maximum.reduceat(raw, np.arange(0, len(raw), size))
        floor = np.partition(maxima, len(maxima) - k)[len(maxima) - k]
        idx = np.flatnonzero(raw >= floor - SLACK)
        sub = raw[idx]
        kth = np.partition(sub, len(sub) - k)[len(sub) - k]
        top = (sub >= kth - SLACK) & (sub > 0)
        if kth <= SLACK:  # fewer than k sentences met: all of them are in the head
            return ids(idx[top]), np.round(sub[top], 9), None
        others = sub[~top]
        rest = max(float(others.max()) if len(others) else floor, floor)
        return ids(idx[top]), np.round(sub[top], 9), round(rest, 9)

    def all_scores(self) -> tuple[np.ndarray, np.ndarray]:
        """Every sentence met (ascending ids) and its exact score."""
        self.complete()
        if self.dense:
            met = np.flatnonzero(self.sums)
            return met + self.lo, np.round(self.sums[met], 9)
        return self.cand, np.round(self.sums, 9)


def stream_all(cur: psycopg.Cursor, lang: str, tokens: list[str], read_all: int, k1: float, b: float,
               st: Stats, cache: ListCache | None = None, min_df: int = 0) -> tuple[bool, AllLists | None]:
    """Stream every posting list of ``tokens`` (``blocks_stream``, one row per chunk of
    blocks) and sum them as they come (:func:`sum_chunks`). Returns whether any token is
    in the index, and the sums (None if the lists hold more than ``read_all`` postings:
    nothing was read). ``cache``: lists of at least ``min_df`` postings are kept there, and
    the server sends a marker instead of those it holds at their current version."""
    lists = QueryLists(cache, cur.connection, lang, tokens, min_df) if cache is not None else None
    params = {"lang": lang, "tokens": tokens, "read_all": read_all, "chunk": CHUNK, "rec": DIR.itemsize,
              **(lists.params() if lists else NO_CACHE)}
    st.round_trips += 1
    if lists is not None and lists.offered:  # mostly markers: fetched at once, the plan prepared (~0.5 ms)
        t0 = time.perf_counter()
        fetched = cur.execute(SQL["blocks_stream"], params, prepare=True).fetchall()
        fetch_ms = 1000 * (time.perf_counter() - t0)
        known, out = sum_chunks(fetched, k1, b, st, lists)
        st.ms["wait"] = st.ms.get("wait", 0.0) + fetch_ms
    else:
        rows = cur.stream(SQL["blocks_stream"], params)
        with closing(rows):  # an error while summing must not leave the stream holding the connection
            known, out = sum_chunks(rows, k1, b, st, lists)
    if lists is not None:
        lists.done()
    if out is not None:  # what a bound on unseen sentences' scores needs (scoi.lookup)
        st.extra.update(terms=out.terms, ka=out.ka, kc=out.kc)
    return known, out


def sum_chunks(rows: Iterable[tuple[Any, ...]], k1: float, b: float, st: Stats,
               lists: QueryLists | None = None, defer: set[int] | None = None,
               store: bool = True, part: int = 0) -> tuple[bool, AllLists | None]:
    """Sum ``blocks_stream`` rows in (token rank, chunk) order, whatever order they come
    in: early rows wait in a buffer (the server sends them in that order; nothing depends
    on it). A cache hit's marker row stands for its token's chunks and adds the cached list
    there (``lists``). ``defer``: the ranks of the cached lists left out of the sums for
    now (default: found here when ``rows`` is a list, all known at once:
    :meth:`QueryLists.deferrable`); ``store``: lists read whole are stored in the cache as
    their last chunk is summed (False: a range's, the caller stores them once every range
    is read; ``part``: the range's number). See :func:`stream_all` for what it returns."""
    known, out = False, None
    waiting: dict[tuple[int, int], tuple[Any, ...]] = {}
    at = (1, 0)
    start, busy = time.perf_counter(), st.ms.get("decode", 0.0) + st.ms.get("sum", 0.0)  # (a range's: not the first)
    defer = set() if defer is None else defer
    for row in rows:
        known = True
        rank, n_tokens, chunk = row[0], row[1], row[2]
        if chunk is None:  # more than read_all postings
            continue
        if out is None:
            out = AllLists(row, k1, b, st)
            st.extra.setdefault("extent", out.hi - out.lo + 1)  # the ids the lists span
            if lists is not None and isinstance(rows, list) and not defer:  # every row known: the commonest may wait
                hits = {r[0]: (r[4], r[5], r[14]) for r in rows if r[16]}
                defer = lists.deferrable(hits, row[1], out.n_docs, out.ka, out.kc, out.factor)
        st.tokens = n_tokens
        waiting[(rank, chunk)] = row
        while at in waiting:
            r = waiting.pop(at)
            if r[16]:
                assert lists is not None  # the statement only marks lists it was offered
                out.add_cached(r[4], r[5], lists.hit(r[14]), st, at[0] in defer)
            else:
                keep = lists.keep(r[4], r[14], part) if lists is not None else None
                out.add(r[4], r[5], r[6], r[12], r[13], st, keep)
                if keep is not None and store and at[1] + 1 == r[3]:
                    lists.store(r[17], r[14], r[15], r[4])
            if at[1] == 0:
                out.terms.append((bm25_idf(out.n_docs, r[4]), r[5]))
            at = (at[0], at[1] + 1) if at[1] + 1 < r[3] else (at[0] + 1, 0)
    if out is not None:
        st.blocks_total = st.blocks
        t0 = time.perf_counter()
        busy = st.ms.get("decode", 0.0) + st.ms.get("sum", 0.0) - busy
        st.ms["wait"] = st.ms.get("wait", 0.0) + 1000 * (t0 - start) - busy
        out.finish()
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t0)
    return known, out


__all__ = ["AllLists", "CHUNK", "decode_ids", "NO_CACHE", "read_list", "Stats", "stream_all", "sum_chunks"]
