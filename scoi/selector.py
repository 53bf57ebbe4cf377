"""Select in-context examples for a sentence: SQL preselection, one-trip candidate fetch,
coverage in numpy (scoi.core.greedy), optional recording for inspection in SQL.

    from scoi.selector import Selector
    sel = Selector("fr", "en")
    result = sel.select("Un homme joue de la guitare.", k=4)
    for pick in result.selected:
        print(pick.criterion, pick.src, "=>", pick.tgt)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg import sql

from scoi.analysis import Scheme
from scoi.config import read_max_lag_from_env
from scoi.core import defaults, methods
from scoi.core.exact import check_where, where_part
from scoi.core.greedy import PackedPool, check_args, distinct_sources, select as greedy_select, source_key
from scoi.core.limits import LIMITS
from scoi.core.match import check_min_match, match_all
from scoi.core.methods import METHODS, method_settings
from scoi.core.names import is_language_code, printable
from scoi.core.polynomial import LabelSpace, TermTable, expand
from scoi.core.rbm25 import check_variant, ctq_tokens
from scoi.core.signature import corpora_part, method_parts, signature
from scoi.ctq import CtqError, CtqRanker, find_model
from scoi.db.queries import load
from scoi.db.reads import ReadRoute, ReadStatus
from scoi.preselect import pair_filter

if TYPE_CHECKING:
    import psycopg

SQL = load("select")
# The one-trip statement nests the preselection as a CTE: composed by psycopg, not by hand.
PRESELECT_FETCH = sql.SQL(SQL["preselect_fetch"]).format(preselect=sql.SQL(SQL["preselect"].rstrip().rstrip(";")))
FILLS = ("none", "random")
ENGINES = ("blocks", "sql")  # Bm25Params.engine: posting blocks scored in numpy, or the single SQL statement
#: Pairs preselected beyond the pool, as a share of it: the pool drops the pairs of a
#: repeated source sentence (1-5 pairs, in 12-17% of the 42k pools), and with these spares a
#: second, deeper preselection is rare. Measured on the 42k pools (200 long queries, p50 /
#: p95 ms of preselection + fetch): without spares 24.3 / 40.5 -> 25.6 / 66.1; with them
#: 22.9 / 50.1 -> 22.8 / 52.5, same load.
SPARE = 0.1


def direction_exists(conn: psycopg.Connection, src: str, tgt: str) -> bool:
    """Whether some corpus holds src-tgt pairs (in either direction: one ingest serves both)."""
    return conn.execute(SQL["direction_exists"], {"lang": src.lower(), "tgt": tgt.lower()}).fetchone()[0] > 0


def trees_missing(conn: psycopg.Connection, src: str, method: str) -> str | None:
    """Why ``method`` cannot run with source ``src`` for lack of trees (some of its stored
    sentences have none: no parser at ingest), or None: checked when a job is submitted."""
    from scoi.analysis import install_hint

    if not methods.method(method).trees:
        return None
    if not any(r[3] == "none" for r in conn.execute(SQL["lang_schemes"], {"lang": src.lower()}).fetchall()):
        return None
    return (f"method {method} needs dependency trees of the {src} sentences, which were stored without (no {src} "
            f"parser was installed); install one ({install_hint(src)}), then add the trees: "
            f"scoi reanalyze --lang {src}")


class SelectionError(RuntimeError):
    """A selection that cannot run (no corpus for the direction, bad option)."""


#: Why a blank sentence (empty, or only whitespace) gets no selection.
BLANK_QUERY = "the sentence is blank (empty or only whitespace): there is nothing to select examples for"


@dataclass(frozen=True)
class Bm25Params:
    """Preselection settings (see docs/preselection.md).

    The query reads the postings of the query's rarest tokens, at most
    ``max(budget, budget_frac * N)`` of them (N = eligible sentences of the language), and
    of the other tokens, heaviest first, the postings with tf >= 2, at most
    ``max(repeats, repeats_frac * N)`` (long queries repeat common tokens); it gives the
    best ``max(depth, depth_frac * N)`` sentences found their exact score (never fewer than
    the pool). It then certifies the pool (proves it is exact BM25's top n) if that reads
    at most ``max(certify, certify_frac * N)`` more postings; ``exact=True`` always does,
    whatever it reads. Larger values: closer to exact BM25, slower. The defaults are
    measured trade-offs (docs/preselection.md).
    """

    k1: float = defaults.BM25_K1
    b: float = defaults.BM25_B
    budget: int = 6000         # postings read at least
    budget_frac: float = 0.02  # ... or this share of N, whichever is larger
    depth: int = 600           # sentences re-scored exactly at least
    depth_frac: float = 0.0004  # ... or this share of N, whichever is larger
    repeats: int = 6000        # tf >= 2 postings of the other tokens read at most
    repeats_frac: float = 0.003  # ... or this share of N, whichever is larger
    certify: int = 5000        # postings the certification may read at most
    certify_frac: float = 0.0  # ... or this share of N, whichever is larger
    exact: bool = False        # always certify, whatever it reads: exact BM25's top n
    #: "blocks": exact BM25 top n from the posting blocks, scored in numpy (scoi/preselect.py,
    #: always exact and certified; the fields above are the "sql" statement's settings)
    engine: str = "blocks"
    #: blocks: read every list (no bounds) when the query's tokens have at most this many
    #: postings (default: always; MaxScore with block bounds measured slower up to 1M pairs)
    read_all: int = 2**62
    rare: int = 200_000        # blocks: else, postings of the rarest tokens read before theta is known
    probe: int = 0             # blocks: sentences scored exactly to find theta (0: max(2 pool, 50))

    def signature(self) -> str:
        """The settings that change a pool: all of them, or k1 and b for the exact pools."""
        if self.exact or self.engine == "blocks":
            return f"k1={self.k1},b={self.b},exact"
        return (f"k1={self.k1},b={self.b},budget={self.budget},frac={self.budget_frac},"
                f"repeats={self.repeats},rfrac={self.repeats_frac},depth={self.depth},dfrac={self.depth_frac},"
                f"certify={self.certify},cfrac={self.certify_frac}")

    def sql_params(self, pool: int) -> dict[str, Any]:
        """The preselection statement's settings for a pool of ``pool`` pairs (the caller
        adds the query tokens, languages, corpora and ``n``)."""
        return {"k1": self.k1, "b": self.b, "budget": self.budget, "budget_frac": self.budget_frac,
                "repeats": self.repeats, "repeats_frac": self.repeats_frac,
                "depth": max(self.depth, pool), "depth_frac": self.depth_frac,
                "certify": 2**62 if self.exact else self.certify, "certify_frac": self.certify_frac}


@dataclass
class CandidateRow:
    pair_id: int
    score: float
    src: str
    tgt: str
    tokens: list[str]
    term_keys: list[str]
    term_mults: list[int]
    match: float | None = None  # match % of its source against the query (scoi.core.match)


@dataclass
class Picked:
    pair_id: int
    src: str
    tgt: str
    criterion: str
    coverage: float | None
    match: float | None = None  # match % of its source against the query (scoi.core.match)


@dataclass
class SelectionResult:
    query: str
    src_lang: str
    tgt_lang: str
    method: str
    k: int
    params: dict[str, Any]
    signature: str
    query_tokens: list[str]
    query_terms: dict[str, int]
    candidates: list[CandidateRow]
    selected: list[Picked]
    timings_ms: dict[str, float] = field(default_factory=dict)
    selection_id: int | None = None
    #: the pool is proven to be exact BM25's top ``pool`` (None: no pool, or no pair matched)
    certified: bool | None = None
    #: where the selection read (a replica, or the primary) and the replica's lag; None
    #: when no replica is configured (scoi.db.reads)
    read: ReadStatus | None = None
    #: only candidates at or above this match % were offered to the method (None: all)
    min_match: float | None = None
    #: why fewer than k examples were picked, when --min-match left too few candidates
    notice: str | None = None

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        """The JSON shape of ``scoi select --json`` (``--explain``: candidates as objects)."""
        cands: list[Any]
        if explain:
            cands = [{"pair_id": c.pair_id, "score": c.score, "match": c.match, "src": c.src, "tgt": c.tgt}
                     for c in self.candidates]
        else:
            cands = [c.pair_id for c in self.candidates]
        return {
            "query": self.query, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "method": self.method,
            "k": self.k, "params": self.params, "signature": self.signature,
            "candidates": cands, "selected": [asdict(p) for p in self.selected],
            "selection_id": self.selection_id, "certified": self.certified, "timings_ms": self.timings_ms,
            "read": self.read.to_dict() if self.read else None, "min_match": self.min_match, "notice": self.notice,
        }


class Selector:
    """Picks examples for sentences in one direction; keeps a connection and a parser.

    ``url``: the database (default: the configured one). ``read_url``: a streaming replica
    of it that selection reads from, recording still writing to ``url`` (default, when
    ``url`` is not given: ``SCOI_READ_DATABASE_URL``); ``read_max_lag``: seconds it may be
    behind (default ``SCOI_READ_MAX_LAG``). See scoi.db.reads.
    """

    #: whether the last preselection was proven to be exact BM25's top ``pool`` (None: no
    #: pair matched; see docs/preselection.md, "Certified top n")
    certified: bool | None = None

    def __init__(self, src: str, tgt: str, *, url: str | None = None, read_url: str | None = None,
                 read_max_lag: float | None = None, corpora: list[str] | None = None,
                 k: int = defaults.K, method: str = defaults.METHOD, pool: int = defaults.POOL,
                 similarity: str = defaults.SIMILARITY, word_overlap: str = defaults.WORD_OVERLAP,
                 fill: str = defaults.FILL, seed: int = defaults.SEED, bm25: Bm25Params | None = None,
                 parser: str | None = None, rbm25_variant: str = defaults.RBM25_VARIANT,
                 embedder: str | None = None, ef_search: int = defaults.EF_SEARCH,
                 where: dict[str, str] | None = None, min_match: float | None = None,
                 ctq_model: str | None = None) -> None:
        check_args(method, similarity, word_overlap, k)
        try:
            self.min_match = check_min_match(min_match)
        except ValueError as e:
            raise SelectionError(str(e)) from None
        check_variant(rbm25_variant)
        for code, option in ((src, "--src"), (tgt, "--tgt")):
            if not is_language_code(code):  # the hints below paste it into a command to copy
                raise SelectionError(f"{option} '{printable(code[:40])}' is not a language code; expected an ISO "
                                     "639 code such as fr, en or pt-BR")
        if not 1 <= pool <= LIMITS["pool"][1]:
            raise SelectionError(f"pool size must be from 1 to {LIMITS['pool'][1]}, not {pool}")
        if fill not in FILLS:
            raise SelectionError(f"unknown fill {fill!r}; expected one of {FILLS}")
        if ef_search < 1:
            raise SelectionError("ef_search must be at least 1")
        self.src, self.tgt = src.lower(), tgt.lower()
        self.k, self.method, self.pool = k, method, pool
        self.similarity, self.word_overlap, self.fill, self.seed = similarity, word_overlap, fill, seed
        self.rbm25_variant = rbm25_variant
        self.embedder_model, self.ef_search = embedder, ef_search
        self._embedder: Any = None  # scoi.embedder.Embedder, loaded on first use
        self._embedder_row: Any = None  # scoi.embeddings.EmbedderRow
        self.ctq_model, self._ctq = ctq_model, None  # --method ctq: the model's name (None: newest), its ranker
        self.bm25 = bm25 or Bm25Params()
        if self.bm25.engine not in ENGINES:
            raise SelectionError(f"unknown BM25 engine {self.bm25.engine!r}; expected one of {ENGINES}")
        if url is None:
            from scoi.db.engine import ensure_migrated, resolve_database, resolve_read_url

            url = resolve_database().url
            ensure_migrated(url)  # one query when at head (no SQLAlchemy/Alembic import)
            read_url = read_url or resolve_read_url()
        # Selection reads from self.conn: the replica of read_url (scoi.db.reads), or the
        # primary; recording writes to the primary (self.reads.primary).
        if read_max_lag is None:
            read_max_lag = read_max_lag_from_env()
        self.reads = ReadRoute(url, read_url, max_lag=read_max_lag)
        self.conn, self.read_status = self.reads.choose()
        if not direction_exists(self.conn, self.src, self.tgt):
            raise SelectionError(f"no corpus holds {self.src}-{self.tgt} pairs; load one first: "
                                 f"scoi ingest FILE --src {self.src} --tgt {self.tgt}")
        self.corpus_ids = self._corpus_ids(corpora)
        self.corpora = corpora
        try:  # --where KEY=VALUE: only pairs whose metadata holds these (scoi.core.exact)
            self.where = check_where(where)
        except ValueError as e:
            raise SelectionError(str(e)) from None
        # Terms are comparable only within one analysis scheme: queries are parsed with the
        # stored sentences' (checked here, before anything is parsed).
        self._parser_override = parser
        self._load_scheme()
        if methods.method(method).embeddings:
            self.embedder_row()  # fail now, not at the first sentence, when nothing is embedded
        if method == "ctq":
            self.ctq_ranker()  # fail now when no model is fitted for the direction
        self._thread: futures.ThreadPoolExecutor | None = None
        self._pools: dict[tuple[str, ...], list[CandidateRow]] = {}  # prepare_pools: pools ready for select

    # ------------------------------------------------------------------ pieces
    def _corpus_ids(self, names: list[str] | None) -> list[int] | None:
        if not names:
            return None
        rows = dict((n, i) for i, n in self.conn.execute(SQL["corpus_ids"], {"names": names}).fetchall())
        missing = [n for n in names if n not in rows]
        if missing:
            raise SelectionError(f"unknown corpus {', '.join(missing)}; see `scoi corpora`")
        return [rows[n] for n in names]

    def _stored_scheme(self, override: str | None, method: str) -> tuple[Scheme, int | None]:
        """The analysis scheme of the source language's stored sentences and its parser row.

        Queries must be analysed exactly as those sentences were, or their terms are not
        comparable: mixed or old ('moses') schemes, another pipeline or another installed
        version are refused with the command that fixes them. A method that reads no tree
        (its registry entry's ``trees`` is false) runs whatever the trees are, without
        parsing the query when the stored scheme cannot be used (``NO_TREES``).
        """
        from scoi.analysis import NO_TREES, choose_parser

        rows = self.conn.execute(SQL["lang_schemes"], {"lang": self.src}).fetchall()
        treeless = not methods.method(method).trees
        if not rows:  # nothing stored yet (empty corpora): the parser ingest would use
            return choose_parser(self.src, override, required=not treeless).scheme, None
        try:
            return self._check_schemes(rows, override, method)
        except SelectionError:
            if treeless:
                return NO_TREES, None
            raise

    def _check_schemes(self, rows: list[Any], override: str | None, method: str) -> tuple[Scheme, int | None]:
        """:meth:`_stored_scheme`'s checks: exactly one usable scheme, or SelectionError."""
        from scoi.analysis import parser_name, parser_version

        fix = f"scoi reanalyze --lang {self.src}"
        schemes = [Scheme(name, version, tree_tokens) for _, name, version, tree_tokens in rows]
        if len(schemes) > 1:
            raise SelectionError(
                f"the stored {self.src} sentences were analysed with {len(schemes)} different schemes "
                f"({', '.join(map(str, schemes))}), whose terms are not comparable; bring them all to the "
                f"current scheme: {fix}")
        scheme = schemes[0]
        if not scheme.has_trees:
            raise SelectionError(self._no_trees(method))
        if scheme.tree_tokens == "moses":
            raise SelectionError(
                f"the stored {self.src} sentences were analysed with the old scheme {scheme} (trees over the "
                f"Moses tokens, before migration 0007), not as SCOI's authors parse; re-analyse them: "
                f"scoi db upgrade, then {fix}")
        wanted = parser_name(override) if override else None
        if wanted and wanted != scheme.name:
            raise SelectionError(
                f"parser {override!r} requested for {self.src!r}, but the stored {self.src} sentences were "
                f"analysed with {scheme}; drop the override, or re-analyse them with it: "
                f"{fix} --parser {self.src}={override}")
        installed = parser_version(scheme.name)
        if installed != scheme.version:
            have = f"{scheme.name}=={installed} is installed" if installed else f"{scheme.name} is not installed"
            raise SelectionError(
                f"the stored {self.src} sentences were analysed with {scheme}, but {have}; queries must be "
                f"parsed with the same parser: install {scheme.name} version {scheme.version}, or re-analyse "
                f"the stored sentences with the installed one: {fix}")
        return scheme, rows[0][0]

    def _load_scheme(self) -> None:
        """Load the stored scheme (checked by :meth:`_stored_scheme`), its labels and an
        empty term table; the parser is loaded on first use. The parser row ids are read
        first: a reanalysis committing in between shows at the next :meth:`_scheme_changed`."""
        ids = [r[0] for r in self.conn.execute(SQL["lang_schemes"], {"lang": self.src}).fetchall()]
        scheme, parser_id = self._stored_scheme(self._parser_override, self.method)
        labels = [r[0] for r in self.conn.execute(SQL["labels_for_lang"], {"parser_id": parser_id}).fetchall()]
        self.scheme, self._scheme_ids = scheme, ids
        self.labels = LabelSpace(labels)
        self.terms = TermTable(self.labels)
        self._analyzer = None
        self._pools = {}  # prepared with the previous scheme's terms

    def _scheme_changed(self) -> bool:
        """Before each selection (one index probe per parser row, ~0.07 ms): whether
        ``scoi reanalyze`` moved the stored sentences to another scheme since this selector
        (a serve's, a worker's) loaded its own; the new one is then loaded (True). While a
        reanalysis is under way (two schemes) every selection raises SelectionError, as a
        new selector would: terms of two parsers are never compared."""
        ids = [r[0] for r in self.conn.execute(SQL["lang_schemes"], {"lang": self.src}).fetchall()]
        if ids == self._scheme_ids:
            return False
        before = self.scheme
        self._load_scheme()
        if self.scheme != before:
            print(f"note: the stored {self.src} sentences are now analysed with {self.scheme} (was {before}): "
                  "parsing queries with it", file=sys.stderr, flush=True)
        return True

    def _no_trees(self, method: str) -> str:
        """Why ``method`` cannot run on a source stored without trees, and the fix."""
        return trees_missing(self.conn, self.src, method) or (
            f"method {method} needs dependency trees of the {self.src} sentences: scoi reanalyze --lang {self.src}")

    @property
    def analyzer(self):
        """The query analyser: exactly the stored sentences' pipeline (``self.scheme``)."""
        if self._analyzer is None:
            from scoi.analysis import Analyzer

            self._analyzer = Analyzer(self.src, self.scheme.name)
        return self._analyzer

    def analyze(self, text: str) -> tuple[list[str], dict[str, int]]:
        """(Moses tokens, polynomial terms) of a sentence."""
        a = self.analyzer.analyze([text])[0]
        return a.tokens, a.terms

    def analyze_batch(self, texts: list[str]) -> list[tuple[list[str], dict[str, int]]]:
        """:meth:`analyze` of many sentences in one spaCy call (about twice as fast per
        sentence as one call each); pass each result to ``select(analysis=...)``."""
        return [_Parsed((a.tokens, a.terms), self.scheme) for a in self.analyzer.analyze(texts)]

    def tree_terms(self, text: str) -> dict[str, int]:
        """The polynomial terms of a sentence's dependency tree."""
        return self.analyzer.terms(text)

    def preselect_params(self, tokens: list[str], n: int | None = None) -> dict[str, Any]:
        """The preselection statement's parameters for the top ``n`` pairs (default: the
        pool and its spares, what :meth:`select` asks for first)."""
        n = n or self.depth
        filt = pair_filter(self.src, self.tgt, self.corpus_ids, self.where)
        if self.bm25.engine == "blocks":
            return {**filt, "tokens": [t.lower() for t in tokens], "n": n,
                    "read_all": self.bm25.read_all, "rare": self.bm25.rare}
        return {**filt, "tokens": [t.lower() for t in tokens], "n": n, **self.bm25.sql_params(n)}

    def preselect_sql(self) -> str:
        """The SQL :meth:`select` runs to preselect and fetch the candidates, as text: the
        block reads (numpy scores between them, scoi/preselect.py) or the one statement."""
        if self.bm25.engine == "blocks":
            return "\n\n".join(f"-- {name}\n{SQL[name]}" for name in
                                ("blocks_stream", "blocks_top", "blocks_terms", "blocks_read", "blocks_fetch",
                                 "blocks_exact", "fetch_candidates"))
        return PRESELECT_FETCH.as_string(self.conn)

    def preselect(self, tokens: list[str], stats: Any = None,
                  details: dict[int, tuple[Any, ...]] | None = None, n: int | None = None,
                  **blocks: Any) -> list[tuple[int, float]]:
        """(pair_id, score) of the top ``n`` (default ``pool``) pairs by BM25, best first,
        before the pool keeps one pair per source sentence (:meth:`pool_candidates`). Sets
        :attr:`certified` (whether they are proven to be exact BM25's top ``n``).
        ``stats``: a scoi.preselect.Stats to fill; ``details``: filled with the candidates'
        texts and terms when the last round trip brought them (blocks engine); ``blocks``:
        more of scoi.preselect.preselect_blocks' options (the lookup's)."""
        n = n or self.pool
        if not tokens:
            self.certified = True
            return []
        if self.bm25.engine == "blocks":
            from scoi.preselect import preselect_blocks

            with _snapshot(self.conn):
                found = preselect_blocks(self.conn, lang=self.src, tgt=self.tgt, tokens=tokens, n=n,
                                         corpora=self.corpus_ids, k1=self.bm25.k1, b=self.bm25.b,
                                         read_all=self.bm25.read_all, budget=self.bm25.rare,
                                         probe=self.bm25.probe, stats=stats, details=details, where=self.where,
                                         **blocks)
            self.certified = True if found else None
            return found
        rows = self.conn.execute(SQL["preselect"], self.preselect_params(tokens, n)).fetchall()
        self.certified = _certified(rows, 2)
        return [(r[0], r[1]) for r in rows]

    def pool_candidates(self, tokens: list[str], n: int | None = None) -> list[CandidateRow]:
        """The pool: the top ``n`` (default ``pool``) pairs by BM25 (:meth:`preselect` then
        :meth:`fetch`; the "sql" engine: in one statement and one round trip) holding each
        source sentence once, by its best-ranked pair (scoi.core.greedy.distinct_sources,
        docs/method.md §5); when that drops pairs, a deeper preselection fills the pool up to
        its size. Sets :attr:`certified` too. Pools prepared by :meth:`prepare_pools` serve
        the default size only."""
        if not tokens:
            self.certified = True
            return []
        size = n or self.pool
        depth = _depth(size)
        prepared = self.bm25.engine == "blocks" and n is None
        rows = self._pools.pop(tuple(t.lower() for t in tokens), None) if prepared else None
        if rows is None:
            rows = self._ranked(tokens, depth)
        else:
            self.certified = True if rows else None
        while True:
            pool = [rows[i] for i in distinct_sources([r.src for r in rows])[:size]]
            if len(pool) >= size or len(rows) < depth:  # full, or every matching pair is in
                return pool
            depth *= 2
            rows = self._ranked(tokens, depth)

    @property
    def depth(self) -> int:
        """Pairs the first preselection of a query asks for: the pool and its spares."""
        return _depth(self.pool)

    def _ranked(self, tokens: list[str], n: int) -> list[CandidateRow]:
        """The top ``n`` pairs by BM25 with their texts and terms, best first."""
        if self.bm25.engine == "blocks":
            details: dict[int, tuple[Any, ...]] = {}
            found = self.preselect(tokens, details=details, n=n)
            if all(p in details for p, _ in found):  # mapped and fetched in the same round trip
                return [_candidate(p, s, details[p]) for p, s in found]
            return self.fetch(found)
        rows = self.conn.cursor(binary=True).execute(PRESELECT_FETCH, self.preselect_params(tokens, n)).fetchall()
        self.certified = _certified(rows, 2)
        return [CandidateRow(r[0], r[1], r[3], r[4], list(r[5]), list(r[6]), list(r[7])) for r in rows]

    def prepare_pools(self, token_lists: list[list[str]]) -> None:
        """Preselect and fetch the pools of many queries at once (block engine: each posting
        list read once for all of them, pairs and candidates in one round trip each); the
        next :meth:`select` of each query (with its ``analysis``) takes its pool from here.
        For batches: ``scoi select --file``, job preparation."""
        if self.bm25.engine != "blocks":
            return
        from scoi.preselect import preselect_many

        lists = [toks for toks in dict.fromkeys(tuple(t.lower() for t in toks) for toks in token_lists) if toks]
        if not lists:
            return
        with _snapshot(self.conn):
            pools = preselect_many(self.conn, lang=self.src, tgt=self.tgt, token_lists=[list(t) for t in lists],
                                   n=self.depth, corpora=self.corpus_ids, k1=self.bm25.k1, b=self.bm25.b,
                                   read_all=self.bm25.read_all, budget=self.bm25.rare, probe=self.bm25.probe,
                                   where=self.where)
            rows = {r.pair_id: r for r in self.fetch(list(dict.fromkeys(x for pool in pools for x in pool)))}
        for toks, pool in zip(lists, pools):
            self._pools[toks] = [replace(rows[p], score=s) for p, s in pool]  # shallow: lists shared

    def fetch(self, scored: list[tuple[int, float]]) -> list[CandidateRow]:
        """Texts, tokens and terms of the candidates, in one round trip, in pool order."""
        if not scored:
            return []
        # Binary results: text arrays come back without text-format parsing (isolated, on
        # the same pools: 1.5 ms vs 2.4 ms per fetch).
        rows = self.conn.cursor(binary=True).execute(SQL["fetch_candidates"], {
            "pair_ids": [p for p, _ in scored], "lang": self.src, "tgt": self.tgt}).fetchall()
        scores = dict(scored)
        return [_candidate(r[0], scores.get(r[0], 0.0), r[1:]) for r in rows]

    def coverage_inputs(self, query_terms: dict[str, int], rows: list[CandidateRow]
                        ) -> tuple[np.ndarray, np.ndarray, PackedPool, np.ndarray]:
        """What :func:`scoi.core.greedy.select` needs: the query's term matrix and its rows of
        the selector's term table, the candidates packed as rows of that table, and the table.

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
        pool = PackedPool(table, ids, np.concatenate(([0], ends)), [r.tokens for r in rows], self.terms.norms)
        return table[q_ids], q_ids, pool, table

    def embedder_row(self) -> Any:
        """The stored embedder the fuzzy methods use (``embedder``, default the paper's):
        refused when no sentence was embedded with it."""
        if self._embedder_row is None:
            from scoi.hub import model_name
            from scoi.embeddings import find_embedder

            name = model_name(self.embedder_model or defaults.EMBEDDER)
            row = find_embedder(self.conn, name)
            if row is None:
                raise SelectionError(f"no sentence is embedded with {name}; the fuzzy methods need embeddings: "
                                     f"scoi embed --model {name} (or pass --embedder with the model you embedded with)")
            self._embedder_row = row
        return self._embedder_row

    def embedder(self) -> Any:
        """The stored embedder's model (a scoi.embedder.Embedder), loaded on first use."""
        if self._embedder is None:
            from scoi.embedder import Embedder

            self._embedder = Embedder(self.embedder_row().name)
        return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        """The query's embedding by the stored embedder's model."""
        return self.embedder().encode([text])[0]

    def _embedding_inputs(self, method: str, query: np.ndarray, rows: list[CandidateRow], k: int
                          ) -> tuple[list[CandidateRow], tuple[np.ndarray, np.ndarray], float]:
        """fuzzy: (the pool, its embeddings); fuzzy-ann: (the k nearest pairs over the whole
        database by the HNSW index, theirs); and the milliseconds the SQL took."""
        from scoi.embeddings import nearest, pool_embeddings

        t0 = time.perf_counter()
        if methods.method(method).bm25_pool:
            vectors = pool_embeddings(self.conn, self.embedder_row(), [r.pair_id for r in rows], self.src)
        else:
            n = k
            while True:  # the k nearest pairs, one per source sentence (as a pool holds them)
                found = nearest(self.conn, self.embedder_row(), query, lang=self.src, tgt=self.tgt,
                                corpora=self.corpus_ids, n=n, ef_search=self.ef_search, where=self.where)
                rows = self.fetch([(pair_id, 1.0 - dist) for pair_id, dist, _ in found])
                keep = distinct_sources([r.src for r in rows])[:k]
                if len(keep) >= k or len(found) < n:
                    break
                n *= 2
            rows, found = [rows[i] for i in keep], [found[i] for i in keep]
            vectors = np.stack([v for _, _, v in found]) if found else np.zeros((0, self.embedder_row().dim))
        return rows, (query, vectors), _ms(time.perf_counter() - t0)

    # ------------------------------------------------------------------ API
    def select(self, text: str, *, k: int | None = None, method: str | None = None, record: bool = False,
               analysis: tuple[list[str], dict[str, int]] | None = None,
               min_match: float | None = None) -> SelectionResult:
        """Pick ``k`` examples for ``text`` (a sentence in the source language).

        The preselection needs only the Moses tokens, so it is sent to PostgreSQL (from a
        helper thread that waits on the socket) while this thread parses the sentence with
        spaCy: the server's work and the parse overlap instead of adding up (30-token
        sentences: parse ~5 ms, preselection ~6-8 ms). ``analysis``: the sentence's
        (Moses tokens, terms), when the caller has parsed a whole batch already. Runs with
        one BLAS thread (:func:`_one_blas_thread`). A blank ``text`` is refused
        (SelectionError): no example can cover nothing, and "selecting" for it only hides a
        caller's mistake. ``min_match``: this call's threshold (default the selector's): only
        candidates at or above it reach the method.
        """
        if not text.strip():
            raise SelectionError(BLANK_QUERY)
        try:
            min_match = self.min_match if min_match is None else check_min_match(min_match)
        except ValueError as e:
            raise SelectionError(str(e)) from None
        with _one_blas_thread():
            return self._select(text, k=k, method=method, record=record, analysis=analysis, min_match=min_match)

    def _select(self, text: str, *, k: int | None, method: str | None, record: bool,
                analysis: tuple[list[str], dict[str, int]] | None, min_match: float | None) -> SelectionResult:
        k = self.k if k is None else k
        method = method or self.method
        check_args(method, self.similarity, self.word_overlap, k)
        self.conn, self.read_status = self.reads.choose()  # the replica, or the primary (scoi.db.reads)
        if self._scheme_changed() or getattr(analysis, "scheme", self.scheme) != self.scheme:
            analysis = None  # parsed before `scoi reanalyze` switched parser: parse it again
        entry = methods.method(method)
        if not self.scheme.has_trees and entry.trees:
            raise SelectionError(self._no_trees(method))
        t0 = time.perf_counter()
        tokens = self.analyzer.tokenize(text) if analysis is None else analysis[0]
        by_embedding = entry.embeddings
        pool = (None if not entry.bm25_pool or not tokens
                else self._preselect_thread().submit(self._timed_pool, tokens))
        try:
            # The fuzzy methods need no tree: the query's embedding instead (overlapping the pool too).
            terms = analysis[1] if analysis is not None else {} if by_embedding else self.tree_terms(text)
            query_vec = self.embed_query(text) if by_embedding else None
            t1 = time.perf_counter()
            rows, pool_ms = pool.result() if pool is not None else ([], 0.0)
        finally:
            if pool is not None:
                futures.wait([pool])  # the connection is free again before anything else uses it
        embeddings = None
        if query_vec is not None:
            rows, embeddings, sql_ms = self._embedding_inputs(method, query_vec, rows, k)
            pool_ms = round(pool_ms + sql_ms, 3)
        pooled = len(rows)
        rows, embeddings = _keep_matching(tokens, rows, embeddings, min_match)
        t2 = time.perf_counter()
        q, q_ids, cands, table = self.coverage_inputs(terms, rows)
        pick_tokens = tokens
        if "rbm25_variant" in entry.settings and self.rbm25_variant != "moses":  # docs/method.md §7.1: its tokens
            tokenize = _tokens_13a if self.rbm25_variant == "agrawal" else ctq_tokens
            pick_tokens, cands = tokenize(text), cands.with_tokens([tokenize(r.src) for r in rows])
        if method == "ctq":  # ---- CTQ Scorer (scoi.ctq): the pool's top k by predicted one-shot quality
            picks = self.ctq_ranker().picks(text, [r.src for r in rows], [r.tgt for r in rows],
                                            [r.score for r in rows], k)
        else:
            picks = greedy_select(q, pick_tokens, cands, k=k, method=method, similarity=self.similarity,
                                  word_overlap=self.word_overlap, seed=self.seed, term_table=table,
                                  query_term_ids=q_ids, rbm25_variant=self.rbm25_variant, embeddings=embeddings)
        selected = [Picked(rows[p.index].pair_id, rows[p.index].src, rows[p.index].tgt, p.criterion, p.coverage,
                           rows[p.index].match) for p in picks]
        t3 = time.perf_counter()
        if self.fill == "random" and entry.examples and len(selected) < k:
            selected += self._fill(k - len(selected), selected, tokens, min_match)
        notice = None
        if min_match is not None and entry.examples and len(selected) < k:
            notice = (f"{len(rows)} of {pooled} candidates reach {min_match:g}% match: "
                      f"{len(selected)} example{'s' * (len(selected) != 1)} instead of {k}")
        params = self.params(method, k, min_match)
        result = SelectionResult(
            query=text, src_lang=self.src, tgt_lang=self.tgt, method=method, k=k, params=params,
            signature=self.signature(method, k, min_match), query_tokens=tokens, query_terms=terms,
            candidates=rows, selected=selected,
            # analyze: Moses + spaCy on this thread; pool: the SQL round trip (overlapping
            # the parse); wait: what the pool added after the parse; select: pool +
            # coverage (the work besides analysis); total: wall time.
            timings_ms={"analyze": _ms(t1 - t0), "pool": pool_ms, "wait": _ms(t2 - t1),
                        "coverage": _ms(t3 - t2), "select": round(pool_ms + _ms(t3 - t2), 3),
                        "total": _ms(time.perf_counter() - t0)},
            certified=self.certified if pool is not None else None, read=self.read_status,
            min_match=min_match, notice=notice)
        if record:
            from scoi.recording import record_selection

            result.selection_id = record_selection(self.reads.primary, result, self.labels)
        return result

    def _preselect_thread(self) -> futures.ThreadPoolExecutor:
        if self._thread is None:
            self._thread = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="scoi-preselect")
        return self._thread

    def _timed_pool(self, tokens: list[str]) -> tuple[list[CandidateRow], float]:
        t0 = time.perf_counter()
        rows = self.pool_candidates(tokens)
        return rows, _ms(time.perf_counter() - t0)

    def _fill(self, n: int, picked: list[Picked], tokens: list[str], min_match: float | None) -> list[Picked]:
        """``n`` random pairs (seeded) whose source sentences are neither picked already nor
        each other's (one slot per source sentence, docs/method.md §5), at or above
        ``min_match`` when one is set."""
        ids = [r[0] for r in self.conn.execute(SQL["random_examples"], {
            **pair_filter(self.src, self.tgt, self.corpus_ids, self.where),
            "exclude": [p.pair_id for p in picked],
            "seed": self.seed, "n": 2 * n}).fetchall()]  # spare ones: variants equal after source_key
        rows, _ = _keep_matching(tokens, self.fetch([(i, 0.0) for i in ids]), None, min_match)
        taken = {source_key(p.src) for p in picked}
        fill = [r for r in (rows[i] for i in distinct_sources([r.src for r in rows])) if source_key(r.src) not in taken]
        return [Picked(r.pair_id, r.src, r.tgt, "fill", None, r.match) for r in fill[:n]]

    def method_settings(self, method: str) -> dict[str, str | int]:
        """The settings only ``method`` reads, as params and the signature name them."""
        embedder = self.embedder_row().name if methods.method(method).embeddings else None
        ctq = self.ctq_ranker().model.signature if method == "ctq" else None
        return method_settings(method, rbm25_variant=self.rbm25_variant, embedder=embedder,
                               ef_search=self.ef_search, ctq_model=ctq)

    def ctq_ranker(self) -> CtqRanker:
        """--method ctq: the CTQ Scorer ranker (scoi.ctq.CtqRanker) of ``ctq_model`` (None:
        the direction's newest fitted model), loaded on first use; SelectionError without one."""
        if self._ctq is None:
            try:
                self._ctq = CtqRanker(find_model(self.conn, self.ctq_model, self.src, self.tgt))
            except CtqError as e:
                raise SelectionError(str(e)) from None
        return self._ctq

    def params(self, method: str, k: int, min_match: float | None = None) -> dict[str, Any]:
        """The settings of a selection (``min_match`` only when one was set)."""
        return {"method": method, **self.method_settings(method), "k": k, "pool": self.pool,
                "similarity": self.similarity, "word_overlap": self.word_overlap, "fill": self.fill,
                "seed": self.seed, "corpora": self.corpora, **({"where": self.where} if self.where else {}),
                "bm25": asdict(self.bm25), **({} if min_match is None else {"min_match": min_match})}

    def signature(self, method: str, k: int, min_match: float | None = None) -> str:
        """Every setting that changes the result (scoi.core.signature)."""
        return signature(self.src, self.tgt, {
            "method": method, **method_parts(self.method_settings(method)), "k": k, "pool": self.pool,
            "match": None if min_match is None else f"{min_match:g}",
            "sim": self.similarity, "words": self.word_overlap, "fill": self.fill, "seed": self.seed,
            "bm25": self.bm25.signature(), "corpora": corpora_part(self.corpora), "where": where_part(self.where),
            "parser": self.scheme})

    @contextmanager
    def filtered(self, where: dict[str, str] | None) -> Iterator[Selector]:
        """This selector restricted to pairs whose metadata holds ``where`` for the block
        (then as before): a shared selector (``scoi serve``'s, under its direction's lock)
        serves a request's filter without a selector per filter. Pools prepared for
        another filter are dropped."""
        try:
            where = check_where(where)
        except ValueError as e:
            raise SelectionError(str(e)) from None
        before, self.where, self._pools = self.where, where, {}
        try:
            yield self
        finally:
            self.where, self._pools = before, {}

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        self.reads.close()

    def __enter__(self) -> Selector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def _snapshot(conn: psycopg.Connection) -> Iterator[None]:
    """One REPEATABLE READ, read-only transaction around the block preselection's round
    trips: counters, directories, blocks and forward rows from one snapshot. Inside a
    transaction the caller opened, that one's snapshot serves."""
    from psycopg.pq import TransactionStatus

    if conn.info.transaction_status != TransactionStatus.IDLE:
        yield
        return
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    try:
        yield
    finally:
        conn.execute("ROLLBACK" if conn.info.transaction_status == TransactionStatus.INERROR else "COMMIT")


@cache
def _blas() -> Any:
    """threadpoolctl's controller of the BLAS libraries numpy loaded (found once: ~ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread() -> Any:
    """One BLAS thread for a selection (process-wide while it runs; the previous limit is
    restored on exit; ~6 µs). Its matrix products are small (spaCy's parse; coverage's
    25 x 100 by 100 x 2,000 for a 30-token query), yet OpenBLAS splits them over every
    core, and on a busy 2-core machine the second thread waits for a core or takes it from
    the preselection thread: measured with 30-token queries, query analysis p50 6.6 ->
    3.8 ms and the coverage products' p95 5 -> 1.4 ms."""
    return _blas().limit(limits=1, user_api="blas")


def _keep_matching(tokens: list[str], rows: list[CandidateRow], embeddings: tuple[np.ndarray, np.ndarray] | None,
                   min_match: float | None) -> tuple[list[CandidateRow], tuple[np.ndarray, np.ndarray] | None]:
    """Set each candidate's match % against the query's tokens; with ``min_match``, keep
    only those at or above it (and their embeddings' rows), in pool order."""
    for row, m in zip(rows, match_all(tokens, [r.tokens for r in rows])):
        row.match = m
    if min_match is None:
        return rows, embeddings
    keep = [i for i, r in enumerate(rows) if r.match >= min_match]
    if embeddings is not None:
        embeddings = (embeddings[0], embeddings[1][keep])
    return [rows[i] for i in keep], embeddings


def _depth(size: int) -> int:
    """Pairs a preselection asks for to fill a pool of ``size`` distinct sources at once in
    most queries: the pool and its spares (docs/method.md §5)."""
    return size + max(1, round(size * SPARE))


def _candidate(pair_id: int, score: float, row: Any) -> CandidateRow:
    """A candidate from fetch_candidates' (or blocks_top's) columns after the pair id:
    source text, target text, source tokens, term keys, term multiplicities."""
    return CandidateRow(pair_id, score, *row[:5])


def _certified(rows: list[Any], col: int) -> bool | None:
    """The preselection's ``certified`` column (the same on every row); None when no pair
    matched, which the statement cannot tell apart from a short uncertified pool."""
    return bool(rows[0][col]) if rows else None


@cache
def _tokenizer_13a() -> Any:
    """sacreBLEU's 13a tokenizer, imported on first use (sacrebleu takes ~0.25 s to import)."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def _tokens_13a(text: str) -> list[str]:
    """A sentence's tokens as Agrawal et al.'s R-BM25 reads it: 13a, after rstrip."""
    return _tokenizer_13a()(text.rstrip()).split()


class _Parsed(tuple):
    """A sentence's (Moses tokens, terms) from :meth:`Selector.analyze_batch`, with the
    scheme that parsed it: an analysis made before a reanalysis is not used after it."""

    scheme: Scheme

    def __new__(cls, value: tuple[list[str], dict[str, int]], scheme: Scheme) -> _Parsed:
        parsed = super().__new__(cls, value)
        parsed.scheme = scheme
        return parsed


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


__all__ = ["Selector", "SelectionResult", "SelectionError", "Bm25Params", "METHODS"]
