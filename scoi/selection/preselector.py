"""The preselection seam: one :class:`Preselector` interface, answering a query's pool as a
:class:`~scoi.selection.types.PoolResult`; :class:`BlockPreselector`, its product
implementation, wraps the exact block engine of :mod:`scoi.selection.preselect`.

A pool holds each source sentence once, by its best-ranked pair (docs/method.md §5): the
engine is asked for the pool and some spares, and again deeper in the rare case that the
repeats still leave it short.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol

import psycopg
from psycopg.pq import TransactionStatus

from scoi import config
from scoi.core import defaults
from scoi.core.pool import distinct_sources
from scoi.db import connect
from scoi.db.queries import load
from scoi.db.reads import ReadStatus
from scoi.selection.blockread import NO_CACHE
from scoi.selection.listcache import shared
from scoi.selection.preselect import Stats, pair_filter, preselect_blocks, preselect_many
from scoi.selection.types import Candidate, PoolResult, SelectionError

SQL = load("select")
#: Pairs preselected beyond the pool, as a share of it: the pool drops the pairs of a
#: repeated source sentence (1-5 pairs, in 12-17% of the 42k pools), and with these spares a
#: second, deeper preselection is rare. Measured on the 42k pools (200 long queries, p50 /
#: p95 ms of preselection + fetch): without spares 24.3 / 40.5 -> 25.6 / 66.1; with them
#: 22.9 / 50.1 -> 22.8 / 52.5, same load.
SPARE = 0.1
#: The statements a block preselection runs, in order (``scoi select --sql`` prints them).
STATEMENTS = ("blocks_plan", "blocks_stream", "blocks_top", "blocks_stream_range", "blocks_terms",
              "blocks_read", "blocks_fetch", "blocks_exact", "fetch_candidates")


#: connections one query may read on (each a backend held for the selector's life)
MAX_CONNECTIONS = 16


@dataclass(frozen=True)
class Bm25Params:
    """Preselection settings (docs/preselection.md). The pool is always exact BM25's top n;
    these only choose how it is found."""

    k1: float = defaults.BM25_K1
    b: float = defaults.BM25_B
    #: read every list (no bounds) when the query's tokens have at most this many postings
    #: (default: always; MaxScore with block bounds measured slower up to 1M pairs)
    read_all: int = 2**62
    rare: int = 200_000  # else, postings of the rarest tokens read before theta is known
    probe: int = 0       # sentences scored exactly to find theta (0: max(2 pool, 50))
    #: connections that each read and sum one range of sentence ids in parallel, in one
    #: exported snapshot (docs/replicas.md, "Scoring on several connections"); same pools
    connections: int = 1
    #: sentence ids summed at once: lists spanning more are read one range at a time, so a
    #: query's memory stays bounded (~8 bytes an id: 32 MB) however large the memory grows
    span: int = defaults.BM25_SPAN
    #: postings the process keeps decoded for the next queries (the lists of common tokens,
    #: 18 bytes each; scoi.selection.listcache), exact and checked against the database's
    #: own row versions on every query; 0: none (every list read from the server)
    cache_postings: int = defaults.BM25_CACHE_POSTINGS
    #: the shortest list kept there: rarer lists are cheap to read
    cache_min_df: int = defaults.BM25_CACHE_MIN_DF

    @classmethod
    def from_env(cls) -> Bm25Params:
        """The defaults, with ``SCOI_BM25_CACHE_POSTINGS`` and ``SCOI_BM25_CONNECTIONS`` when
        set: how a large memory is read (neither changes a pool); what a selector made
        without explicit settings uses (the CLI, ``scoi serve``, workers)."""
        got = {"cache_postings": config.int_from_env(config.ENV_BM25_CACHE_POSTINGS, 0),
               "connections": config.int_from_env(config.ENV_BM25_CONNECTIONS, 1, MAX_CONNECTIONS)}
        return cls(**{k: v for k, v in got.items() if v is not None})

    def signature(self) -> str:
        """The settings that change a pool: k1 and b (the pool is exact)."""
        return f"k1={self.k1},b={self.b},exact"


def depth(size: int) -> int:
    """Pairs a preselection asks for to fill a pool of ``size`` distinct sources at once in
    most queries: the pool and its spares (docs/method.md §5)."""
    return size + max(1, round(size * SPARE))


@contextmanager
def snapshot(conn: psycopg.Connection) -> Iterator[None]:
    """One REPEATABLE READ, read-only transaction around the block preselection's round
    trips: counters, directories, blocks and forward rows from one snapshot. Inside a
    transaction the caller opened, that one's snapshot serves."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        yield
        return
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    try:
        yield
    finally:
        conn.execute("ROLLBACK" if conn.info.transaction_status == TransactionStatus.INERROR else "COMMIT")


def fetch(conn: psycopg.Connection, lang: str, tgt: str, scored: list[tuple[int, float]]) -> list[Candidate]:
    """Texts, tokens and terms of the scored pairs, in one round trip, in their order."""
    if not scored:
        return []
    # Binary results: text arrays come back without text-format parsing (isolated, on
    # the same pools: 1.5 ms vs 2.4 ms per fetch).
    rows = conn.cursor(binary=True).execute(SQL["fetch_candidates"], {
        "pair_ids": [p for p, _ in scored], "lang": lang, "tgt": tgt}).fetchall()
    scores = dict(scored)
    return [Candidate(r[0], scores.get(r[0], 0.0), *r[1:6]) for r in rows]


def corpus_ids(conn: psycopg.Connection, names: list[str] | None) -> list[int] | None:
    """The ids of the corpora named (None: every corpus); SelectionError naming unknown ones."""
    if not names:
        return None
    rows = dict((n, i) for i, n in conn.execute(SQL["corpus_ids"], {"names": names}).fetchall())
    missing = [n for n in names if n not in rows]
    if missing:
        raise SelectionError(f"unknown corpus {', '.join(missing)}; see `scoi corpora`")
    return [rows[n] for n in names]


class Preselector(Protocol):
    """What the selector needs of a preselection engine."""

    def pool(self, conn: psycopg.Connection, tokens: list[str], size: int,
             read: ReadStatus | None = None) -> PoolResult:
        """The pool of ``size`` distinct source sentences for the query ``tokens``."""
        ...

    def prepare(self, conn: psycopg.Connection, token_lists: list[list[str]], size: int) -> None:
        """Preselect many queries' pools at once; the next :meth:`pool` of each takes it."""
        ...


@dataclass
class BlockPreselector:
    """Exact BM25 top n from the posting blocks (scoi.selection.preselect), in the direction
    ``src``-``tgt``, restricted to ``corpus_ids`` and to pairs whose metadata holds ``where``."""

    src: str
    tgt: str
    corpus_ids: list[int] | None = None
    where: dict[str, str] | None = None
    bm25: Bm25Params = Bm25Params()

    def __post_init__(self) -> None:
        #: pools made by :meth:`prepare`, by lowercased tokens, for the default depth
        self.prepared: dict[tuple[str, ...], tuple[int, list[Candidate]]] = {}
        self.helper_conns: list[psycopg.Connection] = []  # bm25.connections > 1 (helpers)
        self.helper_dsn = ""
        #: the ids the last query's lists spanned (None: no query yet): whether the next one
        #: first asks where its lists lie (``blocks_plan``), to read them in ranges
        self.extent: int | None = None
        #: the process's list cache for this setting (shared by every selector that has it)
        self.cache = shared(self.bm25.cache_postings)

    def helpers(self, conn: psycopg.Connection) -> list[psycopg.Connection]:
        """``bm25.connections`` - 1 more connections to the server ``conn`` reads from
        (opened on first use, again when the read route moves to another server)."""
        want = self.bm25.connections - 1
        if want < 1:
            return []
        dsn = conn.info.dsn
        if self.helper_dsn != dsn or len(self.helper_conns) != want:
            self.close()
            self.helper_conns = [connect(dsn, password=conn.info.password, autocommit=True) for _ in range(want)]
            self.helper_dsn = dsn
        return self.helper_conns

    def close(self) -> None:
        """Close the helper connections (the caller's own connection stays open)."""
        for c in self.helper_conns:
            c.close()
        self.helper_conns = []

    def filtered(self, where: dict[str, str] | None) -> BlockPreselector:
        """The same engine over the pairs whose metadata holds ``where`` (nothing prepared,
        no helper connections of its own until it needs them)."""
        return replace(self, where=where)

    def top(self, conn: psycopg.Connection, tokens: list[str], n: int, *, stats: Stats | None = None,
            details: dict[int, tuple[Any, ...]] | None = None, **blocks: Any) -> list[tuple[int, float]]:
        """(pair id, score) of exact BM25's top ``n`` pairs, best first (ties by pair id),
        several pairs of one source included. ``stats``, ``details`` and ``blocks``: as
        scoi.selection.preselect.preselect_blocks takes them (the lookup's options)."""
        if not tokens:
            return []
        st = stats if stats is not None else Stats()
        # Small memories (lists within half a span last time) skip the extent's round trip; with
        # helper connections the ranged read (with the cache) runs at any size.
        small = self.extent is not None and self.extent * 2 < self.bm25.span and self.bm25.connections < 2
        span = 0 if small else self.bm25.span
        with snapshot(conn):
            found = preselect_blocks(conn, lang=self.src, tgt=self.tgt, tokens=tokens, n=n, corpora=self.corpus_ids,
                                     k1=self.bm25.k1, b=self.bm25.b, read_all=self.bm25.read_all,
                                     budget=self.bm25.rare, probe=self.bm25.probe, stats=st, details=details,
                                     where=self.where, helpers=self.helpers(conn), span=span, cache=self.cache,
                                     cache_min_df=self.bm25.cache_min_df, **blocks)
        self.extent = st.extra.get("extent", self.extent)
        return found

    def ranked(self, conn: psycopg.Connection, tokens: list[str], n: int) -> list[Candidate]:
        """The top ``n`` pairs by BM25 with their texts and terms, best first."""
        details: dict[int, tuple[Any, ...]] = {}
        found = self.top(conn, tokens, n, details=details)
        if all(p in details for p, _ in found):  # mapped and fetched in the same round trip
            return [Candidate(p, s, *details[p][:5]) for p, s in found]
        return fetch(conn, self.src, self.tgt, found)

    def pool(self, conn: psycopg.Connection, tokens: list[str], size: int,
             read: ReadStatus | None = None) -> PoolResult:
        """The top ``size`` pairs by BM25 holding each source sentence once, by its
        best-ranked pair (scoi.core.pool.distinct_sources); when that drops pairs, a
        deeper preselection fills the pool up to its size. A pool :meth:`prepare` made
        for this size serves first."""
        if not tokens:
            return PoolResult([], True, read)
        n = depth(size)
        ready = self.prepared.pop(tuple(t.lower() for t in tokens), None)
        rows = ready[1] if ready is not None and ready[0] == n else self.ranked(conn, tokens, n)
        while True:
            pool = [rows[i] for i in distinct_sources([r.src for r in rows])[:size]]
            if len(pool) >= size or len(rows) < n:  # full, or every matching pair is in
                return PoolResult(pool, True if rows else None, read)
            n *= 2
            rows = self.ranked(conn, tokens, n)

    def prepare(self, conn: psycopg.Connection, token_lists: list[list[str]], size: int) -> None:
        """Preselect and fetch the pools of many queries at once: each posting list read
        once for all of them, pairs and candidates in one round trip each."""
        lists = [toks for toks in dict.fromkeys(tuple(t.lower() for t in toks) for toks in token_lists) if toks]
        if not lists:
            return
        n = depth(size)
        with snapshot(conn):
            pools = preselect_many(conn, lang=self.src, tgt=self.tgt, token_lists=[list(t) for t in lists], n=n,
                                   corpora=self.corpus_ids, k1=self.bm25.k1, b=self.bm25.b,
                                   read_all=self.bm25.read_all, budget=self.bm25.rare, probe=self.bm25.probe,
                                   where=self.where)
            rows = {r.pair_id: r for r in fetch(conn, self.src, self.tgt,
                                                list(dict.fromkeys((x, 0.0) for pool in pools for x, _ in pool)))}
        for toks, pool in zip(lists, pools):
            self.prepared[toks] = (n, [replace(rows[p], score=s) for p, s in pool])  # shallow: lists shared

    def statements(self) -> str:
        """The SQL a preselection runs (numpy scores between the reads), as text."""
        return "\n\n".join(f"-- {name}\n{SQL[name]}" for name in STATEMENTS)

    def params(self, tokens: list[str], n: int) -> dict[str, Any]:
        """The statements' parameters for the top ``n`` pairs of ``tokens``."""
        return {**pair_filter(self.src, self.tgt, self.corpus_ids, self.where),
                "tokens": [t.lower() for t in tokens], "n": n, "read_all": self.bm25.read_all,
                "rare": self.bm25.rare, **NO_CACHE}


__all__ = ["Bm25Params", "BlockPreselector", "Preselector", "SPARE", "corpus_ids", "depth", "fetch", "snapshot"]
