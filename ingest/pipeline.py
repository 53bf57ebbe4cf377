"""The ingest pipeline: validate, parse in parallel, write batches, summarise.

Flow (data only moves forward):
  1. a validation pass over the whole input (cheap, no parsing): bad rows stop the run
     before anything is written, or with ``skip_bad`` are listed and skipped;
  2. batches of pairs (one transaction each; the last one written task by task), cut into
     parse tasks; sentences already in the database are not parsed again;
  3. worker processes, forked from a fork server that loaded the parsers once, parse
     the tasks (word tokens; the parser over the stripped texts for the trees, for each
     language that has a parser: the others are stored without trees)
     while the main process writes the previous batch with COPY (ingest/workers.py runs
     them; ingest/writer.py writes, ingest/runs.py keeps the run's row; ingest/options.py holds the
     run's options and summary, ingest/batching.py cuts batches into parse tasks).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import psycopg

from ingest import runs
from ingest.batching import TASKS_PER_BATCH, PendingTasks, batches, split_batch, with_last
from ingest.input_files import read_once
from ingest.options import IngestError, IngestOptions, IngestSummary, Rejected, on_conflict_default
from ingest.readers import detect_format, read_records
from ingest.records import InputError, Record
from ingest.rows import PairRow, ParsedSentence, sha
from ingest.terms import LabelRegistry
from ingest.workers import BatchRunner, Parsed, ParseTask, count_repaired, repaired_notes
from ingest.writer import ON_CONFLICT, BatchWriter, lock_writes, stored_sentences
from scoi.analysis import Analysis, word_tokenizer
from scoi.db import connect
from scoi.parsers import ParserChoice, choose_parser, parser_labels, without_trees

if TYPE_CHECKING:
    from scoi.embedding.embedder import Embedder


def validate(files: list[str], fmt: str, src: str, tgt: str, skip_bad: bool,
             header: bool | None = None, tmx_keep_codes: bool = False
             ) -> tuple[int, list[Rejected], list[str]]:
    """Read everything once; raise on the first bad row unless ``skip_bad``, and when
    no pair is left to ingest (an empty file, or only bad rows): nothing is written.
    Also returns what the run must say about good rows (TMX variants it did not use)."""
    good, bad = 0, []
    noted: list[Record] = []
    for rec in read_records(files, fmt, src_lang=src, tgt_lang=tgt, header=header, tmx_keep_codes=tmx_keep_codes):
        if rec.problem:
            if not skip_bad:
                raise InputError(rec.file, rec.line, rec.problem + " (use --skip-bad to skip such rows)")
            bad.append(Rejected(rec.file, rec.line, rec.problem))
        else:
            good += 1
            if rec.note:
                noted.append(rec)
    if not good:
        what = (f"all {len(bad)} rows are bad (first: {bad[0].file}:{bad[0].line}: {bad[0].reason})" if bad
                else "it holds no pairs (empty file)")
        raise InputError(files[0], None, f"nothing to ingest: {what}; no corpus was created or changed")
    warnings = []
    if noted:
        first = noted[0]
        warnings.append(f"{len(noted)} <tu> had several variants of a language and one was used "
                        f"(first: {first.file}:{first.line}: {first.note}); "
                        "--src/--tgt with the region (e.g. fr-CA) picks that variant")
    return good, bad, warnings


def ingest_files(opts: IngestOptions, url: str, *, progress: Callable[[int], None] | None = None,
                 on_start: Callable[[int], None] | None = None) -> IngestSummary:
    """Ingest ``opts.files`` into the database at ``url`` (libpq URI, already migrated).
    The files are read twice (validation, then writing): a pipe or FIFO is copied once to
    a temporary file first (ingest.input_files.read_once)."""
    from scoi.core.names import BadName, check_language_code, check_name

    try:  # names and codes are printed by every listing: refused before anything is read or written
        check_language_code(opts.src, "--src")
        check_language_code(opts.tgt, "--tgt")
        check_name("corpus", opts.corpus or _default_corpus_name(opts.files))
    except BadName as e:
        raise IngestError(str(e)) from None
    src, tgt = opts.src.lower(), opts.tgt.lower()
    if src == tgt:
        raise IngestError(f"source and target language are both {src!r}")
    if opts.on_conflict is not None and opts.on_conflict not in ON_CONFLICT:
        raise IngestError(f"--on-conflict {opts.on_conflict!r}: expected one of {', '.join(ON_CONFLICT)}")
    fmt = opts.fmt or detect_format(opts.files)
    choices = _parser_choices(opts, src, tgt)
    for lang in (src, tgt):
        word_tokenizer(lang)  # a language without spaces needs its tokenizer: fail before anything is written
    try:
        with read_once(opts.files) as files:
            return _ingest(replace(opts, files=files), url, src, tgt, fmt, choices, progress, on_start)
    except psycopg.OperationalError as e:  # the server went away, the disk filled up, ...
        raise IngestError(database_failure(e)) from None


def _parser_choices(opts: IngestOptions, src: str, tgt: str) -> dict[str, ParserChoice]:
    """The parser of each side. A side without a parser is stored without trees (a target
    never needs them; a source serves the methods that read none), unless --require-parser;
    with --no-trees both sides are, whatever is installed."""
    if opts.no_trees:
        if opts.require_parser or opts.parsers:
            what = "--require-parser" if opts.require_parser else "--parser"
            raise IngestError(f"--no-trees stores no trees, which contradicts {what}; drop one of them "
                              "(`scoi reanalyze --lang L --parser L=NAME` adds the trees later)")
        return {lang: without_trees(lang) for lang in (src, tgt)}
    return {lang: choose_parser(lang, opts.parsers.get(lang), required=opts.require_parser) for lang in (src, tgt)}


def database_failure(e: psycopg.OperationalError) -> str:
    """One line for a database failure mid-ingest (libpq's messages span lines, and a
    traceback helps no one): the cause, and what is left. Each batch is one transaction,
    so the pairs of the batches committed before are stored and consistent."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    cause = lines[0] if lines else type(e).__name__
    hint = " (free space on the database server's disk first)" if isinstance(e, psycopg.errors.DiskFull) else ""
    return (f"the database failed during the ingest: {cause}; the batches committed before are kept, "
            f"nothing of the failed one is; rerun the same command to continue{hint}")


def _ingest(opts: IngestOptions, url: str, src: str, tgt: str, fmt: str, choices: dict[str, ParserChoice],
            progress: Callable[[int], None] | None, on_start: Callable[[int], None] | None) -> IngestSummary:
    total, rejected, warnings = validate(opts.files, fmt, src, tgt, opts.skip_bad, opts.header, opts.tmx_keep_codes)
    embedder = _embedder(opts.embed)  # a model that cannot load fails before anything is written
    if on_start:
        on_start(total + len(rejected))
    corpus_name = opts.corpus or _default_corpus_name(opts.files)
    started = time.perf_counter()

    a_lang, b_lang = sorted((src, tgt))
    conn = connect(url)
    try:
        corpus_id, parsers, labels = _prepare(conn, corpus_name, src, tgt, choices)
        run_id = runs.start_run(
            conn, corpus_id=corpus_id, files=[os.path.abspath(f) for f in opts.files], fmt=fmt,
            workers=opts.workers, parsers=json.dumps({k: str(c.scheme) for k, c in choices.items()}),
            host=socket.gethostname(), pid=os.getpid())
        conn.commit()
        summary = IngestSummary(corpus=corpus_name, run_id=run_id,
                                parsers={k: str(c.scheme) for k, c in choices.items()},
                                notes=[c.note for c in choices.values() if c.note],
                                rejected_rows=rejected, rejected=len(rejected), warnings=warnings,
                                on_conflict=opts.on_conflict or on_conflict_default(fmt))
        with conn.transaction():
            for r in rejected:
                runs.record_rejected(conn, run_id, r.file, r.line, r.reason)
            runs.add_run_counts(conn, run_id, read=0, inserted=0, duplicates=0, rejected=len(rejected))
        writer = BatchWriter(conn, corpus_id=corpus_id, run_id=run_id, a_lang=a_lang, b_lang=b_lang,
                             parsers=parsers, labels=labels, on_conflict=summary.on_conflict, src_lang=src)
        try:
            with connect(url, autocommit=True) as lookup:
                _IngestBatches(opts, fmt, src, tgt, lookup, writer, summary,
                               {k: c.name for k, c in choices.items()}, progress).run()
            writer.finish()
        except BaseException as exc:
            _record_failure(conn, run_id, exc)
            raise
        summary.notes += repaired_notes(summary.repaired_trees, {k: c.name for k, c in choices.items()})
        runs.finish_run(conn, run_id, "done")
        conn.commit()
        summary.replaced, summary.kept_out = writer.replaced.pairs, writer.kept_out
        summary.removed_sentences = writer.replaced.sentences
        if summary.inserted or summary.replaced:
            # Bulk load, then VACUUM ANALYZE (pgvector-python's recipe): fresh statistics for
            # the planner everywhere, and the posting blocks' rewritten row versions freed
            # (the rest is left to autovacuum: less time at the end of a run).
            conn.autocommit = True
            runs.vacuum_analyze(conn)
    finally:
        conn.close()
    if embedder is not None:
        from scoi.embedding.embeddings import embed_missing

        summary.embedder = embedder.name
        summary.embedded = embed_missing(url, embedder, langs=[src, tgt]).embedded
    summary.seconds = time.perf_counter() - started
    return summary


def _record_failure(conn: psycopg.Connection, run_id: int, exc: BaseException) -> None:
    """Mark the run failed with its error. On a lost connection (or a server that cannot
    write) this is left undone: the run's session lock is gone with the connection, so
    ``scoi ingest-runs`` reads the run as dead, and the original error is the one to report."""
    try:
        conn.rollback()
        runs.finish_run(conn, run_id, "failed", str(exc)[:2000])
        conn.commit()
    except psycopg.OperationalError:
        pass


def _embedder(model: str | None) -> Embedder | None:
    """The ``--embed`` model, loaded (raises scoi.embedding.embedder.EmbedderError), or None."""
    if model is None:
        return None
    from scoi.embedding.embedder import Embedder

    return Embedder(model)


def _default_corpus_name(files: list[str]) -> str:
    name = os.path.basename(files[0])
    for suffix in (".gz", ".tsv", ".txt", ".tmx", ".jsonl", ".json", ".xlf", ".xliff", ".po"):
        name = name.removesuffix(suffix)
    if len(files) == 2:  # europarl-v7.fr-en.fr -> europarl-v7.fr-en
        name = name.rsplit(".", 1)[0] if "." in name else name
    return name


def _prepare(conn: psycopg.Connection, corpus_name: str, src: str, tgt: str,
             choices: dict[str, ParserChoice]) -> tuple[int, dict[str, int], dict[str, LabelRegistry]]:
    with conn.transaction():
        lock_writes(conn)
        corpus_id, c_src, c_tgt = runs.get_or_create_corpus(conn, corpus_name, src, tgt)
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
    pid = runs.get_or_create_parser(conn, lang, choice.name, choice.version, choice.scheme.tree_tokens)
    registry = LabelRegistry(conn, pid, parser_labels(choice.name))
    registry.flush(conn)
    return registry


class _IngestBatches(BatchRunner):
    """Parse batches in worker processes and write them in order.

    A batch of ``batch_size`` pairs is parsed as TASKS_PER_BATCH tasks and written in one
    transaction when its last task is parsed; the last batch is written task by task:
    nothing is left to parse while it is written, so a short last write is a shorter run.
    """

    def __init__(self, opts: IngestOptions, fmt: str, src: str, tgt: str, lookup: psycopg.Connection,
                 writer: BatchWriter, summary: IngestSummary, pipelines: dict[str, str],
                 progress: Callable[[int], None] | None) -> None:
        # Bounds memory (constant in file size) while keeping every worker busy.
        super().__init__(opts.workers, pipelines, max(2, 2 * opts.workers + 1) + TASKS_PER_BATCH - 1)
        self.opts, self.fmt, self.src, self.tgt = opts, fmt, src, tgt
        self.lookup = lookup  # reads which sentences are stored (autocommit)
        self.writer, self.summary, self.progress = writer, summary, progress
        # task no -> (its records, lang -> (text, sha) to parse), until its batch is written
        self.pending: PendingTasks[tuple[list[Record], dict[str, list[tuple[str, bytes]]]]] = PendingTasks()
        self.group: list[tuple[int, dict[str, list[Analysis]]]] = []  # parsed tasks of the current batch

    def tasks(self) -> Iterator[ParseTask]:
        records = read_records(self.opts.files, self.fmt, src_lang=self.src, tgt_lang=self.tgt,
                               header=self.opts.header, tmx_keep_codes=self.opts.tmx_keep_codes)
        no = 0
        for batch, last in with_last(batches(records, self.opts.batch_size)):
            parts = split_batch(batch, TASKS_PER_BATCH)
            for i, part in enumerate(parts):
                if not self.reserve():
                    return
                todo = {lang: self._to_parse(lang, texts)
                        for lang, texts in ((self.src, [r.src for r in part]), (self.tgt, [r.tgt for r in part]))}
                self.pending.add(no, (part, todo))
                yield ParseTask(no, last or i == len(parts) - 1,
                                {lang: [t for t, _ in items] for lang, items in todo.items()})
                no += 1

    def _to_parse(self, lang: str, texts: list[str]) -> list[tuple[str, bytes]]:
        """(text, sha) of the distinct ``texts`` not stored yet."""
        uniq = {sha(t): t for t in texts}
        have = stored_sentences(self.lookup, lang, list(uniq))
        return [(t, h) for h, t in uniq.items() if h not in have]

    def handle(self, result: Parsed) -> None:
        self.summary.parse_seconds += result.seconds
        self.summary.parse_cpu_seconds += result.cpu_seconds
        self.summary.parser_cpu_seconds += result.parser_cpu_seconds
        self.group.append((result.no, result.analyses))
        if result.last:
            self.write_batch()

    def write_batch(self) -> None:
        """Write the parsed tasks of one batch in one transaction."""
        t0 = time.perf_counter()
        sentences: list[ParsedSentence] = []
        pairs: list[PairRow] = []
        repaired: dict[str, int] = {}
        for no, analyses in self.group:
            part, todo = self.pending.take(no)
            count_repaired(repaired, analyses)
            sentences.extend(ParsedSentence(lang, text, h, a)
                             for lang, items in todo.items() for (text, h), a in zip(items, analyses[lang]))
            for r in part:
                a_text, b_text = (r.src, r.tgt) if self.src == self.writer.a_lang else (r.tgt, r.src)
                pairs.append(PairRow(r.line, sha(a_text), sha(b_text), json.dumps(r.meta or {}, ensure_ascii=False)))
        # the later tasks, read already, skip the sentences that were stored then: a
        # replace must not delete those under them
        relied_on = ({(lang, sha(text)) for part, _ in self.pending.rest() for r in part
                      for lang, text in ((self.src, r.src), (self.tgt, r.tgt))}
                     if self.writer.on_conflict != "add" else None)
        inserted = self.writer.write(sentences, pairs, read=len(pairs), rejected=0, relied_on=relied_on)
        s = self.summary
        s.read += len(pairs)
        s.inserted += inserted
        s.duplicates += len(pairs) - inserted - (self.writer.kept_out - s.kept_out)
        s.kept_out = self.writer.kept_out
        s.parsed_sentences += len(sentences)
        for lang, n in repaired.items():  # counted once the batch is committed
            s.repaired_trees[lang] = s.repaired_trees.get(lang, 0) + n
        s.write_seconds += time.perf_counter() - t0
        self.done(len(self.group))
        self.group.clear()
        if self.progress:
            self.progress(len(pairs))
