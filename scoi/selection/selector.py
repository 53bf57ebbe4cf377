"""Select in-context examples for a sentence: the orchestrator of the selection package.

    from scoi.selection.selector import Selector
    with Selector("fr", "en") as sel:
        result = sel.select("Un homme joue de la guitare.", k=4)
        for pick in result.selected:
            print(pick.criterion, pick.src, "=>", pick.tgt)

Reads go to ``reads.choose()`` (a streaming replica when one is set and fresh enough,
scoi.db.reads), chosen once per selection and passed down; writes (recording) go to
``primary``, always. The pieces: options and signature (options), the stored scheme and
query analysis (scheme, query), preselection (preselector), embeddings (embedding),
match %, the method's step (its registry entry, scoi.core.methods) and random fill (fill).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import psycopg

from scoi.config import read_max_lag_from_env
from scoi.core import defaults, methods
from scoi.core.greedy import check_args
from scoi.ctq import CtqError, CtqRanker, find_model
from scoi.db.engine import ensure_migrated, resolve_database, resolve_read_url
from scoi.db.reads import ReadRoute, ReadStatus
from scoi.selection.embedding import Embeddings
from scoi.selection.fill import keep_matching, random_fill, run_method
from scoi.selection.options import Options, check_direction, checked_min_match, checked_where
from scoi.selection.preselector import BlockPreselector, Bm25Params, corpus_ids, fetch
from scoi.selection.query import Analysis, QueryAnalysis, one_blas_thread
from scoi.selection.recording import record_selection
from scoi.selection.scheme import direction_exists, no_trees
from scoi.selection.types import BLANK_QUERY, Candidate, PoolResult, SelectionError, SelectionResult

BATCH = 64  # select_many: sentences parsed (nlp.pipe) and preselected together


class Selector:
    """Picks examples for sentences in one direction; keeps its connections and a parser.

    ``url``: the database (default: the configured one). ``read_url``: a streaming replica
    of it that selection reads from, recording still writing to ``url`` (default, when
    ``url`` is not given: ``SCOI_READ_DATABASE_URL``); ``read_max_lag``: seconds it may be
    behind (default ``SCOI_READ_MAX_LAG``). The other arguments: :class:`Options`.
    """

    def __init__(self, src: str, tgt: str, *, url: str | None = None, read_url: str | None = None,
                 read_max_lag: float | None = None, corpora: list[str] | None = None,
                 k: int = defaults.K, method: str = defaults.METHOD, pool: int = defaults.POOL,
                 similarity: str = defaults.SIMILARITY, word_overlap: str = defaults.WORD_OVERLAP,
                 fill: str = defaults.FILL, seed: int = defaults.SEED, bm25: Bm25Params | None = None,
                 parser: str | None = None, rbm25_variant: str = defaults.RBM25_VARIANT,
                 embedder: str | None = None, ef_search: int = defaults.EF_SEARCH,
                 where: dict[str, str] | None = None, min_match: float | None = None,
                 ctq_model: str | None = None) -> None:
        self.options = Options(k=k, method=method, pool=pool, similarity=similarity, word_overlap=word_overlap,
                               fill=fill, seed=seed, rbm25_variant=rbm25_variant, ef_search=ef_search,
                               min_match=min_match, corpora=corpora, where=where, bm25=bm25 or Bm25Params()).check()
        self.src, self.tgt = check_direction(src, tgt)
        if url is None:
            url = resolve_database().url
            ensure_migrated(url)  # one query when at head (no SQLAlchemy/Alembic import)
            read_url = read_url or resolve_read_url()
        self.reads = ReadRoute(url, read_url, max_lag=read_max_lag_from_env() if read_max_lag is None else read_max_lag)
        self.primary: psycopg.Connection = self.reads.primary  # recording writes here, never to a replica
        conn, _ = self.reads.choose()
        if not direction_exists(conn, self.src, self.tgt):
            raise SelectionError(f"no corpus holds {self.src}-{self.tgt} pairs; load one first: "
                                 f"scoi ingest FILE --src {self.src} --tgt {self.tgt}")
        self.engine = BlockPreselector(self.src, self.tgt, corpus_ids(conn, corpora), self.options.where,
                                       self.options.bm25)
        # Terms are comparable only within one analysis scheme: queries are parsed with the
        # stored sentences' (checked here, before anything is parsed).
        self.query = QueryAnalysis(conn, self.src, parser, method)
        self.embeddings = Embeddings(embedder, ef_search)
        if methods.method(method).embeddings:
            self.embeddings.row(conn)  # fail now, not at the first sentence, when nothing is embedded
        self.ctq_model, self._ctq = ctq_model, None  # --method ctq: the model's name (None: newest), its ranker
        if methods.method(method).learned:
            self.ctq_ranker()  # fail now when no model is fitted for the direction
        self._thread: futures.ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ what callers read
    @property
    def reader(self) -> psycopg.Connection:
        """The connection a selection made now would read from (scoi.db.reads)."""
        return self.reads.choose()[0]

    @property
    def analyzer(self) -> Any:
        """The query analyser (scoi.analysis.Analyzer): the stored sentences' pipeline."""
        return self.query.analyzer

    def fetch(self, scored: list[tuple[int, float]]) -> list[Candidate]:
        """Texts, tokens and terms of scored pairs, in their order (scoi.selection.preselector.fetch)."""
        return fetch(self.reader, self.src, self.tgt, scored)

    def preselect(self, tokens: list[str], n: int | None = None, **blocks: Any) -> list[tuple[int, float]]:
        """(pair id, score) of exact BM25's top ``n`` (default ``pool``) pairs, best first,
        before the pool keeps one pair per source; ``blocks``: BlockPreselector.top's options."""
        return self.engine.top(self.reader, tokens, n or self.options.pool, **blocks)

    def pool_of(self, tokens: list[str], size: int | None = None) -> PoolResult:
        """The pool of ``size`` (default ``pool``) distinct source sentences, where it read."""
        conn, read = self.reads.choose()
        return self.engine.pool(conn, tokens, size or self.options.pool, read)

    def signature(self, method: str, k: int, min_match: float | None = None) -> str:
        """Every setting that changes a selection's result (scoi.core.signature)."""
        return self.options.signature(self.src, self.tgt, method, k, min_match, self._embedder_name(method),
                                      self.query.scheme, self._model_signature(method))

    def _embedder_name(self, method: str) -> str | None:
        return self.embeddings.row(self.primary).name if methods.method(method).embeddings else None

    def ctq_ranker(self) -> CtqRanker:
        """--method ctq: the CTQ Scorer ranker (scoi.ctq.CtqRanker) of ``ctq_model`` (None:
        the direction's newest fitted model), loaded on first use; SelectionError without one."""
        if self._ctq is None:
            try:
                self._ctq = CtqRanker(find_model(self.primary, self.ctq_model, self.src, self.tgt))
            except CtqError as e:
                raise SelectionError(str(e)) from None
        return self._ctq

    def _model_signature(self, method: str) -> str | None:
        return self.ctq_ranker().model.signature if methods.method(method).learned else None

    # ------------------------------------------------------------------ batches
    def warm(self, texts: list[str] | None = None, method: str | None = None,
             step: Callable[[str], object] | None = None) -> list[Analysis]:
        """Without ``texts``: load what the first selection would (spaCy, the stored
        scheme's pipeline, the Moses tables; an embedding method's model), calling ``step``
        after each (the CLI times them). With ``texts``: parse them in one spaCy call and
        preselect their pools together (each posting list read once for all); each analysis
        returned goes to ``select(text, analysis=...)``, which takes its pool (``method``:
        the one those selections use, default the selector's)."""
        method = method or self.options.method
        if not texts:
            step = step or (lambda _: None)
            self.query.preload(step)
            if methods.method(method).embeddings:
                self.embeddings.embedder(self.primary)  # a model that cannot load fails before any query
                step("embedder load")
            return []
        analyses = self.query.analyze_batch(texts)
        if methods.method(method).bm25_pool:
            conn, _ = self.reads.choose()
            self.engine.prepare(conn, [tokens for tokens, _ in analyses], self.options.pool)
        return analyses

    def select_many(self, texts: list[str], *, k: int | None = None, method: str | None = None,
                    record: bool = False) -> Iterator[SelectionResult]:
        """:meth:`select` of every sentence, ``BATCH`` at a time warmed together (the same
        results, a fraction of the round trips); yielded as they are made."""
        for start in range(0, len(texts), BATCH):
            chunk = texts[start:start + BATCH]
            for text, analysis in zip(chunk, self.warm(chunk, method)):
                yield self.select(text, k=k, method=method, record=record, analysis=analysis)

    # ------------------------------------------------------------------ one selection
    def select(self, text: str, *, k: int | None = None, method: str | None = None, record: bool = False,
               analysis: Analysis | None = None, min_match: float | None = None) -> SelectionResult:
        """Pick ``k`` examples for ``text`` (a sentence in the source language).

        The preselection needs only the Moses tokens, so it runs in a helper thread (which
        waits on the socket) while this thread parses the sentence: the server's work and
        the parse overlap instead of adding up. ``analysis``: from :meth:`warm`. A blank
        ``text`` is refused (SelectionError): no example can cover nothing. ``min_match``:
        this call's threshold (default the selector's)."""
        if not text.strip():
            raise SelectionError(BLANK_QUERY)
        min_match = self.options.min_match if min_match is None else checked_min_match(min_match)
        k = self.options.k if k is None else k
        method = method or self.options.method
        check_args(method, self.options.similarity, self.options.word_overlap, k)
        conn, read = self.reads.choose()  # the replica, or the primary (scoi.db.reads)
        with one_blas_thread():
            result = self._select(conn, read, text, k, method, analysis, min_match)
        if record:
            result.selection_id = record_selection(self.primary, result, self.query.labels)
        return result

    def _select(self, conn: psycopg.Connection, read: ReadStatus | None, text: str, k: int, method: str,
                analysis: Analysis | None, min_match: float | None) -> SelectionResult:
        if self.query.changed(conn):
            analysis = None  # parsed before `scoi reanalyze` switched parser: parse it again
        analysis = self.query.usable(analysis)
        entry = methods.method(method)
        if not self.query.scheme.has_trees and entry.trees:
            raise SelectionError(no_trees(conn, self.src, method))
        t0 = time.perf_counter()
        tokens = self.query.analyzer.tokenize(text) if analysis is None else analysis[0]
        pool_future = (None if not entry.bm25_pool or not tokens
                       else self._helper().submit(self._timed_pool, conn, tokens, read))
        try:
            # The fuzzy methods need no tree: the query's embedding instead (overlapping the pool too).
            terms = analysis[1] if analysis is not None else {} if entry.embeddings else self.query.analyzer.terms(text)
            query_vec = self.embeddings.embed(conn, text) if entry.embeddings else None
            t1 = time.perf_counter()
            pool, pool_ms = pool_future.result() if pool_future is not None else (PoolResult([], None, read), 0.0)
        finally:
            if pool_future is not None:
                futures.wait([pool_future])  # the connection is free again before anything else uses it
        rows, embeddings = pool.rows, None
        if query_vec is not None:
            ts = time.perf_counter()
            rows, embeddings = self.embeddings.inputs(conn, self.engine, query_vec,
                                                      rows if entry.bm25_pool else None, k)
            pool_ms = round(pool_ms + _ms(time.perf_counter() - ts), 3)
        offered, embeddings = keep_matching(tokens, rows, embeddings, min_match)
        t2 = time.perf_counter()
        selected = run_method(self.query, self.options, method, k, text, tokens, terms, offered, embeddings,
                              self.ctq_ranker() if entry.learned else None)
        t3 = time.perf_counter()
        if self.options.fill == "random" and entry.examples and len(selected) < k:
            selected += random_fill(conn, self.engine, k - len(selected), selected, tokens, self.options.seed,
                                    min_match)
        notice = None
        if min_match is not None and entry.examples and len(selected) < k:
            notice = (f"{len(offered)} of {len(rows)} candidates reach {min_match:g}% match: "
                      f"{len(selected)} example{'s' * (len(selected) != 1)} instead of {k}")
        embedder, model = self._embedder_name(method), self._model_signature(method)
        return SelectionResult(
            query=text, src_lang=self.src, tgt_lang=self.tgt, method=method, k=k,
            params=self.options.params(method, k, min_match, embedder, model),
            signature=self.options.signature(self.src, self.tgt, method, k, min_match, embedder, self.query.scheme,
                                             model),
            query_tokens=tokens, query_terms=terms, candidates=offered, selected=selected,
            # analyze: Moses + spaCy on this thread; pool: the SQL round trips (overlapping
            # the parse); wait: what the pool added after the parse; select: pool +
            # coverage (the work besides analysis); total: wall time.
            timings_ms={"analyze": _ms(t1 - t0), "pool": pool_ms, "wait": _ms(t2 - t1),
                        "coverage": _ms(t3 - t2), "select": round(pool_ms + _ms(t3 - t2), 3),
                        "total": _ms(time.perf_counter() - t0)},
            certified=pool.certified if pool_future is not None else None, read=read, min_match=min_match,
            notice=notice)

    def _helper(self) -> futures.ThreadPoolExecutor:
        if self._thread is None:
            self._thread = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="scoi-preselect")
        return self._thread

    def _timed_pool(self, conn: psycopg.Connection, tokens: list[str], read: ReadStatus | None
                    ) -> tuple[PoolResult, float]:
        t0 = time.perf_counter()
        pool = self.engine.pool(conn, tokens, self.options.pool, read)
        return pool, _ms(time.perf_counter() - t0)

    # ------------------------------------------------------------------ life cycle
    @contextmanager
    def filtered(self, where: dict[str, str] | None) -> Iterator[Selector]:
        """This selector restricted to pairs whose metadata holds ``where`` for the block
        (then as before): a shared selector (``scoi serve``'s, under its direction's lock)
        serves a request's filter without a selector per filter."""
        where = checked_where(where)
        before, self.options.where = self.options.where, where
        engine, self.engine = self.engine, self.engine.filtered(where)
        try:
            yield self
        finally:
            self.engine.close()
            engine.prepared.clear()
            self.options.where, self.engine = before, engine

    def close(self) -> None:
        self.engine.close()
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        self.reads.close()

    def __enter__(self) -> Selector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


__all__ = ["BATCH", "Bm25Params", "SelectionError", "SelectionResult", "Selector"]
