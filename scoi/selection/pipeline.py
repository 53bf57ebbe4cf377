"""One selection's path, from a sentence to its SelectionResult: the pool read in a helper
thread while this thread parses, the embedding methods' inputs, the ``--min-match`` cut,
the method's step, ``--fill random``, the shortfall notice and the timings. It takes the
selector's parts explicitly (:class:`Parts`), so it holds no state of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import psycopg

from scoi.core import methods
from scoi.db.reads import ReadStatus
from scoi.selection.fill import keep_matching, random_fill, run_method
from scoi.selection.models import Models
from scoi.selection.options import Options
from scoi.selection.preselector import BlockPreselector
from scoi.selection.query import Analysis, QueryAnalysis
from scoi.selection.scheme import no_trees
from scoi.selection.types import PoolResult, SelectionError, SelectionResult


class Helper:
    """One thread, started on first use, that waits on the pool's SQL while the caller
    parses: the server's work and the parse overlap instead of adding up."""

    def __init__(self) -> None:
        self._thread: futures.ThreadPoolExecutor | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> futures.Future[Any]:
        """Run ``fn(*args)`` on the helper thread."""
        if self._thread is None:
            self._thread = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="scoi-preselect")
        return self._thread.submit(fn, *args)

    def close(self) -> None:
        """Stop the thread (after its work), if it was started."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None


@dataclass(frozen=True)
class Parts:
    """What a selection uses of its selector, as they are at the call (``filtered`` swaps
    the engine)."""

    src: str
    tgt: str
    options: Options
    query: QueryAnalysis
    engine: BlockPreselector
    models: Models
    helper: Helper


def select_one(parts: Parts, conn: psycopg.Connection, read: ReadStatus | None, text: str, k: int, method: str,
               analysis: Analysis | None, min_match: float | None) -> SelectionResult:
    """Pick ``k`` examples for ``text`` reading through ``conn`` (``read``: its ReadStatus,
    or None for the primary); ``analysis``: from the selector's ``warm``."""
    query, engine, options = parts.query, parts.engine, parts.options
    if query.changed(conn):
        analysis = None  # parsed before `scoi reanalyze` switched parser: parse it again
    analysis = query.usable(analysis)
    entry = methods.method(method)
    if not query.scheme.has_trees and entry.trees:
        raise SelectionError(no_trees(conn, parts.src, method))
    t0 = time.perf_counter()
    tokens = query.analyzer.tokenize(text) if analysis is None else analysis[0]
    pool_future = (None if not entry.bm25_pool or not tokens
                   else parts.helper.submit(timed_pool, engine, conn, tokens, options.pool, read))
    try:
        # The fuzzy methods need no tree: the query's embedding instead (overlapping the pool too).
        terms = analysis[1] if analysis is not None else {} if entry.embeddings else query.analyzer.terms(text)
        query_vec = parts.models.embeddings.embed(conn, text) if entry.embeddings else None
        t1 = time.perf_counter()
        pool, pool_ms = pool_future.result() if pool_future is not None else (PoolResult([], None, read), 0.0)
    finally:
        if pool_future is not None:
            futures.wait([pool_future])  # the connection is free again before anything else uses it
    rows, embeddings = pool.rows, None
    if query_vec is not None:
        ts = time.perf_counter()
        rows, embeddings = parts.models.embeddings.inputs(conn, engine, query_vec, rows if entry.bm25_pool else None, k)
        pool_ms = round(pool_ms + _ms(time.perf_counter() - ts), 3)
    offered, embeddings = keep_matching(tokens, rows, embeddings, min_match)
    t2 = time.perf_counter()
    selected = run_method(query, options, method, k, text, tokens, terms, offered, embeddings,
                          parts.models.ctq_ranker() if entry.learned else None)
    t3 = time.perf_counter()
    if options.fill == "random" and entry.examples and len(selected) < k:
        selected += random_fill(conn, engine, k - len(selected), selected, tokens, options.seed, min_match)
    notice = None
    if min_match is not None and entry.examples and len(selected) < k:
        notice = (f"{len(offered)} of {len(rows)} candidates reach {min_match:g}% match: "
                  f"{len(selected)} example{'s' * (len(selected) != 1)} instead of {k}")
    embedder, model = parts.models.embedder_name(method), parts.models.model_signature(method)
    return SelectionResult(
        query=text, src_lang=parts.src, tgt_lang=parts.tgt, method=method, k=k,
        params=options.params(method, k, min_match, embedder, model),
        signature=options.signature(parts.src, parts.tgt, method, k, min_match, embedder, query.scheme, model),
        query_tokens=tokens, query_terms=terms, candidates=offered, selected=selected,
        # analyze: Moses + spaCy on this thread; pool: the SQL round trips (overlapping
        # the parse); wait: what the pool added after the parse; select: pool +
        # coverage (the work besides analysis); total: wall time.
        timings_ms={"analyze": _ms(t1 - t0), "pool": pool_ms, "wait": _ms(t2 - t1),
                    "coverage": _ms(t3 - t2), "select": round(pool_ms + _ms(t3 - t2), 3),
                    "total": _ms(time.perf_counter() - t0)},
        certified=pool.certified if pool_future is not None else None, read=read, min_match=min_match,
        notice=notice)


def timed_pool(engine: BlockPreselector, conn: psycopg.Connection, tokens: list[str], size: int,
               read: ReadStatus | None) -> tuple[PoolResult, float]:
    """The pool of ``size`` sources for ``tokens`` and the milliseconds its reads took."""
    t0 = time.perf_counter()
    pool = engine.pool(conn, tokens, size, read)
    return pool, _ms(time.perf_counter() - t0)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


__all__ = ["Helper", "Parts", "select_one", "timed_pool"]
