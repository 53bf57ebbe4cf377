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
forward rows and pairs, whatever ingest commits meanwhile. With helper connections (``helpers``), the read-all
path cuts the sentence ids into ranges, one per connection, each reading that snapshot
(exported, and imported by the helpers) and summing its range on a thread of its own
(:func:`read_parts`); the ranges' best sentences merge exactly (:func:`merge_heads`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from scoi.core.bm25blocks import BLOCK, DIR, GROUP, Directory, block_bounds, bound_at_dl, decode_dir
from scoi.db.literals import int_array
from scoi.db.queries import load

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
EPS = 1e-7  # relative slack on theta comparisons: bounds and scores are summed in other orders


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


class _Token:
    __slots__ = ("id", "w", "dir", "bounds", "ub", "sids", "contrib", "dl")

    def __init__(self, tid: int, w: float, directory: Directory, bounds: np.ndarray) -> None:
        self.id, self.w, self.dir, self.bounds = tid, w, directory, bounds
        self.ub = float(bounds.max()) if len(bounds) else 0.0
        self.sids: np.ndarray | None = None
        self.contrib: np.ndarray | None = None
        self.dl: np.ndarray | None = None


def preselect_blocks(conn: psycopg.Connection, *, lang: str, tgt: str, tokens: list[str], n: int,
                     corpora: list[int] | None, k1: float = 1.5, b: float = 0.75, read_all: int = 2**62,
                     budget: int = 200_000, probe: int = 0, stats: Stats | None = None,
                     details: dict[int, tuple[Any, ...]] | None = None,
                     where: dict[str, str] | None = None, top_sql: str | None = None,
                     first: int = 0, settle: Callable[[list[tuple[int, float]]], bool] | None = None,
                     helpers: Sequence[psycopg.Connection] = ()) -> list[tuple[int, float]]:
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
    ``helpers``: more connections (autocommit, idle) that each read and sum one range of
    sentence ids in parallel with ``conn``, inside ``conn``'s snapshot (which must be a
    REPEATABLE READ transaction's: :func:`read_parts`); the same result."""
    st = stats if stats is not None else Stats()
    probe = probe or max(2 * n, 50)
    cur = conn.cursor(binary=True)
    filt = pair_filter(lang, tgt, corpora, where)
    lowered = [t.lower() for t in tokens]
    if helpers:
        known, read = read_parts(cur, helpers, lang, lowered, read_all, k1, b, st)
    else:
        known, read = _stream_all(cur, lang, lowered, read_all, k1, b, st)
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
        pairs_of: dict[int, list[int]] = {}
        cand, scores = read.all_scores()
        return _top_pairs(cand, scores, pairs_of, n, _pair_fetcher(cur, pairs_of, {"ka": read.ka, "kc": read.kc,
                                                                                    **filt}, st))
    rows = cur.execute(SQL["blocks_terms"], {"lang": lang, "tokens": [t.lower() for t in tokens],
                                             "read_all": read_all, "rare": budget}).fetchall()
    st.round_trips += 1
    n_docs, total_len = rows[0][4], rows[0][5]
    ka = k1 * (1 - b)
    kc = k1 * b * max(n_docs, 1) / max(total_len, 1)
    factor = _factors(ka, kc)
    terms: list[_Token] = []
    for tid, df, cnt, meta, _, _, ids, tfdl in rows:
        directory = decode_dir(meta)
        w = _idf(n_docs, df) * cnt
        tok = _Token(tid, w, directory, w * block_bounds(directory, ka, kc))
        st.bytes += len(meta)
        st.blocks_total += len(directory)
        if ids is not None:
            _read(tok, ids, tfdl, factor, st)
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
    cand, part, lens = _accumulate(terms, lengths=not everything)
    if everything:  # every list read: every score is known
        return _top_pairs(cand, np.round(part, 9), pairs, n, lambda ids: score([], ids))

    # 2. theta from the sentences met so far, the most promising first
    if len(cand):
        ub = part + sum((t.w * bound_at_dl(t.dir, cand, lens, ka, kc) for t in terms if t.sids is None),
                        np.zeros(len(cand)))
        best = np.lexsort((cand, -ub))[:probe]
        score(cand[best].tolist(), [])
        st.probed = len(best)
    theta = _nth_pair_score(exact, pairs, n)

    # 3. MaxScore: read the essential tokens' lists
    order = sorted(terms, key=lambda t: (t.ub, t.id))
    prefix = np.cumsum([t.ub for t in order])
    slack = EPS * max(1.0, theta)
    essential = [t for t, upto in zip(order, prefix) if upto >= theta - slack]
    todo = [t for t in essential if t.sids is None]
    if todo:
        by_id = {t.id: t for t in todo}
        for tid, ids, tfdl in cur.execute(SQL["blocks_read"], {"ids": list(by_id)}):
            _read(by_id[tid], ids, tfdl, factor, st)
        st.round_trips += 1

    # 4. bound every sentence met; resolve the unread tokens, heaviest first, by reading
    #    only their blocks that hold a sentence whose bound still reaches theta
    cand, part, lens = _accumulate(terms)
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
    return _top_pairs(np.array([sid for sid, _ in kept], dtype=np.int64), np.array([v for _, v in kept]), pairs, n,
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
        factor = _factors(ka, kc)
        ids_of = {tok: tid for tok, tid in cur.execute(SQL["vocab_ids_of"], {"lang": lang, "tokens": union})}
        decoded: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
        for tid, df, _, meta, _, _, ids, tfdl in rows:
            sids, packed = decode_ids(decode_dir(meta), ids, tfdl)
            idf = _idf(n_docs, df)
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
            cand, score = _sums(sids, contrib)
            score = np.round(score, 9)
            scored.append((i, cand, score))
            k = min(len(cand), 2 * n)
            heads.update(cand[np.argpartition(-score, k - 1)[:k]].tolist() if k else [])
        if heads:
            fetch(sorted(heads))
        for i, cand, score in scored:
            out[i] = _top_pairs(cand, score, pairs, n, fetch)
    for i, toks in enumerate(lowered):
        if out[i] is None:
            out[i] = preselect_blocks(conn, lang=lang, tgt=tgt, tokens=toks, n=n, corpora=corpora, k1=k1, b=b,
                                      read_all=read_all, budget=budget, probe=probe, where=where)
    return out  # type: ignore[return-value]


CHUNK = 256  # blocks per streamed row (a multiple of GROUP: a grouped row is never split)
SLACK = 2e-9  # scores are rounded to 9 decimals: raw sums this close to the k-th may round to a tie


class _AllLists:
    """Every posting list of a query, summed by sentence as :func:`_stream_all` receives
    them (each token's contribution added in (df, id) order, whatever order rows arrive
    in: the same floats every time). Dense over the lists' id range when the postings
    fill it well enough (``sums``, index = id - ``lo``), else kept per chunk and summed
    at the end (a sort)."""

    def __init__(self, row: tuple[Any, ...], k1: float, b: float) -> None:
        _, _, _, _, _, _, _, n_docs, total_len, lo, hi, total, _, _ = row
        self.n_docs, self.lo, self.hi = n_docs, lo, hi
        self.ka = k1 * (1 - b)
        self.kc = k1 * b * max(n_docs, 1) / max(total_len, 1)
        self.factor = _factors(self.ka, self.kc)
        self.dense = 0 <= hi - lo < 8 * total  # (a range holding no posting: total 0)
        self.sums: np.ndarray | None = np.zeros(hi - lo + 1) if self.dense else None
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.terms: list[tuple[float, int]] = []  # (idf, count in the query) of each token read

    def add(self, df: int, cnt: int, meta: bytes, ids: bytes, tfdl: bytes, st: Stats) -> None:
        """One chunk of a token's list (its blocks' records ``meta`` and postings)."""
        t0 = time.perf_counter()
        rec = np.frombuffer(meta, dtype=DIR)
        first = rec["first"].astype(np.int64) - self.lo
        sids = np.repeat(first, rec["n"].astype(np.int64))
        sids += np.frombuffer(ids, dtype=">u4")
        # the weighted factors of the tf the chunk can hold (tf <= its blocks' max_tf): a
        # table of ~1-2k entries, one gather per posting and no product (the same floats)
        top = (int(rec["max_tf"].max()) + 1) << 8 if len(rec) else 0
        table = self.factor[:top] * (_idf(self.n_docs, df) * cnt)
        contrib = table[np.frombuffer(tfdl, dtype=">u2").astype(np.intp)]
        if len(rec) and (rec["first"][0] < self.lo or rec["last"][-1] > self.hi):  # a range's edge row
            keep = (sids >= 0) & (sids <= self.hi - self.lo)
            sids, contrib = sids[keep], contrib[keep]
        t1 = time.perf_counter()
        if self.dense:
            self.sums[sids] += contrib  # a token's ids are distinct: no two writes to one cell
        else:
            self.parts.append((sids, contrib))
        t2 = time.perf_counter()
        st.ms["decode"] = st.ms.get("decode", 0.0) + 1000 * (t1 - t0)
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (t2 - t1)
        st.postings += len(sids)
        st.blocks += len(rec)
        st.bytes += len(meta) + len(ids) + len(tfdl)

    def finish(self) -> None:
        if not self.dense:
            sids = np.concatenate([p[0] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
            contrib = np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0)
            cand, self.sums = _sums(sids, contrib)
            self.cand, self.parts = cand + self.lo, []

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """Sentence ids of the ``k`` best sums and of every sum within rounding of the k-th
        (scores rounded to 9 decimals: the exact scores), and a rounded bound no lower than
        any other sentence's score (None: there is no other). A partition of a million sums
        takes ~10 ms; so first a floor from the maxima of >= k chunks (the k-th largest of
        them: at least k sums reach it), then a partition of the few sums that reach it."""
        raw = self.sums
        ids = (lambda idx: idx + self.lo) if self.dense else (lambda idx: self.cand[idx])
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
        if self.dense:
            met = np.flatnonzero(self.sums)
            return met + self.lo, np.round(self.sums[met], 9)
        return self.cand, np.round(self.sums, 9)


def _stream_all(cur: psycopg.Cursor, lang: str, tokens: list[str], read_all: int, k1: float, b: float,
                st: Stats) -> tuple[bool, _AllLists | None]:
    """Stream every posting list of ``tokens`` (``blocks_stream``, one row per chunk of
    blocks) and sum them as they come (:func:`sum_chunks`). Returns whether any token is
    in the index, and the sums (None if the lists hold more than ``read_all`` postings:
    nothing was read)."""
    rows = cur.stream(SQL["blocks_stream"], {"lang": lang, "tokens": tokens, "read_all": read_all, "chunk": CHUNK,
                                             "rec": DIR.itemsize})
    st.round_trips += 1
    with closing(rows):  # an error while summing must not leave the stream holding the connection
        known, out = sum_chunks(rows, k1, b, st)
    if out is not None:  # what a bound on unseen sentences' scores needs (scoi.lookup)
        st.extra.update(terms=out.terms, ka=out.ka, kc=out.kc)
    return known, out


def read_parts(cur: psycopg.Cursor, helpers: Sequence[psycopg.Connection], lang: str, tokens: list[str],
               read_all: int, k1: float, b: float, st: Stats) -> tuple[bool, _Parts | None]:
    """:func:`_stream_all` split by sentence id over ``cur``'s connection and ``helpers``:
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
    read = _Parts([own, *(p for p, _ in parts)])
    st.extra.update(terms=read.terms, ka=read.ka, kc=read.kc)
    return True, read


def _read_part_on(helper: psycopg.Connection, snapshot: str, lang: str, tokens: list[str], lo: int, hi: int,
                  k1: float, b: float) -> tuple[_AllLists, Stats]:
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
                  st: Stats) -> _AllLists:
    """The sums of the sentences with ids in [``lo``, ``hi``) (``blocks_stream_range``)."""
    rows = cur.stream(SQL["blocks_stream_range"], {"lang": lang, "tokens": tokens, "from": lo, "to": hi,
                                                   "chunk": CHUNK, "rec": DIR.itemsize, "grp": GROUP, "block": BLOCK})
    st.round_trips += 1
    with closing(rows):
        _, out = sum_chunks(rows, k1, b, st)
    assert out is not None  # every known token gives a row in every range
    return out


class _Parts:
    """The sums of several sentence-id ranges read as one (:func:`read_parts`)."""

    def __init__(self, parts: list[_AllLists]) -> None:
        self.parts = parts
        self.ka, self.kc, self.terms = parts[0].ka, parts[0].kc, parts[0].terms

    def head(self, k: int) -> tuple[np.ndarray, np.ndarray, float | None]:
        """As :meth:`_AllLists.head`, over every range."""
        return merge_heads([p.head(k) for p in self.parts], k)

    def all_scores(self) -> tuple[np.ndarray, np.ndarray]:
        got = [p.all_scores() for p in self.parts]
        return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])


def merge_heads(heads: list[tuple[np.ndarray, np.ndarray, float | None]], k: int
                ) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The best ``k`` sentences of several disjoint ranges (ids, rounded scores, and a bound
    on every sentence left out: None if none is) from each range's own best ``k`` (the same
    triple; ties with a range's k-th included): the k best of the union, every one tied
    with the k-th, and as the bound the largest of the ranges' bounds and of the scores
    dropped. Exact: a sentence missing from its range's head scores at most that range's
    bound. What ranges on other connections or servers send back (docs/replicas.md)."""
    ids = np.concatenate([h[0] for h in heads]) if heads else np.zeros(0, np.int64)
    scores = np.concatenate([h[1] for h in heads]) if heads else np.zeros(0)
    bounds = [h[2] for h in heads if h[2] is not None]
    rest = max(bounds) if bounds else None
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        top = scores >= kth - SLACK
        if not top.all():
            dropped = float(scores[~top].max())
            rest = dropped if rest is None else max(rest, dropped)
        ids, scores = ids[top], scores[top]
    return ids, scores, rest


def sum_chunks(rows: Iterable[tuple[Any, ...]], k1: float, b: float, st: Stats) -> tuple[bool, _AllLists | None]:
    """Sum ``blocks_stream`` rows in (token rank, chunk) order, whatever order they come
    in: early rows wait in a buffer (the server sends them in that order; nothing depends
    on it). See :func:`_stream_all` for what it returns."""
    known, out = False, None
    waiting: dict[tuple[int, int], tuple[Any, ...]] = {}
    at = (1, 0)
    start = time.perf_counter()
    for row in rows:
        known = True
        rank, n_tokens, chunk = row[0], row[1], row[2]
        if chunk is None:  # more than read_all postings
            continue
        if out is None:
            out = _AllLists(row, k1, b)
        st.tokens = n_tokens
        waiting[(rank, chunk)] = row
        while at in waiting:
            r = waiting.pop(at)
            out.add(r[4], r[5], r[6], r[12], r[13], st)
            if at[1] == 0:
                out.terms.append((_idf(out.n_docs, r[4]), r[5]))
            at = (at[0], at[1] + 1) if at[1] + 1 < r[3] else (at[0] + 1, 0)
    if out is not None:
        st.blocks_total = st.blocks
        t0 = time.perf_counter()
        st.ms["wait"] = 1000 * (t0 - start) - st.ms.get("decode", 0.0) - st.ms.get("sum", 0.0)
        out.finish()
        st.ms["sum"] = st.ms.get("sum", 0.0) + 1000 * (time.perf_counter() - t0)
    return known, out


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


def _idf(n_docs: int, df: int) -> float:
    """BM25's (Lucene's) idf: ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return float(np.log(1 + (n_docs - df + 0.5) / (df + 0.5)))


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


@lru_cache(maxsize=8)
def _factors(ka: float, kc: float) -> np.ndarray:
    """tf / (tf + ka + kc dl) for every packed ``tf << 8 | dl`` (a table: one gather per
    posting). Kept for the next queries (0.4 ms to build; kc changes only with the corpus);
    read-only, as it is shared."""
    packed = np.arange(1 << 16)
    tf, dl = (packed >> 8).astype(np.float64), (packed & 255).astype(np.float64)
    table = tf / (tf + ka + kc * dl)
    table.flags.writeable = False
    return table


def decode_ids(directory: Directory, ids: bytes, tfdl: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(sentence ids, packed tf << 8 | dl) of concatenated blocks."""
    offsets = np.frombuffer(ids, dtype=">u4").astype(np.int64)
    return offsets + np.repeat(directory.first, directory.n), np.frombuffer(tfdl, dtype=">u2").astype(np.intp)


def _read(tok: _Token, ids: bytes, tfdl: bytes, factor: np.ndarray, st: Stats) -> None:
    sids, packed = decode_ids(tok.dir, ids, tfdl)
    tok.sids, tok.contrib, tok.dl = sids, (tok.w * factor)[packed], packed & 255
    st.postings += len(sids)
    st.blocks += len(tok.dir)
    st.bytes += len(ids) + len(tfdl)


def _accumulate(terms: list[_Token], lengths: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sentence ids met in the lists read (ascending), the sum of their contributions
    there (:func:`_sums`) and (``lengths``) their lengths."""
    read = [t for t in terms if t.sids is not None]
    if not read:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64)
    sids = np.concatenate([t.sids for t in read]) if len(read) > 1 else read[0].sids
    contrib = np.concatenate([t.contrib for t in read]) if len(read) > 1 else read[0].contrib
    cand, sums = _sums(sids, contrib)
    if not lengths:
        return cand, sums, None
    length = np.zeros(len(cand), dtype=np.int64)
    length[np.searchsorted(cand, sids)] = np.concatenate([t.dl for t in read])
    return cand, sums, length


def _sums(sids: np.ndarray, contrib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sentence ids met (ascending) and the sum of their contributions: the one rule by
    which the lists read are added up (the MaxScore path, and the read-all path's sparse
    case): a bincount over the id range when it is dense enough, else a sort. Every
    contribution is > 0, so a sentence is met iff its sum is."""
    if not len(sids):
        return sids.astype(np.int64), contrib
    lo, hi = int(sids.min()), int(sids.max())
    if hi - lo < 8 * len(sids):
        sums = np.bincount(sids - lo, weights=contrib, minlength=hi - lo + 1)
        met = np.flatnonzero(sums)
        return met + lo, sums[met]
    cand, inv = np.unique(sids, return_inverse=True)
    return cand, np.bincount(inv, weights=contrib, minlength=len(cand))


def _nth_pair_score(exact: dict[int, float], pairs: dict[int, list[int]], n: int) -> float:
    """The n-th best pair's score among the sentences scored (0 with fewer than n pairs)."""
    counted = 0
    for sid, s in sorted(exact.items(), key=lambda x: -x[1]):
        counted += len(pairs.get(sid, ()))
        if counted >= n:
            return s
    return 0.0


def _top_pairs(sids: np.ndarray, scores: np.ndarray, pairs: dict[int, list[int]], n: int,
               fetch: Callable[[list[int]], None]) -> list[tuple[int, float]]:
    """Top n (pair id, score) of the sentences ``sids`` with exact ``scores``: sentences
    in score order, their pairs fetched (``fetch``) a growing chunk at a time until n pairs
    are in and the next sentence scores below the n-th (ties are all taken). Only the best
    8n sentences are sorted first; the rest only if they hold fewer than n pairs."""
    k = 8 * n
    if len(sids) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        head = scores >= cut
        out = _walk(sids[head], scores[head], pairs, n, fetch)
        if len(out) >= n and out[n - 1][1] >= cut:  # every sentence scoring >= the n-th is in head
            return out[:n]
    return _walk(sids, scores, pairs, n, fetch)[:n]


def _walk(sids: np.ndarray, scores: np.ndarray, pairs: dict[int, list[int]], n: int,
          fetch: Callable[[list[int]], None]) -> list[tuple[int, float]]:
    order = np.lexsort((sids, -scores))
    sids, scores = sids[order], scores[order]
    out: list[tuple[int, float]] = []
    i, step = 0, max(2 * n, 64)
    while i < len(sids):
        chunk = list(zip(sids[i:i + step].tolist(), scores[i:i + step].tolist()))
        missing = [sid for sid, _ in chunk if sid not in pairs]
        if missing:
            fetch(missing)
        for sid, v in chunk:
            out.extend((p, v) for p in pairs.get(sid, ()))
        i, step = i + step, step * 4
        if len(out) >= n:
            out.sort(key=lambda x: (-x[1], x[0]))
            if i >= len(sids) or scores[i] < out[n - 1][1]:
                break
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


__all__ = ["merge_heads", "pair_filter", "preselect_blocks", "preselect_many", "read_parts", "Stats"]
