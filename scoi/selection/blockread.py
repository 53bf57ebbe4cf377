"""Reading a query's posting lists for the block engine (:mod:`scoi.selection.preselect`).

Streaming every list in chunks of blocks and summing them as they come
(:class:`AllLists`), the same split by sentence-id range over helper connections in one
exported snapshot (:func:`read_parts`), and decoding lists or blocks read whole
(:func:`decode_ids`, :func:`read_list`). What was read is counted in :class:`Stats`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg import sql

from scoi.core.bm25blocks import BLOCK, DIR, GROUP, Directory
from scoi.db.queries import load
from scoi.selection.blockscore import SLACK, QueryToken, bm25_idf, merge_heads, sum_by_sentence, tf_factors
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
    #: ``decode``, ``sum``, ``head`` (the best 2n sentences), ``top`` (pair mapping round trip)
    ms: dict[str, float] = field(default_factory=dict)


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

    def __init__(self, row: tuple[Any, ...], k1: float, b: float) -> None:
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
            sids, contrib = sids[keep_in], contrib[keep_in]
        elif keep is not None:
            keep[0].append(sids + self.base)
            keep[1].append(packed)
        t1 = time.perf_counter()
        self._sum(sids, contrib)
        st.ms["decode"] = st.ms.get("decode", 0.0) + 1000 * (t1 - t0)
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t1)
        st.postings += len(sids)
        st.blocks += len(rec)
        st.bytes += len(meta) + len(ids) + len(tfdl)

    def add_cached(self, df: int, cnt: int, entry: CachedList, st: Stats, defer: bool = False) -> None:
        """A token's whole list from the list cache, in place of its chunks: the same
        contributions (tf factor x weight, one product each) added to the same cells;
        ``defer``: kept aside until the best sentences are asked for (:class:`Deferred`)."""
        t0 = time.perf_counter()
        factors, fmax = entry.factors(self.ka, self.kc, self.factor)
        w = bm25_idf(self.n_docs, df) * cnt
        if defer and self.dense:
            self.deferred = self.deferred or Deferred()
            self.deferred.add(entry.ids, factors, fmax, w)
            st.extra["deferred"] = st.extra.get("deferred", 0) + len(entry.ids)
            st.extra["cached"] = st.extra.get("cached", 0) + len(entry.ids)
            return
        contrib = factors * w
        sids = entry.ids if self.base == 0 else entry.ids - self.base
        t1 = time.perf_counter()
        self._sum(sids, contrib)
        st.ms["decode"] = st.ms.get("decode", 0.0) + 1000 * (t1 - t0)
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t1)
        st.postings += len(sids)
        st.extra["cached"] = st.extra.get("cached", 0) + len(sids)

    def _sum(self, sids: np.ndarray, contrib: np.ndarray) -> None:
        if self.dense:  # a token's ids are distinct: one addition per cell, as `buf[sids] += contrib`
            np.add.at(self.buf, sids, contrib)
        else:
            self.parts.append((sids if self.base == self.lo else sids + (self.base - self.lo), contrib))

    def complete(self) -> None:
        """Every sentence's whole sum: the deferred lists added where they are not yet."""
        if self.deferred is not None:
            self.deferred.complete(self.buf, self.base)
            self.deferred = None

    def finish(self) -> None:
        if not self.dense:
            sids = np.concatenate([p[0] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
            contrib = np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0)
            cand, self.sums = sum_by_sentence(sids, contrib)
            self.cand, self.parts = cand + self.lo, []

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """Sentence ids of the ``k`` best sums and of every sum within rounding of the k-th
        (scores rounded to 9 decimals: the exact scores), and a rounded bound no lower than
        any other sentence's score (None: there is no other). A partition of a million sums
        takes ~10 ms; so first a floor from the maxima of >= k chunks (the k-th largest of
        them: at least k sums reach it), then a partition of the few sums that reach it."""
        raw = self.sums
        ids = (lambda idx: idx + self.lo) if self.dense else (lambda idx: self.cand[idx])
        if self.deferred is not None:  # the commonest cached lists, added where they matter (Deferred)
            d, at = self.deferred, self.lo - self.base
            t = d.resolve(self.buf, self.base, at, k) if d.done is None and len(raw) > k else None
            if t is None:  # (a later head, for another k, needs every sum)
                self.complete()
            else:  # the best k are among the sentences resolved; every other one scores below t
                idx = d.done - at
                sub = raw[idx]
                kth = np.partition(sub, len(sub) - k)[len(sub) - k]
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


def read_parts(cur: psycopg.Cursor, helpers: Sequence[psycopg.Connection], lang: str, tokens: list[str],
               read_all: int, k1: float, b: float, st: Stats) -> tuple[bool, Parts | None]:
    """:func:`stream_all` split by sentence id over ``cur``'s connection and ``helpers``:
    ``blocks_split`` exports the snapshot of ``cur``'s transaction and cuts the ids into
    as many ranges as connections; each connection imports the snapshot, streams its
    range's postings (``blocks_stream_range``) and sums them on a thread of its own, so the
    servers' reading and numpy's summing of the ranges run side by side. A sentence's
    postings all fall in one range, so each range's sums are complete scores and the
    ranges' best sentences merge exactly (:func:`merge_heads`). Same results as one
    connection, as every connection reads the same snapshot."""
    snapshot, total, cuts = cur.execute(SQL["blocks_split"], {
        "lang": lang, "tokens": tokens, "parts": len(helpers) + 1, "rec": DIR.itemsize}).fetchone()
    st.round_trips += 1
    if total is None:
        return False, None
    if total > read_all:
        return True, None
    bounds = [0, *cuts, 2**62]
    with ThreadPoolExecutor(len(helpers)) as pool:
        jobs = [pool.submit(_read_part_on, h, snapshot, lang, tokens, bounds[i + 1], bounds[i + 2], k1, b)
                for i, h in enumerate(helpers)]
        own = _stream_range(cur, lang, tokens, bounds[0], bounds[1], k1, b, st)
        parts = [job.result() for job in jobs]
    for _, part_st in parts:
        st.postings += part_st.postings
        st.blocks += part_st.blocks
        st.blocks_total += part_st.blocks_total
        st.bytes += part_st.bytes
        st.round_trips += part_st.round_trips
    read = Parts([own, *(p for p, _ in parts)])
    st.extra.update(terms=read.terms, ka=read.ka, kc=read.kc)
    return True, read


def _read_part_on(helper: psycopg.Connection, snapshot: str, lang: str, tokens: list[str], lo: int, hi: int,
                  k1: float, b: float) -> tuple[AllLists, Stats]:
    """One range's sums on ``helper``, in the exported ``snapshot`` (one round trip to
    import it, one to stream, one to end the transaction)."""
    if not helper.autocommit:
        raise ValueError("preselect_blocks: helper connections must be in autocommit mode")
    st = Stats()
    helper.execute(sql.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT {}").format(
        sql.Literal(snapshot)))
    try:
        return _stream_range(helper.cursor(binary=True), lang, tokens, lo, hi, k1, b, st), st
    finally:
        helper.execute("ROLLBACK")


def _stream_range(cur: psycopg.Cursor, lang: str, tokens: list[str], lo: int, hi: int, k1: float, b: float,
                  st: Stats) -> AllLists:
    """The sums of the sentences with ids in [``lo``, ``hi``) (``blocks_stream_range``)."""
    rows = cur.stream(SQL["blocks_stream_range"], {"lang": lang, "tokens": tokens, "from": lo, "to": hi,
                                                   "chunk": CHUNK, "rec": DIR.itemsize, "grp": GROUP, "block": BLOCK})
    st.round_trips += 1
    with closing(rows):
        _, out = sum_chunks(rows, k1, b, st)
    assert out is not None  # every known token gives a row in every range
    return out


def read_ranges(cur: psycopg.Cursor, lang: str, tokens: list[str], read_all: int, k1: float, b: float,
                st: Stats, span: int, keep: int, cache: ListCache | None = None,
                min_df: int = 0) -> tuple[bool, RangeHeads | AllLists | None]:
    """:func:`stream_all` with a bounded memory: when the lists' sentence ids span more
    than ``span``, they are streamed and summed one range of ``span`` ids at a time, in
    the caller's snapshot, and each range is cut to its best ``keep`` sentences (and a
    bound on the rest) before the next is read. The same head as one read whenever the
    caller asks for at most ``keep`` (:func:`merge_heads` is exact); otherwise the caller
    reads again with :func:`stream_all`. Lists within ``span`` ids are read as by it (with
    ``cache``); ranges are never cached (their rows cut lists)."""
    lo, hi, total = cur.execute(SQL["blocks_extent"], {"lang": lang, "tokens": tokens, "rec": DIR.itemsize}
                                ).fetchone()
    st.round_trips += 1
    st.extra["extent"] = None if lo is None else hi - lo + 1
    if lo is None or total > read_all:  # no token in the index; too many postings (MaxScore)
        return lo is not None, None
    if hi - lo < span:
        return stream_all(cur, lang, tokens, read_all, k1, b, st, cache, min_df)
    heads, first = [], None
    for start in range(lo, hi + 1, span):
        part = _stream_range(cur, lang, tokens, start, start + span, k1, b, st)
        st.extra["cells"] = max(st.extra.get("cells", 0), len(part.sums))  # the largest sums array held
        first = first or (part.ka, part.kc, part.terms)  # not the part itself: its sums go with it
        heads.append(part.head(keep))
        del part
    st.blocks_total = st.blocks
    ka, kc, terms = first
    st.extra.update(terms=terms, ka=ka, kc=kc, ranges=len(heads))
    return True, RangeHeads(heads, keep, ka, kc, terms)


class RangeHeads:
    """The best ``keep`` sentences of each range :func:`read_ranges` read, merged on demand."""

    def __init__(self, heads: list[tuple[np.ndarray, np.ndarray, float | None]], keep: int, ka: float, kc: float,
                 terms: list[tuple[float, int]]) -> None:
        self.heads, self.keep = heads, keep
        self.ka, self.kc, self.terms = ka, kc, terms

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """As :meth:`AllLists.head`, for ``k`` up to ``keep``."""
        if k > self.keep:
            raise ValueError(f"RangeHeads kept the best {self.keep} sentences of each range, not {k}")
        return merge_heads(self.heads, k)


class Parts:
    """The sums of several sentence-id ranges read as one (:func:`read_parts`)."""

    def __init__(self, parts: list[AllLists]) -> None:
        self.parts = parts
        self.ka, self.kc, self.terms = parts[0].ka, parts[0].kc, parts[0].terms

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """As :meth:`AllLists.head`, over every range."""
        return merge_heads([p.head(k) for p in self.parts], k)

    def all_scores(self) -> tuple[np.ndarray, np.ndarray]:
        got = [p.all_scores() for p in self.parts]
        return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])


def sum_chunks(rows: Iterable[tuple[Any, ...]], k1: float, b: float, st: Stats,
               lists: QueryLists | None = None) -> tuple[bool, AllLists | None]:
    """Sum ``blocks_stream`` rows in (token rank, chunk) order, whatever order they come
    in: early rows wait in a buffer (the server sends them in that order; nothing depends
    on it). A cache hit's marker row stands for its token's chunks and adds the cached list
    there (``lists``). See :func:`stream_all` for what it returns."""
    known, out = False, None
    waiting: dict[tuple[int, int], tuple[Any, ...]] = {}
    at = (1, 0)
    start = time.perf_counter()
    defer: set[int] = set()
    for row in rows:
        known = True
        rank, n_tokens, chunk = row[0], row[1], row[2]
        if chunk is None:  # more than read_all postings
            continue
        if out is None:
            out = AllLists(row, k1, b)
            st.extra.setdefault("extent", out.hi - out.lo + 1)  # the ids the lists span
            if lists is not None and isinstance(rows, list):  # every row known: the commonest lists may wait
                defer = lists.deferrable(rows, out.n_docs, out.ka, out.kc, out.factor)
        st.tokens = n_tokens
        waiting[(rank, chunk)] = row
        while at in waiting:
            r = waiting.pop(at)
            if r[16]:
                assert lists is not None  # the statement only marks lists it was offered
                out.add_cached(r[4], r[5], lists.hit(r[14]), st, at[0] in defer)
            else:
                keep = lists.keep(r[4], r[14]) if lists is not None else None
                out.add(r[4], r[5], r[6], r[12], r[13], st, keep)
                if keep is not None and at[1] + 1 == r[3]:
                    lists.store(r[17], r[14], r[15], r[4])
            if at[1] == 0:
                out.terms.append((bm25_idf(out.n_docs, r[4]), r[5]))
            at = (at[0], at[1] + 1) if at[1] + 1 < r[3] else (at[0] + 1, 0)
    if out is not None:
        st.blocks_total = st.blocks
        t0 = time.perf_counter()
        st.ms["wait"] = 1000 * (t0 - start) - st.ms.get("decode", 0.0) - st.ms.get("sum", 0.0)
        out.finish()
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t0)
    return known, out


__all__ = ["AllLists", "CHUNK", "decode_ids", "Parts", "RangeHeads", "read_list", "read_parts", "read_ranges", "Stats",
           "stream_all", "sum_chunks"]
