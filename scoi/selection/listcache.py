"""The hot-list cache: decoded posting lists of a query's commonest tokens, kept in the
selector's process between queries (docs/preselection.md, "The list cache").

PostgreSQL stays the only store; the cache is derived data, like the OS page cache, and
PostgreSQL itself says when an entry is stale. Every write of a token's posting blocks
(ingest's appends, a delete's rewrite, a rebuild) rewrites the token's ``bm25_dir`` row in
the same transaction, so that row's ``xmin`` names the version of the blocks beside it:
an entry holds the list read at one version, and the streaming statement
(``blocks_stream``) sends one marker row instead of a token's postings only when the
directory row visible in the query's snapshot has that very version (and df). The lists
are summed in the same order either way, so the scores are the same floats.

An entry keeps, per posting, the absolute sentence id (as numpy's index type: ``add.at``
measured ~20% slower with int32 ids, which it converts), the packed ``tf << 8 | dl`` and
the tf factor tf / (tf + ka + kc dl) of the current (ka, kc) (recomputed from the packed
values when the corpus statistics change): a query then only multiplies by the token's
weight and adds. 18 bytes per posting; the number of postings held is bounded (least
recently used lists go first).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from scoi.db.queries import load
from scoi.selection.blockscore import bm25_idf

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
#: the most a suffix of a query's commonest cached lists may add to a score to be left out
#: of the sums until the best sentences are known (:class:`Deferred`)
DEFER_BOUND = 2.0
#: read by range, once a lower bound T of the k-th best score is known (earlier ranges'
#: best), lists adding up to this share of T may wait too: the sentences within that much
#: of T stay few (a 10M-pair memory's long queries: 0.5-2 % of a range's sentences)
DEFER_SHARE = 1 / 3
#: bytes an entry holds per posting: sentence id (intp), packed tf/dl (uint16), tf factor (float64)
BYTES_PER_POSTING = 8 + 2 + 8


@dataclass
class CachedList:
    """One token's whole posting list as read at directory version ``version``."""

    lang: str
    token: str
    token_id: int
    version: int
    df: int
    ids: np.ndarray     # absolute sentence ids, ascending (read-only)
    packed: np.ndarray  # tf << 8 | dl, uint16 (read-only)
    #: (ka, kc), the tf factor of every posting under them and the largest (replaced whole)
    scaled: tuple[tuple[float, float], np.ndarray, float] | None = None

    def factors(self, ka: float, kc: float, table: np.ndarray) -> tuple[np.ndarray, float]:
        """tf / (tf + ka + kc dl) of each posting, and the largest: ``table``
        (scoi.selection.blockscore.tf_factors of (ka, kc)) gathered once per corpus
        statistics, kept for the next queries."""
        got = self.scaled
        if got is None or got[0] != (ka, kc):
            out = table[self.packed.astype(np.intp)]
            out.flags.writeable = False
            got = ((ka, kc), out, float(out.max()) if len(out) else 0.0)
            self.scaled = got  # one reference assignment: readers see the old or the new triple
        return got[1], got[2]


@dataclass
class ListCache:
    """Posting lists by (server key, language, token), at most ``max_postings`` postings in all,
    least recently used evicted first; safe to share between threads (one lock around
    the index; entries are immutable but for their factors, replaced whole)."""

    max_postings: int
    lists: OrderedDict[tuple[Any, str, str], CachedList] = field(default_factory=OrderedDict)
    postings: int = 0
    hits: int = 0         # postings summed from the cache
    misses: int = 0       # postings of cacheable lists read from the server
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    keys: weakref.WeakKeyDictionary[Any, Any] = field(default_factory=weakref.WeakKeyDictionary, repr=False)

    def server(self, conn: psycopg.Connection) -> Any:
        """The key of the server and database ``conn`` reads (one round trip per connection):
        directory versions are only comparable within one database of one running server."""
        with self.lock:
            key = self.keys.get(conn)
        if key is None:
            row = conn.execute(SQL["server_key"]).fetchone()
            key = (conn.info.host, conn.info.port, conn.info.dbname, *row)
            with self.lock:
                self.keys[conn] = key
        return key

    def held(self, server: Any, lang: str, tokens: list[str]) -> dict[int, CachedList]:
        """The entries of ``server`` for these ``lang`` tokens, by token id: what a query offers
        the streaming statement. Marks them recently used."""
        out: dict[int, CachedList] = {}
        with self.lock:
            for tok in tokens:
                e = self.lists.get((server, lang, tok))
                if e is not None:
                    self.lists.move_to_end((server, lang, tok))
                    out[e.token_id] = e
        return out

    def put(self, server: Any, entry: CachedList) -> bool:
        """Keep ``entry`` (replacing the token's older version), evicting the least recently
        used lists to stay within ``max_postings``; False if the list alone is too long."""
        size = len(entry.ids)
        if size > self.max_postings:
            return False
        with self.lock:
            old = self.lists.pop((server, entry.lang, entry.token), None)
            if old is not None:
                self.postings -= len(old.ids)
            while self.lists and self.postings + size > self.max_postings:
                _, gone = self.lists.popitem(last=False)
                self.postings -= len(gone.ids)
            self.lists[(server, entry.lang, entry.token)] = entry
            self.postings += size
        return True

    def count(self, hits: int, misses: int) -> None:
        with self.lock:
            self.hits += hits
            self.misses += misses

    def clear(self) -> None:
        with self.lock:
            self.lists.clear()
            self.postings = self.hits = self.misses = 0

    def info(self) -> dict[str, Any]:
        """Lists and postings held, their memory, and the share of cacheable postings summed
        from the cache rather than read (since the last :meth:`clear`)."""
        with self.lock:
            nbytes = sum(e.ids.nbytes + e.packed.nbytes + (e.scaled[1].nbytes if e.scaled else 0)
                         for e in self.lists.values())
            seen = self.hits + self.misses
            return {"lists": len(self.lists), "postings": self.postings, "mb": nbytes / 1e6,
                    "hit_rate": self.hits / seen if seen else None, "max_postings": self.max_postings}


def make_entry(lang: str, token: str, token_id: int, version: int, df: int, ids: list[np.ndarray],
               packed: list[np.ndarray]) -> CachedList:
    """An entry from a list's chunks as read (absolute ids, packed tf/dl), made read-only."""
    all_ids = (np.concatenate(ids) if len(ids) != 1 else ids[0]).astype(np.intp)
    all_packed = (np.concatenate(packed) if len(packed) != 1 else packed[0]).astype(np.uint16)
    all_ids.flags.writeable = False
    all_packed.flags.writeable = False
    return CachedList(lang, token, token_id, version, df, all_ids, all_packed)


class QueryLists:
    """One query's use of a :class:`ListCache`: the entries offered to the streaming
    statement, and the lists of at least ``min_df`` postings it reads whole, stored as
    their last chunk is summed."""

    def __init__(self, cache: ListCache, conn: psycopg.Connection, lang: str, tokens: list[str], min_df: int) -> None:
        self.cache, self.lang, self.min_df = cache, lang, min_df
        self.server = cache.server(conn)
        self.offered = cache.held(self.server, lang, tokens)
        #: (token id, range) -> the chunks read (a range's, when read by range: possibly on
        #: several threads, each range on one)
        self.reading: dict[tuple[int, int], tuple[list[np.ndarray], list[np.ndarray]]] = {}
        self.used: set[int] = set()  # token ids summed from the cache (once, however many ranges)
        self.misses = 0

    def params(self) -> dict[str, list[int]]:
        """``blocks_stream``'s ``cached``, ``versions`` and ``cached_df``."""
        got = list(self.offered.values())
        return {"cached": [e.token_id for e in got], "versions": [e.version for e in got],
                "cached_df": [e.df for e in got]}

    def deferrable(self, hits: dict[int, tuple[int, int, int]], n_tokens: int, n_docs: int, ka: float, kc: float,
                   table: np.ndarray, bound: float = DEFER_BOUND) -> set[int]:
        """Ranks of the longest suffix of the query's ``n_tokens`` tokens (the commonest:
        ranks go by df) whose lists all come from the cache and whose contributions add up
        to at most ``bound`` (:class:`Deferred`); ``hits``: rank -> (df, count in the
        query, token id) of the lists the statement found current in the cache."""
        out: set[int] = set()
        ub = 0.0
        for rank in range(n_tokens, 0, -1):
            r = hits.get(rank)
            if r is None:
                break
            ub += bm25_idf(n_docs, r[0]) * r[1] * self.offered[r[2]].factors(ka, kc, table)[1]
            if ub > bound:
                break
            out.add(rank)
        return out

    def hit(self, token_id: int) -> CachedList:
        """The entry the statement found current (it offered it)."""
        self.used.add(token_id)
        return self.offered[token_id]

    def keep(self, df: int, token_id: int, part: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """Where a list read from the server collects its chunks (of range ``part``); None:
        too rare to cache."""
        if df < self.min_df or df > self.cache.max_postings:
            return None
        return self.reading.setdefault((token_id, part), ([], []))

    def store(self, token: str, token_id: int, version: int, df: int) -> None:
        """The list of ``token_id`` is read whole (its ranges in order): keep it (if it holds
        its ``df`` postings)."""
        ids: list[np.ndarray] = []
        packed: list[np.ndarray] = []
        for key in sorted(k for k in self.reading if k[0] == token_id):
            got = self.reading.pop(key)
            ids += got[0]
            packed += got[1]
        if not ids:
            return
        self.misses += df
        if sum(len(i) for i in ids) != df:  # (not every range of it was read)
            return
        self.cache.put(self.server, make_entry(self.lang, token, token_id, version, df, ids, packed))

    def done(self) -> None:
        self.cache.count(sum(len(self.offered[t].ids) for t in self.used), self.misses)


class Deferred:
    """The commonest cached lists of a query (a suffix in rank order), left out of the sums
    until the best sentences are asked for (MaxScore with the lists in memory): when ``k``
    sentences already reach T on the other lists, only sentences within ``ub`` (the most
    these lists can add) of T can be among the best k, and only they get these lists'
    contributions (a binary search per sentence and list), in rank order after the others,
    so their sums are the same floats as a full read. Everything else is added only if
    all scores are asked for, or there are too many such sentences."""

    def __init__(self) -> None:
        self.lists: list[tuple[np.ndarray, np.ndarray, float]] = []  # (ids, tf factors, weight)
        self.ub = 0.0
        self.done: np.ndarray | None = None  # cells that got them (None: none yet)

    def add(self, ids: np.ndarray, factors: np.ndarray, fmax: float, w: float) -> None:
        self.lists.append((ids, factors, w))
        self.ub += w * fmax

    def resolve(self, buf: np.ndarray, base: int, lo: int, k: int, known: float = 0.0) -> float | None:
        """Add the lists to the sentences of ``buf[lo:]`` (id = cell + ``base``) whose sum
        so far is within ``ub`` of T, the k-th best (at least k sentences score T or more,
        so no other can be among the best k), or ``known`` if higher (a score at least k
        other sentences reach: earlier ranges'); T, a bound on every other sentence's
        score. None (nothing added) when those sentences are too many (over 1/32 of them)."""
        raw = buf[lo:]
        size = max(1, len(raw) // (8 * k))
        maxima = np.maximum.reduceat(raw, np.arange(0, len(raw), size))
        floor = maxima[np.argpartition(maxima, len(maxima) - k)[len(maxima) - k]]
        sub = raw[raw >= floor]  # at least k: k chunks reach the floor
        t = max(float(np.partition(sub, len(sub) - k)[len(sub) - k]), known)
        cells = np.flatnonzero(raw >= t - self.ub - 1e-8 * max(1.0, t))  # slack: sums in another order
        if t - self.ub <= 1e-8 or len(cells) > len(raw) // 32:
            return None
        cells += lo
        sids = cells + base
        for ids, f, w in self.lists:
            pos = np.minimum(np.searchsorted(ids, sids), len(ids) - 1)
            found = ids[pos] == sids
            buf[cells[found]] += f[pos[found]] * w  # distinct cells: one addition each
        self.done = cells
        return t

    def complete(self, buf: np.ndarray, base: int) -> None:
        """Add the lists to every sentence not resolved yet."""
        from scoi.selection.kernels import add_list  # (numba's import: see that module)
        skip = None
        if self.done is not None:
            skip = np.zeros(len(buf), dtype=bool)
            skip[self.done] = True
        for ids, f, w in self.lists:
            add_list(buf, ids, f, w, base, skip)
        self.lists = []


_SHARED: dict[int, ListCache] = {}
_SHARED_LOCK = threading.Lock()


def shared(max_postings: int) -> ListCache | None:
    """The process's cache of that bound (every selector with the same setting shares it;
    None: 0, no cache)."""
    if max_postings <= 0:
        return None
    with _SHARED_LOCK:
        return _SHARED.setdefault(max_postings, ListCache(max_postings))


__all__ = ["BYTES_PER_POSTING", "CachedList", "DEFER_BOUND", "DEFER_SHARE", "Deferred", "ListCache", "make_entry", "QueryLists",
           "shared"]
