"""Exact BM25 top n from the posting blocks (migration 0016), scored in numpy.

PostgreSQL stores the index and is asked for packed posting lists; the arithmetic
happens here. The result is exact BM25's top ``n`` pairs (score, then pair id) by
construction (docs/preselection.md, "Block preselection"):

- by default (``read_all``): one round trip reads every posting list of the query's
  tokens, every sentence's score is summed, and the best sentences are mapped to their
  pairs of the direction (and corpora) in a second;
- above ``read_all`` postings, MaxScore with per-block bounds: the rarest lists (up to
  ``budget`` postings) and every token's block directory; the best ``probe`` sentences
  met, by upper bound, scored exactly (forward index) give theta, a lower bound of the
  n-th pair's score; the tokens past the longest prefix (by bound) whose bounds add up
  to less than theta are read in full; the others are resolved, heaviest first, only in
  the blocks that hold a sentence whose bound still reaches theta. Exact too, and it
  reads fewer postings, but it measured slower up to 1M pairs (see the doc).

All round trips run in one REPEATABLE READ transaction (the caller's:
``scoi.selection.preselector.snapshot``): one snapshot of counters, directories, blocks,
forward rows and pairs, whatever ingest commits meanwhile. With a ``span`` or helper
connections (``helpers``), the read-all path cuts the sentence ids into ranges, as many per
connection, each reading that snapshot (exported, and imported by the helpers) and summing
its range on a thread of its own (:func:`scoi.selection.rangeread.read_ranges`); the
ranges' best sentences merge exactly (:func:`scoi.selection.blockscore.merge_heads`). Reading and decoding the lists live in
:mod:`scoi.selection.blockread`, the numpy scoring in :mod:`scoi.selection.blockscore`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg.types.json import Jsonb

from scoi.core.bm25blocks import BLOCK, block_bounds, bound_at_dl, decode_dir
from scoi.db.literals import int_array
from scoi.db.queries import load
from scoi.selection.blockread import Stats, decode_ids, read_list, stream_all
from scoi.selection.blockscore import (QueryToken, accumulate, bm25_idf, nth_pair_score, sum_by_sentence, tf_factors,
                                       top_pairs)
from scoi.selection.listcache import ListCache
from scoi.selection.rangeread import RangeHeads, read_ranges

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
EPS = 1e-7  # relative slack on theta comparisons: bounds and scores are summed in other orders


def preselect_blocks(conn: psycopg.Connection, *, lang: str, tgt: str, tokens: list[str], n: int,
                     corpora: list[int] | None, k1: float = 1.5, b: float = 0.75, read_all: int = 2**62,
                     budget: int = 200_000, probe: int = 0, stats: Stats | None = None,
                     details: dict[int, tuple[Any, ...]] | None = None,
                     where: dict[str, str] | None = None, top_sql: str | None = None,
                     first: int = 0, settle: Callable[[list[tuple[int, float]]], bool] | None = None,
                     helpers: Sequence[psycopg.Connection] = (), span: int = 0, cache: ListCache | None = None,
                     cache_min_df: int = 0) -> list[tuple[int, float]]:
    """Exact BM25 top ``n`` (pair id, score) of the lowercased ``tokens`` over the eligible
    ``lang`` sentences, counting only pairs ``lang``-``tgt`` (of ``corpora``, whose metadata
    holds ``where``: scoi.core.exact.parse_where), best first,
    ties by pair id. ``read_all``: read every posting list, and no bound, when the query's
    tokens have at most this many postings; else ``budget``: postings of the rarest
    tokens read before theta is known;
    ``probe``: sentences scored exactly to find theta (default max(2n, 50));
    ``details``: filled, when every list was read, with pair id -> (source text, target
    text, source tokens, term keys, term multiplicities) of the pairs returned, from the
    same round trip that maps sentences to pairs (pairs missing from it: fetch them);
    ``top_sql``: that round trip's statement in place of ``blocks_top`` (same parameters,
    pair id and score first, the details after: scoi.lookup's lean one);
    ``first``, ``settle``: when every list was read, the top ``first`` pairs are mapped
    first and returned if ``settle`` accepts them (the lists are not read again for n);
    ``helpers``: more connections (autocommit, idle) that read and sum ranges of sentence
    ids in parallel with ``conn``, inside ``conn``'s snapshot (which must be a REPEATABLE
    READ transaction's: :func:`read_ranges`); the same result. ``span``: read lists
    spanning more sentence ids than this one range at a time (:func:`read_ranges`, a
    bounded memory; 0: in one go, or one range per connection); the same result.
    ``cache``: the lists of at least ``cache_min_df`` postings are kept there and summed
    from it while their blocks are unchanged (scoi.selection.listcache); the same result."""
    st = stats if stats is not None else Stats()
    probe = probe or max(2 * n, 50)
    cur = conn.cursor(binary=True)
    filt = pair_filter(lang, tgt, corpora, where)
    lowered = [t.lower() for t in tokens]
    if span or helpers:
        known, read = read_ranges(cur, lang, lowered, read_all, k1, b, st, span or 2**62, 2 * n, cache, cache_min_df,
                                  helpers)
    else:
        known, read = stream_all(cur, lang, lowered, read_all, k1, b, st, cache, cache_min_df)
    if not known:
        return []
    if read is not None:  # every list read: every score is known
        t0 = time.perf_counter()
        if settle is not None and 0 < first < n:
            head, head_scores, rest = read.head(2 * first)
            found = _top_read_all(cur, head, head_scores, rest, first, st, details, filt,
                                  top_sql or SQL["blocks_top"])
            if found is not None and settle(found):
                return found
        head, head_scores, rest = read.head(2 * n)
        t1 = time.perf_counter()
        found = _top_read_all(cur, head, head_scores, rest, n, st, details, filt, top_sql or SQL["blocks_top"])
        st.ms.update(head=1000 * (t1 - t0), top=1000 * (time.perf_counter() - t1))
        if found is not None:
            return found
        if isinstance(read, RangeHeads):  # the best 2n left short (ties, a filter): every score is needed
            st.extra["reread"] = True
            known, read = stream_all(cur, lang, lowered, read_all, k1, b, st, cache, cache_min_df)
        pairs_of: dict[int, list[int]] = {}
        cand, scores = read.all_scores()
        return top_pairs(cand, scores, pairs_of, n, _pair_fetcher(cur, pairs_of, {"ka": read.ka, "kc": read.kc,
                                                                                    **filt}, st))
    rows = cur.execute(SQL["blocks_terms"], {"lang": lang, "tokens": [t.lower() for t in tokens],
                                             "read_all": read_all, "rare": budget}).fetchall()
    st.round_trips += 1
    n_docs, total_len = rows[0][4], rows[0][5]
    ka = k1 * (1 - b)
    kc = k1 * b * max(n_docs, 1) / max(total_len, 1)
    factor = tf_factors(ka, kc)
    terms: list[QueryToken] = []
    for tid, df, cnt, meta, _, _, ids, tfdl in rows:
        directory = decode_dir(meta)
        w = bm25_idf(n_docs, df) * cnt
        tok = QueryToken(tid, w, directory, w * block_bounds(directory, ka, kc))
        st.bytes += len(meta)
        st.blocks_total += len(directory)
        if ids is not None:
            read_list(tok, ids, tfdl, factor, st)
        terms.append(tok)
    st.tokens = len(terms)
    qids = [t.id for t in terms]
    qws = [t.w for t in terms]
    exact: dict[int, float] = {}  # sentence id -> exact score
    pairs: dict[int, list[int]] = {}  # sentence id -> its pairs of the direction (and corpora)

    def score(ids: list[int], pair_ids: list[int]) -> None:
        """Exact scores of ``ids`` and pairs of ``ids`` + ``pair_ids``: one round trip."""
        want = list(dict.fromkeys(ids + pair_ids))
        if not want:
            return
        for sid, s, ps in cur.execute(SQL["blocks_exact"], {
                "ids": int_array(want), "score_ids": int_array(ids), "qids": qids, "ws": qws, "ka": ka, "kc": kc,
                **filt}):
            if s is not None:
                exact[sid] = s
            pairs[sid] = ps or []
        st.round_trips += 1

    everything = all(t.sids is not None for t in terms)
    cand, part, lens = accumulate(terms, lengths=not everything)
    if everything:  # every list read: every score is known
        return top_pairs(cand, np.round(part, 9), pairs, n, lambda ids: score([], ids))

    # 2. theta from the sentences met so far, the most promising first
    if len(cand):
        ub = part + sum((t.w * bound_at_dl(t.dir, cand, lens, ka, kc) for t in terms if t.sids is None),
                        np.zeros(len(cand)))
        best = np.lexsort((cand, -ub))[:probe]
        score(cand[best].tolist(), [])
        st.probed = len(best)
    theta = nth_pair_score(exact, pairs, n)

    # 3. MaxScore: read the essential tokens' lists
    order = sorted(terms, key=lambda t: (t.ub, t.id))
    prefix = np.cumsum([t.ub for t in order])
    slack = EPS * max(1.0, theta)
    essential = [t for t, upto in zip(order, prefix) if upto >= theta - slack]
    todo = [t for t in essential if t.sids is None]
    if todo:
        by_id = {t.id: t for t in todo}
        for tid, ids, tfdl in cur.execute(SQL["blocks_read"], {"ids": list(by_id)}):
            read_list(by_id[tid], ids, tfdl, factor, st)
        st.round_trips += 1

    # 4. bound every sentence met; resolve the unread tokens, heaviest first, by reading
    #    only their blocks that hold a sentence whose bound still reaches theta
    cand, part, lens = accumulate(terms)
    unread = sorted((t for t in terms if t.sids is None), key=lambda t: (-t.ub, t.id))
    alive = part + sum(t.ub for t in unread) >= theta - slack  # the token bounds first: cheap
    cand, part, lens = cand[alive], part[alive], lens[alive]
    at = [t.w * bound_at_dl(t.dir, cand, lens, ka, kc) for t in unread]
    ub = part + sum(at, np.zeros(len(cand)))
    alive = ub >= theta - slack
    cand, part, ub, at = cand[alive], part[alive], ub[alive], [a[alive] for a in at]
    i, group = 0, 1
    while i < len(unread) and len(cand):
        todo = [(k, t) for k, t in enumerate(unread[i:i + group], start=i) if (at[k] > 0).any()]
        i, group = i + group, group * 2
        if not todo:
            continue
        want = {t.id: np.unique(np.searchsorted(t.dir.last, cand[at[k] > 0])) for k, t in todo}
        got = {tid: (ids, tfdl) for tid, ids, tfdl in cur.execute(SQL["blocks_fetch"], {
            "ids": int_array([tid for tid, nos in want.items() for _ in range(len(nos))]),
            "block_nos": int_array(np.concatenate(list(want.values())).tolist()), "block": BLOCK})}
        st.round_trips += 1
        for k, t in todo:
            ids, tfdl = got.get(t.id, (b"", b""))
            sids, packed = decode_ids(t.dir[want[t.id]], ids, tfdl)
            st.postings += len(sids)
            st.blocks += len(want[t.id])
            st.bytes += len(ids) + len(tfdl)
            contrib = t.w * factor[packed]
            pos = np.minimum(np.searchsorted(sids, cand), max(len(sids) - 1, 0))
            exact_t = np.where((len(sids) > 0) & (sids[pos] == cand) if len(sids) else np.zeros(len(cand), bool),
                               contrib[pos] if len(sids) else 0.0, 0.0)
            part = part + exact_t
            ub = ub - at[k] + exact_t
            at[k] = np.zeros(len(cand))
        alive = ub >= theta - slack
        cand, part, ub, at = cand[alive], part[alive], ub[alive], [a[alive] for a in at]
    exact.update(zip(cand.tolist(), np.round(part, 9).tolist()))
    kept = [(sid, v) for sid, v in exact.items() if v >= theta - slack]
    score([], [sid for sid, _ in kept if sid not in pairs])
    return top_pairs(np.array([sid for sid, _ in kept], dtype=np.int64), np.array([v for _, v in kept]), pairs, n,
                      lambda ids: score([], ids))


def preselect_many(conn: psycopg.Connection, *, lang: str, tgt: str, token_lists: list[list[str]], n: int,
                   corpora: list[int] | None, k1: float = 1.5, b: float = 0.75, read_all: int = 2**62,
                   budget: int = 200_000, probe: int = 0,
                   where: dict[str, str] | None = None) -> list[list[tuple[int, float]]]:
    """:func:`preselect_blocks` of many queries at once, same results: the union of their
    tokens' lists is read in one round trip (each list once, however many queries share
    it; when they have at most ``read_all`` postings in all) and every query scored from
    it; the pairs of all queries' best sentences in one more. Queries whose lists do not
    fit go through :func:`preselect_blocks` one by one. Call inside one snapshot."""
    lowered = [[t.lower() for t in toks] for toks in token_lists]
    union = sorted({t for toks in lowered for t in toks})
    out: list[list[tuple[int, float]] | None] = [None if toks else [] for toks in lowered]
    cur = conn.cursor(binary=True)
    rows = cur.execute(SQL["blocks_terms"], {"lang": lang, "tokens": union, "read_all": read_all,
                                             "rare": 0}).fetchall() if union else []
    if rows and all(r[6] is not None for r in rows):
        n_docs, total_len = rows[0][4], rows[0][5]
        ka = k1 * (1 - b)
        kc = k1 * b * max(n_docs, 1) / max(total_len, 1)
        factor = tf_factors(ka, kc)
        ids_of = {tok: tid for tok, tid in cur.execute(SQL["vocab_ids_of"], {"lang": lang, "tokens": union})}
        decoded: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
        for tid, df, _, meta, _, _, ids, tfdl in rows:
            sids, packed = decode_ids(decode_dir(meta), ids, tfdl)
            idf = bm25_idf(n_docs, df)
            decoded[tid] = (idf, sids, factor[packed])
        pairs: dict[int, list[int]] = {}
        fetch = _pair_fetcher(cur, pairs, {"ka": ka, "kc": kc, **pair_filter(lang, tgt, corpora, where)})

        scored: list[tuple[int, np.ndarray, np.ndarray]] = []
        heads: set[int] = set()
        for i, toks in enumerate(lowered):
            if not toks:
                continue
            counts: dict[int, int] = {}
            for t in toks:
                if t in ids_of and ids_of[t] in decoded:
                    counts[ids_of[t]] = counts.get(ids_of[t], 0) + 1
            if not counts:
                out[i] = []
                continue
            sids = np.concatenate([decoded[t][1] for t in counts])
            contrib = np.concatenate([decoded[t][0] * c * decoded[t][2] for t, c in counts.items()])
            cand, score = sum_by_sentence(sids, contrib)
            score = np.round(score, 9)
            scored.append((i, cand, score))
            k = min(len(cand), 2 * n)
            heads.update(cand[np.argpartition(-score, k - 1)[:k]].tolist() if k else [])
        if heads:
            fetch(sorted(heads))
        for i, cand, score in scored:
            out[i] = top_pairs(cand, score, pairs, n, fetch)
    for i, toks in enumerate(lowered):
        if out[i] is None:
            out[i] = preselect_blocks(conn, lang=lang, tgt=tgt, tokens=toks, n=n, corpora=corpora, k1=k1, b=b,
                                      read_all=read_all, budget=budget, probe=probe, where=where)
    return out  # type: ignore[return-value]


def _top_read_all(cur: psycopg.Cursor, head: np.ndarray, scores: np.ndarray, rest: float | None, n: int,
                  st: Stats, details: dict[int, tuple[Any, ...]] | None,
                  where: dict[str, Any], top_sql: str) -> list[tuple[int, float]] | None:
    """The top ``n`` pairs in one round trip from the best sentences ``head`` (exact
    ``scores``; ``rest``: a bound on every other sentence's, None if none): ``blocks_top``
    maps them to pairs, keeps the best n and (``details``) returns their texts and terms.
    None when that cannot be the answer (fewer than n pairs, or the n-th scores no more
    than the best sentence left out: a tie)."""
    if not len(head):
        return []
    got = cur.execute(top_sql, {**where, "ids": int_array(head.tolist()), "scores": scores.tolist(),
                                "n": n, "details": details is not None}).fetchall()
    st.round_trips += 1
    if rest is not None and (len(got) < n or got[-1][1] <= rest):
        return None
    if details is not None:
        details.update((r[0], tuple(r[2:])) for r in got)
    return [(r[0], r[1]) for r in got]


def pair_filter(lang: str, tgt: str, corpora: list[int] | None, where: dict[str, str] | None) -> dict[str, Any]:
    """The parameters that restrict a statement to pairs of the direction, of ``corpora``
    (ids; None: all) and whose metadata contains ``where`` (None: any): ``meta @>`` the
    filter as JSONB, a parameter like every other value."""
    return {"lang": lang, "tgt": tgt, "corpora": corpora, "meta": Jsonb(where) if where else None}


def _pair_fetcher(cur: psycopg.Cursor, into: dict[int, list[int]], params: dict[str, Any],
                  st: Stats | None = None) -> Callable[[list[int]], None]:
    """A function that stores in ``into`` the pair ids (of the direction and corpora in
    ``params``) of the sentences it is given: one ``blocks_exact`` round trip, no scoring."""
    def fetch(ids: list[int]) -> None:
        for sid, _, ps in cur.execute(SQL["blocks_exact"], {
                "ids": int_array(ids), "score_ids": "{}", "qids": "{}", "ws": "{}", **params}):
            into[sid] = ps or []
        if st is not None:
            st.round_trips += 1
    return fetch


__all__ = ["pair_filter", "preselect_blocks", "preselect_many", "Stats"]
