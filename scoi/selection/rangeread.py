"""A query's posting lists read one sentence-id range at a time (:func:`read_ranges`: a
bounded memory per query at any size), the ranges split over helper connections in one
exported snapshot. Each range's sums are complete scores (a sentence's postings all fall
in one range), so the ranges' best sentences merge exactly
(:func:`scoi.selection.blockscore.merge_heads`). Reading and summing a range's rows is
:mod:`scoi.selection.blockread`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from psycopg import sql

from scoi.core.bm25blocks import BLOCK, DIR, GROUP
from scoi.db.queries import load
from scoi.selection.blockread import CHUNK, NO_CACHE, AllLists, Stats, stream_all, sum_chunks
from scoi.selection.blockscore import merge_heads, tf_factors
from scoi.selection.listcache import DEFER_BOUND, DEFER_SHARE, ListCache, QueryLists

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
T = TypeVar("T")


def _on_every_connection(cur: psycopg.Cursor, helpers: Sequence[psycopg.Connection], snapshot: str | None,
                         work: Callable[[psycopg.Cursor, int, Stats], T], st: Stats) -> tuple[T, list[T]]:
    """``work(cursor, i, stats)`` for i = 0 on ``cur`` and i = 1.. on each helper, side by
    side on threads, every helper inside the exported ``snapshot`` of ``cur``'s
    transaction (one round trip to import it, one to end it); the helpers' reads are
    counted into ``st``."""
    if not helpers:
        return work(cur, 0, st), []
    with ThreadPoolExecutor(len(helpers)) as pool:
        jobs = [pool.submit(_in_snapshot, h, snapshot, work, i + 1) for i, h in enumerate(helpers)]
        own = work(cur, 0, st)
        got = [job.result() for job in jobs]
    for _, part_st in got:
        st.add(part_st)
    return own, [r for r, _ in got]


def _in_snapshot(helper: psycopg.Connection, snapshot: str | None, work: Callable[[psycopg.Cursor, int, Stats], T],
                 i: int) -> tuple[T, Stats]:
    if not helper.autocommit:
        raise ValueError("preselect_blocks: helper connections must be in autocommit mode")
    st = Stats()
    helper.execute(sql.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT {}").format(
        sql.Literal(snapshot)))
    try:
        return work(helper.cursor(binary=True), i, st), st
    finally:
        helper.execute("ROLLBACK")


def stream_range(cur: psycopg.Cursor, lang: str, tokens: list[str], lo: int, hi: int, k1: float, b: float,
                 st: Stats, lists: QueryLists | None = None, defer: set[int] | None = None,
                 part: int = 0) -> AllLists:
    """The sums of the sentences with ids in [``lo``, ``hi``) (``blocks_stream_range``);
    with ``lists``, the lists the cache holds at their current version are taken from it
    (``defer``: the ranks left out of the sums until the range's best are asked for), and
    those read are collected as range ``part`` for :meth:`QueryLists.store` (once every
    range is read)."""
    rows = cur.stream(SQL["blocks_stream_range"], {"lang": lang, "tokens": tokens, "from": lo, "to": hi,
                                                   "chunk": CHUNK, "rec": DIR.itemsize, "grp": GROUP, "block": BLOCK,
                                                   **(lists.params() if lists is not None else NO_CACHE)})
    st.round_trips += 1
    with closing(rows):
        _, out = sum_chunks(rows, k1, b, st, lists, defer or set(), store=False, part=part)
    assert out is not None  # every known token gives a row in every range
    return out


def read_ranges(cur: psycopg.Cursor, lang: str, tokens: list[str], read_all: int, k1: float, b: float,
                st: Stats, span: int, keep: int, cache: ListCache | None = None, min_df: int = 0,
                helpers: Sequence[psycopg.Connection] = ()) -> tuple[bool, RangeHeads | AllLists | None]:
    """:func:`stream_all` with a bounded memory: when the lists' sentence ids span more
    than ``span``, they are streamed and summed one range of at most ``span`` ids at a
    time, in the caller's snapshot, and each range is cut to its best ``keep`` sentences
    (and a bound on the rest) before the next is read. The same head as one read whenever
    the caller asks for at most ``keep`` (:func:`merge_heads` is exact); otherwise the
    caller reads again with :func:`stream_all`. Lists within ``span`` ids are read as by
    it, unless there are ``helpers``.
    ``cache``: as :func:`stream_all`'s, range by range: a list it holds at its current
    version is sliced to each range, never read; the commonest of those are added in each
    range only where they can matter (:class:`scoi.selection.listcache.Deferred`, with that
    range's k-th best or, if higher, the k-th best of the ranges read before it: at least
    ``keep`` sentences reach either, so the merged k-th best does too; the higher that
    bound, the more lists may wait: ``DEFER_SHARE``); lists of at least ``min_df``
    postings read in every range are stored whole.
    ``helpers``: the ranges (as many per connection, at least one each) are read side by
    side, each connection on a thread of its own in ``cur``'s exported snapshot: one
    query's memory is then one range per connection."""
    lists = QueryLists(cache, cur.connection, lang, tokens, min_df) if cache is not None else None
    plan = cur.execute(SQL["blocks_plan"], {"lang": lang, "tokens": tokens, "rec": DIR.itemsize,
                                            "export": bool(helpers),
                                            **(lists.params() if lists is not None else NO_CACHE)}).fetchall()
    st.round_trips += 1
    firsts = [r[7] for r in plan if r[7] is not None]
    if not firsts:  # no token in the index
        return False, None
    lo, hi, total = min(firsts), max(r[8] for r in plan if r[8] is not None), sum(r[2] for r in plan)
    st.extra["extent"] = hi - lo + 1
    if total > read_all:  # too many postings (MaxScore)
        return True, None
    if hi - lo < span and not helpers:
        return stream_all(cur, lang, tokens, read_all, k1, b, st, cache, min_df)
    n_docs, total_len = plan[0][9], plan[0][10]
    ka, kc = k1 * (1 - b), k1 * b * max(n_docs, 1) / max(total_len, 1)
    hits, table = {r[0]: (r[2], r[3], r[4]) for r in plan if r[6]}, tf_factors(ka, kc)

    def deferred(floor: float) -> set[int]:  # the commonest cached lists, waiting in the range
        if lists is None:
            return set()
        return lists.deferrable(hits, len(plan), n_docs, ka, kc, table, max(DEFER_BOUND, DEFER_SHARE * floor))

    conns = 1 + len(helpers)
    count = -(-max(-(-(hi - lo + 1) // span), conns) // conns) * conns  # as many per connection, each within span
    size = -(-(hi - lo + 1) // count)
    heads: list[tuple[np.ndarray, np.ndarray, float | None]] = [(np.zeros(0, np.int64), np.zeros(0), None)] * count

    def floor() -> float:
        """A score at least ``keep`` sentences of the ranges read so far reach (0: unknown)."""
        scores = np.concatenate([h[1] for h in heads])  # (another thread may add one meanwhile)
        return float(np.partition(scores, len(scores) - keep)[len(scores) - keep]) if len(scores) >= keep else 0.0

    def ranges(c: psycopg.Cursor, w: int, wst: Stats) -> tuple[float, float, list[tuple[float, int]]]:
        first = None
        for i in range(w, count, conns):
            known = floor()
            part = stream_range(c, lang, tokens, lo + i * size, lo + (i + 1) * size, k1, b, wst, lists,
                                deferred(known), i)
            wst.extra["cells"] = max(wst.extra.get("cells", 0), len(part.sums))  # the largest sums array held
            first = first or (part.ka, part.kc, part.terms)  # not the part itself: its sums go with it
            t0 = time.perf_counter()
            heads[i] = part.head(keep, known)
            wst.ms["ranges"] = wst.ms.get("ranges", 0.0) + 1000 * (time.perf_counter() - t0)
            del part
        assert first is not None  # every connection has a range
        return first

    (ka, kc, terms), _ = _on_every_connection(cur, helpers, plan[0][12], ranges, st)
    if lists is not None:
        for r in plan:
            lists.store(r[11], r[4], r[5], r[2])
        lists.done()
    st.blocks_total = st.blocks
    st.extra.update(terms=terms, ka=ka, kc=kc, ranges=count)
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


__all__ = ["RangeHeads", "read_ranges", "stream_range"]
