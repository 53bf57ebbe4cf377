"""Fuzzy lookup: the stored pairs whose source is closest to a sentence by match %, as a
CAT tool's translation-memory pane lists them (``scoi lookup``, ``POST /api/lookup``).

The match % (scoi.core.match) is computed on the exact BM25 top ``pool`` of the sentence
(the selector's preselection), not on every stored sentence: a sentence that shares most
of the query's tokens, in order, shares its rare ones too and ranks high by BM25
(docs/method.md §8, and the recall measured by benchmarks/bench_lookup.py).
Whatever restricts the selector's preselection (its corpora, and any later filter on
``pair.meta``) restricts the lookup the same way, since the pool is the selector's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import psycopg

from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.core.match import check_min_match, least_bm25_at, match_all
from scoi.db.queries import load
from scoi.selection.preselect import Stats
from scoi.selection.selector import SelectionError, Selector

SQL = load("lookup")


@dataclass
class Match:
    """One stored pair as the TM pane shows it."""

    pair_id: int
    match: float
    score: float  # its BM25 score against the query (the first tie-break)
    src: str
    tgt: str
    corpus: str
    meta: dict[str, Any]


@dataclass
class LookupResult:
    query: str
    src_lang: str
    tgt_lang: str
    min_match: float
    n: int
    pool: int
    matches: list[Match]
    #: the pool is exact BM25's top ``pool`` (None: no stored sentence shares a token)
    certified: bool | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``scoi lookup --json`` and ``POST /api/lookup``."""
        return {"query": self.query, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang,
                "min_match": self.min_match, "n": self.n, "pool": self.pool, "certified": self.certified,
                "matches": [vars(m) for m in self.matches], "timings_ms": self.timings_ms}


#: one pool entry: (pair id, BM25 score, source Moses tokens)
Candidate = tuple[int, float, list[str]]


def candidates(sel: Selector, tokens: list[str], pool: int, *, first: int = 0,
               settle: Callable[[list[Candidate]], bool] | None = None, stats: Stats | None = None,
               conn: psycopg.Connection | None = None) -> list[Candidate]:
    """The exact BM25 top ``pool`` of ``tokens`` in ``sel``'s direction (its corpora), with
    each pair's source tokens, from the preselection's last round trip (``lookup_top``).
    ``first``, ``settle``: the top ``first`` only, when ``settle`` accepts them (the posting
    lists are read once either way); ``stats``: filled by the preselection; ``conn``: the
    connection to read (default: the one ``sel`` would read now)."""
    conn = conn or sel.reader
    details: dict[int, tuple[Any, ...]] = {}

    def with_tokens(found: list[tuple[int, float]]) -> list[Candidate]:
        missing = [p for p, _ in found if p not in details]  # not mapped by lookup_top (a tie, another engine)
        if missing:
            details.update((p, (t,)) for p, t in conn.cursor(binary=True).execute(SQL["lookup_tokens"], {
                "pair_ids": missing, "lang": sel.src}))
        return [(p, score, details[p][0]) for p, score in found]

    blocks: dict[str, Any] = {"first": first, "settle": lambda found: settle(with_tokens(found))} if settle else {}
    return with_tokens(sel.engine.top(conn, tokens, pool, stats=stats, details=details, top_sql=SQL["lookup_top"],
                                      **blocks))


def rank(tokens: list[str], pool: list[Candidate], *, n: int, min_match: float) -> list[tuple[int, float, float]]:
    """(pair id, match %, BM25 score) of the best ``n`` candidates at or above ``min_match``
    by match % against ``tokens``; ties: higher BM25 score, then lower pair id (a stable
    order for the same memory)."""
    scored = [(p, m, score) for (p, score, _), m in zip(pool, match_all(tokens, [c[2] for c in pool]))
              if m >= min_match]
    scored.sort(key=lambda r: (-r[1], -r[2], r[0]))
    return scored[:n]


def settled(tokens: list[str], pooled: list[Candidate], *, n: int, min_match: float, size: int,
            stats: Stats) -> bool:
    """Whether the best ``n`` of ``pooled`` (the BM25 top ``size``) are provably what any
    larger pool gives: the pool holds every pair sharing a token, or every pair left out
    (BM25 score at most the pool's last) scores below the least BM25 a sentence reaching
    the n-th match % (or ``min_match``) must have (scoi.core.match.least_bm25_at)."""
    if len(pooled) < size:
        return True
    if "terms" not in stats.extra:  # a preselection that did not read every list
        return False
    best = rank(tokens, pooled, n=n, min_match=min_match)
    need = best[n - 1][1] if len(best) >= n else min_match
    bound = least_bm25_at(need, len(tokens), stats.extra["terms"], stats.extra["ka"], stats.extra["kc"])
    return bound > pooled[-1][1] * (1 + 1e-9) + 1e-9  # scores are rounded to 9 decimals


def check_lookup_args(n: int, min_match: float, pool: int) -> None:
    """SelectionError naming the first bad argument."""
    try:
        check_min_match(min_match)
    except ValueError as e:
        raise SelectionError(str(e)) from None
    if not 1 <= n <= pool:
        raise SelectionError(f"-n {n} is out of range; expected 1 to the pool size ({pool})")
    if not 1 <= pool <= LIMITS["pool"][1]:
        raise SelectionError(f"pool size must be from 1 to {LIMITS['pool'][1]}, not {pool}")


def lookup(sel: Selector, text: str, *, n: int = defaults.LOOKUP_N, min_match: float = defaults.LOOKUP_MIN_MATCH,
           pool: int = defaults.LOOKUP_POOL, first: int = defaults.LOOKUP_FIRST_POOL) -> LookupResult:
    """The best ``n`` stored pairs of ``sel``'s direction for ``text`` by match %: the
    sentence's Moses tokens only (no parse), its exact BM25 top ``pool``, ranked. The top
    ``first`` are ranked first and kept when :func:`settled` proves the rest of the pool
    cannot change the result (the same matches, at a fraction of the pool's cost)."""
    check_lookup_args(n, min_match, pool)
    t0 = time.perf_counter()
    conn, _ = sel.reads.choose()  # the replica, or the primary (scoi.db.reads)
    tokens = sel.analyzer.tokenize(text)
    t1 = time.perf_counter()
    stats = Stats()
    pooled = candidates(sel, tokens, pool, first=first, settle=lambda found: settled(
        tokens, found, n=n, min_match=min_match, size=first, stats=stats), stats=stats, conn=conn) if tokens else []
    best = rank(tokens, pooled, n=n, min_match=min_match)
    certified = True if pooled else None  # the block preselection is exact BM25's top n
    t2 = time.perf_counter()
    about = {r[0]: r[1:] for r in conn.execute(SQL["lookup_pairs"], {
        "pair_ids": [p for p, _, _ in best], "lang": sel.src}).fetchall()} if best else {}
    matches = [Match(p, m, score, *about[p]) for p, m, score in best]
    t3 = time.perf_counter()
    return LookupResult(query=text, src_lang=sel.src, tgt_lang=sel.tgt, min_match=min_match, n=n, pool=pool,
                        matches=matches, certified=certified,
                        timings_ms={"tokenize": _ms(t1 - t0), "pool": _ms(t2 - t1), "match": _ms(t3 - t2),
                                    "total": _ms(t3 - t0)})


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


__all__ = ["Candidate", "LookupResult", "Match", "candidates", "check_lookup_args", "lookup", "rank", "settled"]
