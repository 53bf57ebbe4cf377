"""A worker's batch pipeline: prepare (select examples, render prompts), generate (one
backend call per job), and store (results, errors and selections in one transaction,
then the outputs delivered to their destinations). The worker (scoi.jobs.worker) mixes
this in and supplies the connection, caches, stats and claim; the items it passes along
are scoi.jobs.batch_items's."""

from __future__ import annotations

import time
from itertools import groupby
from typing import Any, Callable

import psycopg

from scoi import glossary
from scoi.core import defaults
from scoi.core.methods import method
from scoi.core.prompt import Example, stop_markers
from scoi.ctq import one_shot_example
from scoi.jobs import store
from scoi.jobs.batch_items import (REFUSED_VALUE, Claimed, Failed, GenerateResult, Generated, PrepareResult, Prepared,
                                   error_text, fit_context, generated_output, render_item_prompt, reused_output)
from scoi.jobs.caches import WorkerCaches
from scoi.jobs.destinations import deliver
from scoi.jobs.spec import Job
from scoi.jobs.worker_stats import WorkerStats
from scoi.selection.recording import record_selections


class BatchPipeline:
    """The prepare / generate / store steps of a claimed batch (mixed into Worker)."""

    url: str
    id: str
    log: Callable[[str], None]
    conn: psycopg.Connection
    caches: WorkerCaches
    stats: WorkerStats
    claim_ms: float
    _last_write_ms: float

    def process(self, items: list[Claimed]) -> None:
        """Translate one claimed batch (per job: prepare, generate) and store every result
        or error in one transaction."""
        t0 = time.perf_counter()
        self.finish(items, self.prepare_batch(items), t0)

    def prepare_batch(self, items: list[Claimed]) -> list[PrepareResult]:
        """Step 1 for each job's items of the batch (items come sorted by job)."""
        return [self.prepare(job_id, list(group)) for job_id, group in groupby(items, key=lambda c: c.job_id)]

    def finish(self, items: list[Claimed], preps: list[PrepareResult], t0: float, not_overhead: float = 0.0) -> None:
        """Steps 2 and 3: generate each job's prepared items, store the batch. ``t0`` starts
        the batch's overhead clock; ``not_overhead`` (s) is time in between that belongs to
        another batch (the next one's claim)."""
        done, failed, not_overhead_s = self.generate_batch(preps)
        self.store(items, done, failed, t0, not_overhead_s + not_overhead)

    def generate_batch(self, preps: list[PrepareResult]) -> tuple[list[Generated], list[Failed], float]:
        """Step 2 for each job's prepared items: the answers, the failures, and the seconds
        that are not overhead (generation, and one-off loading of models)."""
        setup0 = self.caches.setup_seconds
        gen_wall = 0.0
        done: list[Generated] = []
        failed: list[Failed] = []
        for prep in preps:
            failed += prep.failed
            reused = [reused_output(p) for p in prep.prepared if p.item.reuse is not None]
            if reused and prep.job is not None and prep.job.params.get("glossary"):
                reused, unchecked = self._term_checked(prep.job, reused)
                failed += unchecked
            done += reused
            to_generate = [p for p in prep.prepared if p.item.reuse is None]
            if not to_generate:
                continue
            gen = self.generate(prep.job, to_generate)
            done += gen.done
            failed += gen.failed
            gen_wall += gen.seconds
        return done, failed, gen_wall + self.caches.setup_seconds - setup0

    def _term_checked(self, job: Job, reused: list[Generated]) -> tuple[list[Generated], list[Failed]]:
        """Reused outputs checked for the glossary's required target terms, as the model's
        are (docs/glossary.md): the memory's translation may lack one. A glossary that
        cannot be read fails the items, as it fails the model's in prepare."""
        try:
            entries = glossary.cached_entries(self.url, job.params["glossary"], job.src_lang, job.tgt_lang)
            terms = glossary.match(entries, [g.prepared.item.source for g in reused], job.src_lang)
            checks = glossary.term_checks(terms, [g.output for g in reused], job.tgt_lang)
        except Exception as e:  # noqa: BLE001 - stored with each item
            return [], [Failed(g.prepared.item, error_text(e), g.prepared) for g in reused]
        return [g._replace(term_check=c) for g, c in zip(reused, checks)], []

    def prepare(self, job_id: int, group: list[Claimed]) -> PrepareResult:
        """Select each item's examples and render its prompt. The group's sentences are
        parsed in one spaCy call (about twice as fast per sentence as one call each)."""
        # Exact matches of the memory (found at claim): no selection, no prompt, no model.
        reused = [Prepared(it, None, None, None, 0.0) for it in group if it.reuse is not None]
        lookup_failed = [Failed(it, it.reuse_error) for it in group if it.reuse_error is not None]
        group = [it for it in group if it.reuse is None and it.reuse_error is None]
        try:
            job = self.caches.job(job_id)
            wants_examples = method(job.method).examples and job.k > 0
            selector, sel_key = self.caches.selector(job) if wants_examples and group else (None, None)
        except Exception as e:  # noqa: BLE001 - the error is stored with each item
            return PrepareResult(None, reused, lookup_failed + [Failed(it, error_text(e)) for it in group])
        if not group:
            return PrepareResult(job, reused, lookup_failed)
        shared_ms = 0.0  # the batch's parse, split over its items
        analyses: dict[str, Any] = {}
        if selector is not None:
            ts = time.perf_counter()
            unique = list(dict.fromkeys(it.source for it in group if it.source))
            try:
                # parsed in one spaCy call, their pools preselected in a few round trips
                analyses = dict(zip(unique, selector.warm(unique, job.method)))
            except Exception:  # noqa: BLE001 - each item is then parsed (and fails) on its own
                pass
            shared_ms = (time.perf_counter() - ts) * 1000 / len(group)
            self.stats.add_phase("parse", shared_ms * len(group))
        prepared: list[Prepared] = reused
        failed: list[Failed] = lookup_failed
        for it in group:
            try:
                if wants_examples and selector is None:  # dropped after a database error below
                    selector, sel_key = self.caches.selector(job)
                prepared.append(self._prepare_item(job, selector, it, analyses.get(it.source), shared_ms))
            except Exception as e:  # noqa: BLE001
                if isinstance(e, psycopg.Error) and selector is not None:
                    # A broken connection: the next item gets a new selector (never a
                    # zero-shot prompt in a few-shot job).
                    self.caches.drop_selector(sel_key)
                    selector = None
                failed.append(Failed(it, error_text(e)))
        return PrepareResult(job, prepared, failed)

    def _prepare_item(self, job: Job, selector: Any, item: Claimed, analysis: Any, shared_ms: float) -> Prepared:
        if not item.source.strip():  # passed through by generate(): no selection, no prompt
            return Prepared(item, None, None, None, 0.0)
        ts = time.perf_counter()
        res, examples = None, []
        if selector is not None and job.params.get("ctq_train"):  # ---- CTQ Scorer training (scoi.ctq_train):
            examples = one_shot_example(selector.reads.primary, item.job_id, item.idx)  # its example, fixed at submit
        elif selector is not None:
            res = selector.select(item.source, k=job.k, method=job.method, analysis=analysis)
            examples = [Example(p.src, p.tgt) for p in res.selected]
        tp = time.perf_counter()
        select_ms = (tp - ts) * 1000 + shared_ms
        terms = None
        if job.params.get("glossary"):  # docs/glossary.md: the terms found go into the prompt
            entries = glossary.cached_entries(self.url, job.params["glossary"], job.src_lang, job.tgt_lang)
            terms = glossary.match(entries, [item.source], job.src_lang)[0]
        prompt = render_item_prompt(job, item.masked or item.source, examples, terms)
        self.stats.add_phase("select", (tp - ts) * 1000)
        self.stats.add_phase("prompt", (time.perf_counter() - tp) * 1000)
        return Prepared(item, res, selector.query.labels if selector is not None else None, prompt, select_ms,
                        examples=examples, examples_used=len(examples), terms=terms)

    def generate(self, job: Job, prepared: list[Prepared]) -> GenerateResult:
        """One backend call for the prepared items; a failure fails them all, keeping
        their prompts. An item whose source is blank passes through without a model call:
        its output is blank too (docs/jobs.md), as submit does for blank input lines."""
        blank = [Generated(p, "", None, 0.0) for p in prepared if p.prompt is None]
        if not blank:
            return self._generate(job, prepared)
        rest = [p for p in prepared if p.prompt is not None]
        result = self._generate(job, rest) if rest else GenerateResult([], [], 0.0)
        return GenerateResult(blank + result.done, result.failed, result.seconds)

    def _generate(self, job: Job, prepared: list[Prepared]) -> GenerateResult:
        try:
            backend = self.caches.backend(job)
        except Exception as e:  # noqa: BLE001
            return GenerateResult([], [Failed(p.item, error_text(e), p) for p in prepared], 0.0)
        max_new_tokens = int(job.params.get("max_new_tokens", defaults.MAX_NEW_TOKENS))
        prepared, too_long = fit_context(job, backend, prepared, max_new_tokens)
        if not prepared:
            return GenerateResult([], too_long, 0.0)
        g0 = time.perf_counter()
        try:
            gens = backend.generate([p.prompt for p in prepared], max_new_tokens=max_new_tokens,
                                    stop=stop_markers(job.template))
            if len(gens) != len(prepared):
                raise RuntimeError(f"backend returned {len(gens)} generations for {len(prepared)} prompts")
        except Exception as e:  # noqa: BLE001
            return GenerateResult([], [Failed(p.item, error_text(e), p) for p in prepared] + too_long,
                                  time.perf_counter() - g0)
        seconds = time.perf_counter() - g0
        done = [generated_output(p, g) for p, g in zip(prepared, gens)]
        if job.params.get("glossary"):  # the required target terms, checked in each output
            checks = glossary.term_checks([g.prepared.terms or [] for g in done], [g.output for g in done],
                                          job.tgt_lang)
            done = [g._replace(term_check=c) for g, c in zip(done, checks)]
        return GenerateResult(done, too_long, seconds)

    def store(self, items: list[Claimed], done: list[Generated], failed: list[Failed], t0: float,
              gen_wall: float) -> None:
        """Write the batch's results and errors in one transaction. Only rows still held
        under this worker's claim are written; the others count as lost."""
        n = len(items)
        # Per-item overhead: this batch's claim and wall time except generation (and one-off
        # loading of parsers and models), plus the previous batch's result write (this
        # batch's write cannot time itself), split evenly over the batch.
        overhead = (self.claim_ms + (time.perf_counter() - t0 - gen_wall) * 1000 + self._last_write_ms) / n
        self.claim_ms = 0.0
        w0 = time.perf_counter()
        with self.conn.transaction():  # one commit for the whole batch
            self._record_selections([g.prepared for g in done] + [f.prepared for f in failed if f.prepared])
            record_ms = (time.perf_counter() - w0) * 1000
            written, refused = self._write_done(done, overhead)
            failed = failed + refused
            written += self._write_failed(failed)
        for f in failed:
            if f.error not in self.stats.errors and len(self.stats.errors) < 5:
                self.stats.errors.append(f.error)
                self.log(f"worker {self.id}: {f.error}")
        if written < n:  # not written: cancelled meanwhile, or re-claimed by another worker
            cancelled = store.cancelled_among(self.conn, [c.job_id for c in items], [c.idx for c in items])
            self.stats.cancelled += cancelled
            self.stats.lost += n - written - cancelled
        self.deliver_outputs(items)
        self._last_write_ms = (time.perf_counter() - w0) * 1000
        self.stats.add_phase("record", record_ms)
        self.stats.add_phase("write", self._last_write_ms - record_ms)
        self.stats.overhead_ms += overhead * n
        self.stats.batches += 1

    def _write_done(self, done: list[Generated], overhead: float) -> tuple[int, list[Failed]]:
        """Store the done items: rows written, and the items whose result the database
        refused, as failures. One statement for the batch; only when PostgreSQL refuses a
        value is it written again item by item, each in a savepoint, so a refused text
        fails its own item (with the reason), never the batch or the worker."""
        if not done:
            return 0, []
        try:
            with self.conn.transaction():
                return self._complete(done, overhead), []
        except REFUSED_VALUE:
            pass
        written, refused = 0, []
        for g in done:
            try:
                with self.conn.transaction():
                    written += self._complete([g], overhead)
            except REFUSED_VALUE as e:
                refused.append(Failed(g.prepared.item, f"the output could not be stored: {error_text(e)}",
                                      g.prepared))
        return written, refused

    def _complete(self, done: list[Generated], overhead: float) -> int:
        rows = store.complete_items(self.conn, self.id, {
            "job_ids": [g.prepared.item.job_id for g in done], "idxs": [g.prepared.item.idx for g in done],
            "attempts": [g.prepared.item.attempt for g in done],
            "selection_ids": [g.prepared.selection_id for g in done],
            "prompts": [g.prepared.prompt for g in done],
            "outputs": [g.output for g in done], "raw_outputs": [g.raw_output for g in done],
            "select_ms": [round(g.prepared.select_ms, 3) for g in done],
            "generate_ms": [round(g.generate_ms, 3) for g in done],
            "overhead_ms": [round(overhead, 3)] * len(done), "warnings": [g.warning for g in done],
            # a reused or blank item had no prompt: no example count (NULL), not 0
            "examples_used": [g.prepared.examples_used if g.origin == "llm" else None for g in done],
            "qa": [None if g.qa is None else "\n".join(g.qa) for g in done],
            "origins": [g.origin for g in done],
            "origin_pair_ids": [g.origin_pair_id for g in done]})
        written = set(rows)
        checked = [g for g in done
                   if g.term_check is not None and (g.prepared.item.job_id, g.prepared.item.idx) in written]
        if checked:
            glossary.store_term_checks(self.conn, [g.prepared.item.job_id for g in checked],
                                       [g.prepared.item.idx for g in checked], [g.term_check for g in checked])
        self.stats.done += len(rows)
        self.stats.reused += sum(g.origin_pair_id is not None and (g.prepared.item.job_id, g.prepared.item.idx)
                                 in written for g in done)
        self.stats.generate_ms += sum(g.generate_ms for g in done)
        return len(rows)

    def _write_failed(self, failed: list[Failed]) -> int:
        """Record the failed attempts; rows written."""
        if not failed:
            return 0
        rows = store.fail_items(self.conn, self.id, {
            "job_ids": [f.item.job_id for f in failed],
            "idxs": [f.item.idx for f in failed], "attempts": [f.item.attempt for f in failed],
            "errors": [f.error for f in failed], "finals": [f.final for f in failed],
            "prompts": [f.prepared.prompt if f.prepared else None for f in failed],
            "selection_ids": [f.prepared.selection_id if f.prepared else None for f in failed]})
        for _, _, st in rows:
            if st == "failed":
                self.stats.failed += 1
            else:
                self.stats.requeued += 1
        return len(rows)

    def _record_selections(self, prepared: list[Prepared]) -> None:
        """Store the batch's selections in one go (inside the caller's transaction, in a
        savepoint); if that fails, each on its own savepoint, so a selection that cannot
        be stored costs only its link, never the result."""
        todo = [p for p in prepared if p.selection is not None and p.selection_id is None]
        try:
            for p, sel_id in zip(todo, record_selections(self.conn, [(p.selection, p.labels) for p in todo])):
                p.selection_id = sel_id
            return
        except psycopg.Error:
            pass
        for p in todo:
            try:
                [p.selection_id] = record_selections(self.conn, [(p.selection, p.labels)])
            except psycopg.Error as e:
                self.log(f"worker {self.id}: selection of item {p.item.idx} not recorded: {e}")

    def deliver_outputs(self, items: list[Claimed]) -> None:
        """Write the batch's new outputs to their jobs' destinations (table or file), after
        the batch committed; idempotent, and a destination's failure is kept, not raised."""
        try:
            deliver(self.conn, sorted({c.job_id for c in items}), self.url, self.log)
        except psycopg.Error as e:
            self.log(f"worker {self.id}: delivering outputs failed: {e}")



__all__ = ["BatchPipeline"]
