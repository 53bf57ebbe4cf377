"""Select in-context examples for a sentence: the orchestrator of the selection package.

    from scoi.selection.selector import Selector
    with Selector("fr", "en") as sel:
        result = sel.select("Un homme joue de la guitare.", k=4)
        for pick in result.selected:
            print(pick.criterion, pick.src, "=>", pick.tgt)

Reads go to ``reads.choose()`` (a streaming replica when one is set and fresh enough,
scoi.db.reads), chosen once per selection and passed down; writes (recording) go to
``primary``, always. The pieces: options and signature (options), the stored scheme and
query analysis (scheme, query), preselection (preselector), embeddings (embedding), the
embedder and CTQ model a method uses (models), one selection's path (pipeline), match %,
the method's step (its registry entry, scoi.core.methods) and random fill (fill).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from scoi.config import read_max_lag_from_env
from scoi.core import defaults, methods
from scoi.core.greedy import check_args
from scoi.ctq import CtqRanker
from scoi.db.engine import ensure_migrated, resolve_database, resolve_read_url
from scoi.db.reads import ReadRoute
from scoi.selection.embedding import Embeddings
from scoi.selection.models import Models
from scoi.selection.options import Options, check_direction, checked_min_match, checked_where
from scoi.selection.pipeline import Helper, Parts, select_one
from scoi.selection.preselector import BlockPreselector, Bm25Params, corpus_ids, fetch
from scoi.selection.query import Analysis, QueryAnalysis, one_blas_thread
from scoi.selection.recording import record_selection
from scoi.selection.scheme import direction_exists
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
                               min_match=min_match, corpora=corpora, where=where, bm25=bm25 or Bm25Params.from_env()).check()
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
        self.models = Models(self.primary, self.src, self.tgt, self.embeddings, ctq_model)
        if methods.method(method).learned:
            self.ctq_ranker()  # fail now when no model is fitted for the direction
        self._helper = Helper()  # the thread that reads a pool while a sentence is parsed

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
        return self.options.signature(self.src, self.tgt, method, k, min_match, self.models.embedder_name(method),
                                      self.query.scheme, self.models.model_signature(method))

    @property
    def ctq_model(self) -> str | None:
        """--method ctq: the CTQ model's name (None: the direction's newest fitted one)."""
        return self.models.ctq_model

    def ctq_ranker(self) -> CtqRanker:
        """The ranker of ``ctq_model`` (scoi.ctq.CtqRanker), loaded on first use; SelectionError without one."""
        return self.models.ctq_ranker()

    # ------------------------------------------------------------------ batches
    def warm(self, texts: list[str] | None = None, method: str | None = None,
             step: Callable[[str], object] | None = None) -> list[Analysis]:
        """Without ``texts``: load what the first selection would (spaCy, the stored scheme's
        pipeline, the Moses tables; an embedding method's model), calling ``step`` after each
        (the CLI times them). With ``texts``: parse them in one spaCy call and preselect their
        pools together (each posting list read once for all); each analysis returned goes to
        ``select(text, analysis=...)``, which takes its pool (``method``: theirs, default the selector's)."""
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
        """Pick ``k`` examples for ``text`` (a sentence in the source language); a blank one is
        refused (SelectionError): no example can cover nothing. The preselection needs only the
        Moses tokens, so it runs in a helper thread (waiting on the socket) while this thread
        parses: the server's work and the parse overlap instead of adding up (pipeline.py).
        ``analysis``: from :meth:`warm`; ``min_match``: this call's threshold (default the selector's)."""
        if not text.strip():
            raise SelectionError(BLANK_QUERY)
        min_match = self.options.min_match if min_match is None else checked_min_match(min_match)
        k = self.options.k if k is None else k
        method = method or self.options.method
        check_args(method, self.options.similarity, self.options.word_overlap, k)
        conn, read = self.reads.choose()  # the replica, or the primary (scoi.db.reads)
        parts = Parts(self.src, self.tgt, self.options, self.query, self.engine, self.models, self._helper)
        with one_blas_thread():
            result = select_one(parts, conn, read, text, k, method, analysis, min_match)
        if record:
            result.selection_id = record_selection(self.primary, result, self.query.labels)
        return result

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
        self._helper.close()
        self.reads.close()

    def __enter__(self) -> Selector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["BATCH", "Bm25Params", "SelectionError", "SelectionResult", "Selector"]
