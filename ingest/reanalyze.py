"""``scoi reanalyze``: move stored sentences to the current analysis scheme.

It also adds trees to sentences stored without (``scoi ingest --no-trees``, or their
language had no parser at ingest: scheme ``none``) once a parser is installed or named with ``--parser``.
Sentences stored before migration 0007 have trees built over their Moses tokens
(scheme 'moses'); SCOI's authors parse the stripped sentence with the pipeline's own
tokenizer (scoi.analysis), and the selector refuses a language whose sentences are not
all on one current scheme. This re-parses exactly the sentences whose parser row is not
the current scheme of their language (installed pipeline, its version, 'spacy' tree
tokens) and rewrites what the tree determines: ``parser_id``, ``term_keys``,
``term_mults`` and the ``sentence_term`` rows. Tokens, the BM25 index and pairs do not
depend on the tree and are not touched.

Parsing reuses ingest's fork-server workers and batch runner (ingest/workers.py); each batch is written in one
transaction under the ingest lock, so ``kill -9`` loses at most the batches in flight
and a rerun continues with what is left. Concurrent runs never write a sentence twice
(``move_sentences`` only moves rows not already on the new parser row).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import psycopg

from ingest.batching import PendingTasks
from ingest.pipeline import scheme_parser
from ingest.workers import BatchRunner, Parsed, ParseTask, count_repaired, repaired_notes
from ingest.rows import ParsedSentence
from ingest.terms import TermResolver, copy_sentence_terms, sentence_term_rows, term_arrays
from ingest.writer import lock_writes
from scoi.analysis import Analysis
from scoi.db import connect
from scoi.db.literals import int_array, text_array
from scoi.db.queries import load
from scoi.parsers import ParserChoice, ParserNotAvailable, Scheme, choose_parser

RSQL = load("reanalyze")
DEFAULT_BATCH = 512  # sentences per transaction (and per parse task)


class ReanalyzeError(RuntimeError):
    """A run-level problem (unknown language, no parser) with a message for the user."""


@dataclass
class ReanalyzeOptions:
    langs: list[str] = field(default_factory=list)  # empty: every language with such sentences
    workers: int = 1
    batch_size: int = DEFAULT_BATCH
    parsers: dict[str, str] = field(default_factory=dict)  # lang -> pipeline override


@dataclass
class ReanalyzeSummary:
    schemes: dict[str, str] = field(default_factory=dict)  # lang -> scheme its sentences are moved to
    todo: dict[str, int] = field(default_factory=dict)     # lang -> sentences left to move at the start
    reanalyzed: int = 0  # sentences this run moved
    skipped: int = 0     # sentences another run moved first
    batches: int = 0
    seconds: float = 0.0
    parse_seconds: float = 0.0  # summed over workers
    parse_cpu_seconds: float = 0.0   # the workers' CPU time on it
    parser_cpu_seconds: float = 0.0  # of which in the parser itself
    write_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    # lang -> sentences whose parse was not a tree and was made one (docs/languages.md, "Trees")
    repaired_trees: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        d = asdict(self)
        for key in ("seconds", "parse_seconds", "parse_cpu_seconds", "parser_cpu_seconds", "write_seconds"):
            d[key] = round(d[key], 3)
        return json.dumps(d, ensure_ascii=False)


@dataclass
class _Plan:
    """One language's work: the scheme to move to and the parser rows to move from."""

    lang: str
    choice: ParserChoice
    old: list[int]  # parser ids whose sentences must be re-analysed
    ids: list[int] = field(default_factory=list)


def plan(conn: psycopg.Connection, opts: ReanalyzeOptions) -> tuple[list[_Plan], list[str]]:
    """The languages to re-analyse (with their old parser rows) and notes for the user.

    Reads only the parser rows in use (index probes) and the installed pipelines' meta
    files: no spaCy import, no write, so a run with nothing to do returns at once.
    """
    in_use: dict[str, list[tuple[int, Scheme]]] = {}
    for lang, pid, name, version, tree_tokens in conn.execute(RSQL["schemes_in_use"]):
        in_use.setdefault(lang, []).append((pid, Scheme(name, version, tree_tokens)))
    conn.commit()
    wanted = [lang.lower() for lang in opts.langs] or sorted(in_use)
    plans, notes = [], []
    for lang in dict.fromkeys(wanted):
        rows = in_use.get(lang)
        if not rows:
            notes.append(f"no {lang} sentences are stored")
            continue
        try:
            choice = choose_parser(lang, opts.parsers.get(lang))
        except ParserNotAvailable as e:
            if not opts.langs and all(s.tree_tokens != "moses" for _, s in rows):
                notes.append(f"{lang}: left on {', '.join(str(s) for _, s in rows)} ({e})")
                continue
            raise
        if choice.note:
            notes.append(choice.note)
        old = [pid for pid, scheme in rows if scheme != choice.scheme]
        if old:
            plans.append(_Plan(lang, choice, old))
    return plans, notes


def reanalyze(opts: ReanalyzeOptions, url: str, *, progress: Callable[[int], None] | None = None,
              on_start: Callable[[int], None] | None = None) -> ReanalyzeSummary:
    """Re-analyse the sentences of ``opts.langs`` (default: all) not on the current scheme."""
    if opts.batch_size < 1:
        raise ReanalyzeError("--batch-size must be at least 1")
    started = time.perf_counter()
    summary = ReanalyzeSummary()
    conn = connect(url)
    try:
        plans, summary.notes = plan(conn, opts)
        for p in plans:
            p.ids = [r[0] for r in conn.execute(RSQL["sentences_of_parsers"], {"parser_ids": p.old})]
        conn.commit()
        plans = [p for p in plans if p.ids]
        for p in plans:
            summary.todo[p.lang] = len(p.ids)
            summary.schemes[p.lang] = str(p.choice.scheme)
        if not plans:
            summary.seconds = time.perf_counter() - started
            return summary
        if on_start:
            on_start(sum(len(p.ids) for p in plans))
        with conn.transaction():
            lock_writes(conn)
            labels = {p.lang: scheme_parser(conn, p.lang, p.choice) for p in plans}
        resolver = TermResolver(conn, {lang: reg.parser_id for lang, reg in labels.items()}, labels)
        with connect(url, autocommit=True) as reader:
            _ReanalyzeBatches(opts, reader, conn, plans, resolver, summary, progress).run()
        summary.notes += repaired_notes(summary.repaired_trees, {p.lang: p.choice.name for p in plans})
        conn.autocommit = True
        conn.execute(RSQL["analyze_after_reanalyze"])
    finally:
        conn.close()
    summary.seconds = time.perf_counter() - started
    return summary


class _ReanalyzeBatches(BatchRunner):
    """Parse the batches in worker processes (texts read as they are needed) and write
    each one, in order, as its parse arrives (one task per batch)."""

    def __init__(self, opts: ReanalyzeOptions, reader: psycopg.Connection, conn: psycopg.Connection,
                 plans: list[_Plan], resolver: TermResolver, summary: ReanalyzeSummary,
                 progress: Callable[[int], None] | None) -> None:
        # Bounds memory, keeps workers busy.
        super().__init__(opts.workers, {p.lang: p.choice.name for p in plans}, max(2, 2 * opts.workers + 1))
        self.batch_size = opts.batch_size
        self.reader, self.conn = reader, conn  # reader: autocommit, reads texts in the feeder thread
        self.plans, self.resolver, self.summary, self.progress = plans, resolver, summary, progress
        self.pending: PendingTasks[tuple[str, list[int], int]] = PendingTasks()  # no -> (lang, ids to move, planned)

    def tasks(self) -> Iterator[ParseTask]:
        no = 0
        for p in self.plans:
            pid = self.resolver.parsers[p.lang]
            for start in range(0, len(p.ids), self.batch_size):
                if not self.reserve():
                    return
                planned = p.ids[start:start + self.batch_size]
                rows = self.reader.execute(RSQL["texts_to_reanalyze"],
                                           {"ids": int_array(planned), "parser_id": pid}).fetchall()
                self.pending.add(no, (p.lang, [r[0] for r in rows], len(planned)))
                yield ParseTask(no, True, {p.lang: [r[1] for r in rows]})
                no += 1

    def handle(self, result: Parsed) -> None:
        lang, ids, planned = self.pending.take(result.no)
        s = self.summary
        s.parse_seconds += result.seconds
        s.parse_cpu_seconds += result.cpu_seconds
        s.parser_cpu_seconds += result.parser_cpu_seconds
        t0 = time.perf_counter()
        moved = write_batch(self.conn, self.resolver, lang, ids, result.analyses[lang])
        s.write_seconds += time.perf_counter() - t0
        s.reanalyzed += moved
        if moved:  # a batch another run moved in part still counts whole (rare: concurrent runs)
            count_repaired(s.repaired_trees, result.analyses)
        s.skipped += planned - moved
        s.batches += 1
        self.done()
        if self.progress:
            self.progress(planned)


def write_batch(conn: psycopg.Connection, resolver: TermResolver, lang: str, ids: list[int],
                analyses: list[Analysis]) -> int:
    """Move one batch of sentences to ``resolver``'s parser row of ``lang``, in one
    transaction under the ingest lock; returns how many this call moved."""
    if not ids:
        return 0
    pid = resolver.parsers[lang]
    arrays = [term_arrays(a.terms) for a in analyses]
    with conn.transaction():
        cur = conn.cursor()
        lock_writes(cur)
        term_ids = resolver.resolve(cur, [ParsedSentence(lang, "", b"", a) for a in analyses])
        moved = [r[0] for r in cur.execute(RSQL["move_sentences"], {
            "parser_id": pid, "ids": int_array(ids), "keys": text_array([k for k, _ in arrays]),
            "mults": text_array([m for _, m in arrays])}).fetchall()]
        if moved:
            cur.execute(RSQL["delete_sentence_terms"], {"ids": int_array(moved)})
            terms = dict(zip(ids, (a.terms for a in analyses)))
            copy_sentence_terms(cur, itertools.chain.from_iterable(
                sentence_term_rows(sid, pid, terms[sid], term_ids) for sid in moved))
    resolver.committed(term_ids)
    return len(moved)


__all__ = ["ReanalyzeError", "ReanalyzeOptions", "ReanalyzeSummary", "plan", "reanalyze", "write_batch"]
