"""Fuzzy lookup: the stored pairs whose source is closest to a sentence by match %, as a
CAT tool's translation-memory pane lists them (``scoi lookup``, ``POST /api/lookup``).

At a minimum match of at least ``LOOKUP_COUNT_FLOOR`` (the default, 70, is the CAT
tools' fuzzy-match threshold) the match % is computed on every stored sentence that can
reach it: the count filter (scoi.core.countfilter) reads all but the query's most
frequent posting lists and keeps the sentences of the right length holding enough of its
tokens, a superset of the answer by proof (docs/method.md §8). Below that floor, or when
the filter keeps too many sentences, the match % is computed on the exact BM25 top
``pool`` of the sentence (the selector's preselection), as shown by the recall measured
in benchmarks/bench_lookup.py. Either way, whatever restricts the selector's
preselection (its corpora, and any later filter on ``pair.meta``) restricts the lookup.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import psycopg

from scoi.core import defaults
from scoi.core.countfilter import POSTINGS_PER_CHECK, bm25_rescore, count_filter, decode_list, narrow, plan
from scoi.core.limits import LIMITS
from scoi.core.match import check_min_match, least_bm25_at, match_all, unrounded
from scoi.db.literals import int_array
from scoi.db.queries import load
from scoi.selection.blockscore import bm25_idf, tf_factors
from scoi.selection.preselect import Stats, pair_filter
from scoi.selection.preselector import snapshot
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
    #: the pool is exact BM25's top ``pool`` (None: no stored sentence shares a token); on
    #: the count path, True: every stored sentence that can reach ``min_match`` was checked
    certified: bool | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: how the matches were found: ``path`` "count" (every stored sentence that can reach
    #: min_match, docs/method.md §8) or "pool" (the BM25 pool); ``candidates`` (sentences
    #: whose match % was computed), ``postings`` read and ``postings_total`` of the query's lists
    search: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``scoi lookup --json`` and ``POST /api/lookup``."""
        return {"query": self.query, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang,
                "min_match": self.min_match, "n": self.n, "pool": self.pool, "certified": self.certified,
                "matches": [vars(m) for m in self.matches], "search": self.search, "timings_ms": self.timings_ms}


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


def by_count(sel: Selector, conn: psycopg.Connection, tokens: list[str], *, n: int, min_match: float,
             limit: int, search: dict[str, Any]) -> list[tuple[int, float, float]] | None:
    """(pair id, match %, BM25 score) of the best ``n`` pairs at or above ``min_match`` over
    every stored sentence of the direction (its corpora, its metadata filter), ranked as
    :func:`rank` ranks: the count filter's candidates (scoi.core.countfilter) checked
    exactly. None when the filter keeps more than ``limit`` sentences (the caller falls
    back to the pool). Call inside one snapshot; ``search`` gets what was read."""
    lowered = [t.lower() for t in tokens]
    cplan = plan(len(lowered), unrounded(min_match))
    cur = conn.cursor(binary=True)
    t0 = time.perf_counter()
    rows = cur.execute(SQL["lookup_lists"], {"lang": sel.src, "tokens": lowered, "skip": cplan.skip}).fetchall()
    t1 = time.perf_counter()
    lists, skipped, read, unread = [], 0, 0, {}
    for tid, _, df, cnt, _, _, meta, ids, tfdl in rows:
        if ids is None:
            skipped += cnt
            unread[tid] = (df, cnt)
            continue
        sids, packed = decode_list(meta, ids, tfdl)
        lists.append((sids, packed, cnt))
        read += len(sids)
    counted = count_filter(lists, cplan, skipped)
    more = sorted(unread, key=lambda tid: unread[tid])  # the rarest unread list first
    while more and len(counted.cand) * POSTINGS_PER_CHECK > unread[more[0]][0]:  # reading it is cheaper
        tid = more.pop(0)
        (_, meta, ids, tfdl), = cur.execute(SQL["lookup_more_lists"], {"ids": [tid]}).fetchall()
        sids, packed = decode_list(meta, ids, tfdl)
        skipped -= unread[tid][1]
        counted = narrow(counted, (sids, packed, unread[tid][1]), cplan, skipped)
        read += len(sids)
        search["recounted"] = search.get("recounted", 0) + 1
    cand = counted.cand
    t2 = time.perf_counter()
    #: recounted: unread lists read after all (too many sentences kept); ms: reading the
    #: lists, decoding and counting them, checking the candidates
    search.update(path="count", recounted=search.get("recounted", 0), candidates=len(cand), postings=read,
                  postings_total=sum(r[2] for r in rows),
                  ms={"read": _ms(t1 - t0), "count": _ms(t2 - t1)})
    if len(cand) > limit:
        return None
    if not len(cand):
        return []
    toks = dict(cur.execute(SQL["lookup_sentence_tokens"], {"ids": int_array(cand.tolist())}).fetchall())
    sids = list(toks)
    kept = {sid: m for sid, m in zip(sids, match_all(tokens, [toks[s] for s in sids])) if m >= min_match}
    if not kept:
        return []
    pairs = dict(cur.execute(SQL["lookup_sentence_pairs"], {
        "ids": int_array(sorted(kept)), **pair_filter(sel.src, sel.tgt, sel.engine.corpus_ids, sel.engine.where)}))
    if not pairs:
        return []
    n_docs, total_len = rows[0][4], rows[0][5]
    k1, b = sel.engine.bm25.k1, sel.engine.bm25.b
    factor = tf_factors(k1 * (1 - b), k1 * b * max(n_docs, 1) / max(total_len, 1))  # as blockread.AllLists
    terms = [(tok, bm25_idf(n_docs, df) * cnt) for _, tok, df, cnt, *_ in rows]
    shown = list(pairs)
    scores = bm25_rescore(terms, [toks[sid] for sid in shown], factor).tolist()
    best = [(p, kept[sid], score) for sid, score in zip(shown, scores) for p in pairs[sid]]
    best.sort(key=lambda r: (-r[1], -r[2], r[0]))
    search["ms"]["check"] = _ms(time.perf_counter() - t2)
    return best[:n]


def lookup(sel: Selector, text: str, *, n: int = defaults.LOOKUP_N, min_match: float = defaults.LOOKUP_MIN_MATCH,
           pool: int = defaults.LOOKUP_POOL, first: int = defaults.LOOKUP_FIRST_POOL,
           count_limit: int = defaults.LOOKUP_COUNT_LIMIT) -> LookupResult:
    """The best ``n`` stored pairs of ``sel``'s direction for ``text`` by match %: the
    sentence's Moses tokens only (no parse). At ``min_match`` >= ``LOOKUP_COUNT_FLOOR``,
    over every stored sentence that can reach it (:func:`by_count`, unless it keeps more
    than ``count_limit``); else over its exact BM25 top ``pool``, whose top ``first`` are
    ranked first and kept when :func:`settled` proves the rest of the pool cannot change
    the result (the same matches, at a fraction of the pool's cost)."""
    check_lookup_args(n, min_match, pool)
    t0 = time.perf_counter()
    conn, _ = sel.reads.choose()  # the replica, or the primary (scoi.db.reads)
    tokens = sel.analyzer.tokenize(text)
    t1 = time.perf_counter()
    search: dict[str, Any] = {}
    best = None
    with snapshot(conn):  # what is read, from the lists to the texts shown, is one snapshot's
        if tokens and min_match >= defaults.LOOKUP_COUNT_FLOOR:
            best = by_count(sel, conn, tokens, n=n, min_match=min_match, limit=count_limit, search=search)
        certified: bool | None = True
        if best is None:
            stats = Stats()
            pooled = candidates(sel, tokens, pool, first=first, settle=lambda found: settled(
                tokens, found, n=n, min_match=min_match, size=first, stats=stats), stats=stats,
                conn=conn) if tokens else []
            best = rank(tokens, pooled, n=n, min_match=min_match)
            certified = True if pooled else None  # the block preselection is exact BM25's top n
            search.update(path="pool", candidates=len(pooled), postings=stats.postings,
                          postings_total=stats.postings if "terms" in stats.extra else None)
        t2 = time.perf_counter()
        about = {r[0]: r[1:] for r in conn.execute(SQL["lookup_pairs"], {
            "pair_ids": [p for p, _, _ in best], "lang": sel.src}).fetchall()} if best else {}
    matches = [Match(p, m, score, *about[p]) for p, m, score in best]
    t3 = time.perf_counter()
    return LookupResult(query=text, src_lang=sel.src, tgt_lang=sel.tgt, min_match=min_match, n=n, pool=pool,
                        matches=matches, certified=certified, search=search,
                        timings_ms={"tokenize": _ms(t1 - t0), "search": _ms(t2 - t1), "match": _ms(t3 - t2),
                                    "total": _ms(t3 - t0)})


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


__all__ = ["Candidate", "LookupResult", "Match", "by_count", "candidates", "check_lookup_args", "lookup", "rank",
           "settled"]
