"""A query as the methods read it: its Moses tokens and tree terms, parsed exactly as the
stored sentences were (scoi.selection.scheme), and the coverage inputs that put the query
and its pool in one term table."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from itertools import chain
from typing import Any

import numpy as np
import psycopg

from scoi.analysis import Analyzer, load_trees
from scoi.core.pool import PackedCandidates
from scoi.core.polynomial import LabelSpace, TermTable, expand
from scoi.parsers import Scheme, import_spacy, needs_torch
from scoi.selection import scheme as schemes
from scoi.selection.types import Candidate

#: A sentence's (Moses tokens, terms).
Analysis = tuple[list[str], dict[str, int]]


class Parsed(tuple):
    """A sentence's (Moses tokens, terms) from :meth:`QueryAnalysis.analyze_batch`, with the
    scheme that parsed it: an analysis made before a reanalysis is not used after it."""

    scheme: Scheme

    def __new__(cls, value: Analysis, scheme: Scheme) -> Parsed:
        parsed = super().__new__(cls, value)
        parsed.scheme = scheme
        return parsed


class QueryAnalysis:
    """The source language's stored scheme, its label space and term table, and the query
    analyser (loaded on first use). ``parser``: a requested pipeline, checked against the
    stored one; ``method``: whether a treeless method may run without the scheme."""

    def __init__(self, conn: psycopg.Connection, src: str, parser: str | None, method: str) -> None:
        self.src, self.parser, self.method = src, parser, method
        self.load(conn)

    def load(self, conn: psycopg.Connection) -> None:
        """Load the stored scheme (checked), its labels and an empty term table. The parser
        row ids are read first: a reanalysis committing in between shows at the next
        :meth:`changed`."""
        ids = [r[0] for r in schemes.scheme_rows(conn, self.src)]
        scheme, parser_id = schemes.stored_scheme(conn, self.src, self.parser, self.method)
        self.scheme, self.scheme_ids = scheme, ids
        self.labels = LabelSpace(schemes.labels(conn, parser_id))
        self.terms = TermTable(self.labels)
        self._analyzer: Analyzer | None = None

    def changed(self, conn: psycopg.Connection) -> bool:
        """Before each selection (~0.07 ms): whether ``scoi reanalyze`` moved the stored
        sentences to another scheme since this was loaded; the new one is then loaded
        (True). While a reanalysis is under way (two schemes) this raises SelectionError,
        as a new selector would: terms of two parsers are never compared."""
        ids = [r[0] for r in schemes.scheme_rows(conn, self.src)]
        if ids == self.scheme_ids:
            return False
        before = self.scheme
        self.load(conn)
        if self.scheme != before:
            print(f"note: the stored {self.src} sentences are now analysed with {self.scheme} (was {before}): "
                  "parsing queries with it", file=sys.stderr, flush=True)
        return True

    def preload(self, step: Callable[[str], object]) -> None:
        """Load what the first analysis would, calling ``step`` after each part (timed by
        the CLI): spaCy, the stored scheme's pipeline, the Moses tables."""
        import_spacy(with_torch=needs_torch(self.scheme.name))
        step("spaCy import")
        load_trees(self.scheme.name)
        step(f"pipeline load ({self.scheme})")
        self.analyzer  # noqa: B018 - builds the Moses normaliser and tokeniser
        step("Moses set-up")

    @property
    def analyzer(self) -> Analyzer:
        """The query analyser: exactly the stored sentences' pipeline."""
        if self._analyzer is None:
            self._analyzer = Analyzer(self.src, self.scheme.name)
        return self._analyzer

    def analyze(self, text: str) -> Analysis:
        """(Moses tokens, polynomial terms) of a sentence."""
        a = self.analyzer.analyze([text])[0]
        return a.tokens, a.terms

    def analyze_batch(self, texts: list[str]) -> list[Parsed]:
        """:meth:`analyze` of many sentences in one spaCy call (about twice as fast per
        sentence as one call each)."""
        return [Parsed((a.tokens, a.terms), self.scheme) for a in self.analyzer.analyze(texts)]

    def usable(self, analysis: Analysis | None) -> Analysis | None:
        """``analysis`` if this scheme parsed it (or the caller did), else None."""
        return analysis if getattr(analysis, "scheme", self.scheme) == self.scheme else None

    def coverage_inputs(self, query_terms: dict[str, int], rows: list[Candidate]
                        ) -> tuple[np.ndarray, np.ndarray, PackedCandidates, np.ndarray]:
        """What :func:`scoi.core.greedy.select` needs: the query's term matrix and its rows
        of the term table, the candidates packed as rows of that table, and the table.

        No per-candidate arrays: one id lookup over the concatenated keys of the pool, one
        repeat by multiplicity, and the candidates' boundaries from the cumulative sums."""
        q_ids = self.terms.ids_of(expand(query_terms))
        keys = list(chain.from_iterable(r.term_keys for r in rows))
        mults = np.fromiter(chain.from_iterable(r.term_mults for r in rows), dtype=np.int64, count=len(keys))
        ids = np.repeat(self.terms.ids_of(keys), mults)
        # Candidate i's keys end at key_ends[i]; its terms end at the multiplicities summed so far.
        key_ends = np.cumsum(np.fromiter(map(len, (r.term_keys for r in rows)), dtype=np.int64, count=len(rows)))
        ends = np.concatenate(([0], np.cumsum(mults)))[key_ends]
        table = self.terms.matrix
        pool = PackedCandidates(table, ids, np.concatenate(([0], ends)), [r.tokens for r in rows], self.terms.norms)
        return table[q_ids], q_ids, pool, table


@cache
def _blas() -> Any:
    """threadpoolctl's controller of the BLAS libraries numpy loaded (found once: ~ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> Any:
    """One BLAS thread for a selection (process-wide while it runs; the previous limit is
    restored on exit; ~6 µs). Its matrix products are small (spaCy's parse; coverage's
    25 x 100 by 100 x 2,000 for a 30-token query), yet OpenBLAS splits them over every
    core, and on a busy 2-core machine the second thread waits for a core or takes it from
    the preselection thread: measured with 30-token queries, query analysis p50 6.6 ->
    3.8 ms and the coverage products' p95 5 -> 1.4 ms."""
    return _blas().limit(limits=1, user_api="blas")


__all__ = ["Analysis", "Parsed", "QueryAnalysis", "one_blas_thread"]
