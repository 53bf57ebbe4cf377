"""The translation worker: claim items, select examples, prompt, generate, store.

Any number of workers, on any number of machines, share the queue through PostgreSQL
alone (scoi/db/sql/jobs.sql):

* claiming takes a batch of items with ``FOR UPDATE SKIP LOCKED``: no two workers get
  the same item and none waits for another;
* a claim is identified by (worker id, attempt number); results are written only while
  the item is still ``running`` under that claim, so a worker that was presumed dead and
  whose item was re-claimed cannot write a second output, and a repeated write is a no-op;
* each worker registers in ``job_worker`` and holds a session-level advisory lock on a
  connection of its own for its lifetime (scoi.jobs.liveness); when the process dies (kill -9, machine lost)
  PostgreSQL drops the lock with the session, and the very next claim — of any worker,
  ``--burst`` ones included — takes that worker's items (its attempt counted, so an item
  that kills every worker still ends failed after ``max_attempts``);
* a background thread refreshes ``heartbeat_at`` of the worker's items on that connection;
  a live worker's items whose heartbeat is older than a claimer's ``stall_timeout`` (the
  worker is stuck) are claimed again too, unless they have used ``max_attempts`` — then
  they end failed;
* an attempt that raises keeps its error in ``last_error`` and goes back to the queue, or
  ends ``failed`` after ``max_attempts``;
* one item never costs the batch: text PostgreSQL refuses (NUL, lone surrogates) is
  cleaned and noted in the item's ``warning``, and a value the database still refuses fails
  that item alone.

Selectors and backends are built once per worker and reused for every batch
(scoi.jobs.caches); with ``read_url`` the selectors read from that streaming replica
(scoi.db.reads), while claims, results and recorded selections stay on ``url``; with
``job_id`` they are loaded before the first claim, so no item waits locked while a model
loads. With ``prefetch`` the next batch is claimed and prepared while this one generates
(scoi.jobs.prefetch).

Per-item cost is kept low by working per batch: the batch's sentences are parsed in one
spaCy call, and the batch's selections are recorded (scoi.selection.recording) in the same
transaction that stores the results — one commit per batch, and a selection is stored
only together with the item result that used it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from itertools import groupby
from typing import Any, Callable, NamedTuple

import psycopg

from scoi import glossary
from scoi.core import defaults, inline
from scoi.core.methods import method
from scoi.core.answer import extract_answer
from scoi.core.prompt import Example, render_prompt, stop_markers
from scoi.core.prompt_fit import PromptTooLong, fit_prompt
from scoi.ctq import one_shot_example
from scoi.jobs import store
from scoi.jobs.caches import WorkerCaches
from scoi.jobs.liveness import Liveness
from scoi.jobs.prefetch import run_pipelined
from scoi.jobs.spec import Job, job_order, job_reuse, job_template, storable_text
from scoi.jobs.store import listen_for_items
from scoi.reuse import exact_matches
from scoi.selection.recording import record_selections

MAX_ERROR_CHARS = 4000
#: What writing a value PostgreSQL cannot hold raises: DataError from the server (NUL, a
#: character the database encoding lacks), UnicodeEncodeError from psycopg (a lone surrogate).
REFUSED_VALUE = (psycopg.DataError, UnicodeEncodeError)


@dataclass
class WorkerOptions:
    batch_size: int = defaults.WORKER_BATCH
    stall_timeout: float = defaults.STALL_TIMEOUT  # seconds without heartbeat before an item is re-claimed
    burst: bool = False            # exit when nothing is claimable
    job_id: int | None = None      # only this job's items
    poll_seconds: float = defaults.POLL_SECONDS  # idle wait between claims (LISTEN wakes earlier)
    heartbeat_seconds: float | None = None  # default: stall_timeout / 3, at most 10 s
    max_items: int | None = None   # stop after claiming this many (benchmarks)
    prefetch: bool = True          # claim and prepare the next batch while this one generates
    schedule_seconds: float = 10.0  # how often to run due schedules (workers without job_id only)

    def heartbeat_interval(self) -> float:
        if self.heartbeat_seconds is not None:
            return self.heartbeat_seconds
        return max(0.2, min(self.stall_timeout / 3, 10.0))


@dataclass
class WorkerStats:
    worker: str
    claimed: int = 0
    done: int = 0
    reused: int = 0        # of the done: the memory's translation of an exact match, no model call
    requeued: int = 0
    failed: int = 0
    lost: int = 0          # results not written: the claim was lost (stalled and re-claimed by another worker)
    cancelled: int = 0     # results not written: the job was cancelled while they ran
    batches: int = 0
    seconds: float = 0.0
    generate_ms: float = 0.0
    overhead_ms: float = 0.0
    retries: int = 0       # requests an HTTP backend sent again after a transient failure (server down, 5xx)
    errors: list[str] = field(default_factory=list)  # distinct error messages, first few
    #: Where the time goes, ms summed over items (claim, parse, select, prompt,
    #: prepare_wait, record, write): the benchmark's breakdown.
    phase_ms: dict[str, float] = field(default_factory=dict)

    def add_phase(self, name: str, ms: float) -> None:
        self.phase_ms[name] = self.phase_ms.get(name, 0.0) + ms

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["items_per_second"] = round(self.done / self.seconds, 3) if self.seconds else 0.0
        d["overhead_ms_per_item"] = round(self.overhead_ms / self.claimed, 3) if self.claimed else 0.0
        d["seconds"] = round(self.seconds, 3)
        d["generate_ms"] = round(self.generate_ms, 3)
        d["overhead_ms"] = round(self.overhead_ms, 3)
        d["phase_ms_per_item"] = {k: round(v / self.claimed, 3) for k, v in self.phase_ms.items()} if self.claimed else {}
        d.pop("phase_ms")
        return d


@dataclass
class Claimed:
    job_id: int
    idx: int
    source: str
    attempt: int
    masked: str | None = None  # the source with inline codes as placeholders (CAT files): the prompt's text
    #: the translation memory's exact match to insert instead of generating (scoi.reuse.Match),
    #: found at claim time when the job reuses (``--reuse exact``); or why looking it up failed
    reuse: Any = None
    reuse_error: str | None = None


@dataclass
class Prepared:
    """An item ready to generate: its selection and prompt (step 1 of a batch)."""

    item: Claimed
    selection: Any  # SelectionResult to record with the result, or None (zero-shot, reused)
    labels: Any     # the selector's LabelSpace, needed to record the selection
    #: None: nothing goes to the model (a blank source passes through; an exact match
    #: reuses its stored translation)
    prompt: str | None
    select_ms: float
    selection_id: int | None = None
    examples: list[Example] = field(default_factory=list)  # selection order, best first
    examples_used: int = 0  # how many of them the prompt holds (fewer when fitted to the context)
    terms: Any = None  # the glossary matches of the source (scoi.core.glossary.Match), None without a glossary


class Generated(NamedTuple):
    """An item's answer (step 2): the extracted output, the raw text, generation time, and
    what was cleaned from the text to store it (``job_item.warning``)."""

    prepared: Prepared
    output: str
    raw_output: str | None
    generate_ms: float
    warning: str | None = None
    qa: list[str] | None = None  # what the output broke of the source's inline codes (None: it has none)
    term_check: list[dict] | None = None  # [{src, tgt, found}] for a job with a glossary

    @property
    def origin_pair_id(self) -> int | None:
        """The pair whose stored translation is the output (``origin`` tm), or None (llm)."""
        return self.prepared.item.reuse.pair_id if self.prepared.item.reuse is not None else None


class Failed(NamedTuple):
    """An item whose attempt failed, with the error kept for ``last_error`` (and its
    prompt, if it got that far)."""

    item: Claimed
    error: str
    prepared: Prepared | None = None
    final: bool = False  # no retry can help (the prompt cannot fit the model): failed now


class PrepareResult(NamedTuple):
    job: Job | None
    prepared: list[Prepared]
    failed: list[Failed]


class GenerateResult(NamedTuple):
    done: list[Generated]
    failed: list[Failed]
    seconds: float  # wall time of the backend call (0 when the backend could not load)


def _error_text(exc: BaseException) -> str:
    """The error for ``last_error``: cut, and storable (a message may quote model output)."""
    text = storable_text(f"{type(exc).__name__}: {exc}")[0]
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + " ..."


def _generated(prepared: Prepared, gen: Any) -> Generated:
    """A backend's Generation as the database can store it: the raw text cleaned of what
    PostgreSQL refuses (storable_text), the answer extracted from it, the change noted."""
    raw, note = storable_text(gen.text)
    warning = f"output cleaned: {note}" if note else None
    answer = extract_answer(raw)
    masked = prepared.item.masked
    return Generated(prepared, answer, raw, gen.seconds * 1000, warning,
                     inline.check(masked, answer) if masked is not None else None)


def _reused(prepared: Prepared) -> Generated:
    """An exact match's stored translation as the item's output, QA-checked against a CAT
    item's masked source like a model's answer (it has no codes: find_reuse)."""
    target, masked = prepared.item.reuse.target, prepared.item.masked
    return Generated(prepared, target, None, 0.0, None, inline.check(masked, target) if masked is not None else None)


def _render(job: Job, source: str, examples: list[Example], terms: Any = None) -> str:
    """The item's prompt with ``examples`` (selection order) and the glossary ``terms``
    found in its source, as the job asks for it: its template is a stored text, never a
    file the job names. A prompt PostgreSQL cannot store fails this item, before any write."""
    template, template_text = job_template(job)
    prompt = render_prompt(source, examples, job.src_lang, job.tgt_lang, template=template,
                           order=job_order(job.params), seed=job.params.get("seed", defaults.SEED),
                           template_text=template_text, glossary=[m.to_dict() for m in terms or ()])
    if (problem := storable_text(prompt)[1]) is not None:
        raise ValueError(f"the prompt cannot be stored ({problem}); check the job's template")
    return prompt


def _fit_context(job: Job, backend: Any, prepared: list[Prepared], max_new_tokens: int
                 ) -> tuple[list[Prepared], list[Failed]]:
    """The items whose prompt fits the backend's context (``context_length`` tokens with
    ``max_new_tokens`` of answer), their last-ranked examples dropped where needed, and
    the items that cannot fit even without examples, failed for good (docs/jobs.md).
    A backend that does not know its context gets every prompt as it is."""
    context = getattr(backend, "context_length", None)
    if not context:
        return prepared, []
    fitted: list[Prepared] = []
    too_long: list[Failed] = []
    for p in prepared:
        try:
            text = p.item.masked or p.item.source
            p.prompt, p.examples_used = fit_prompt(
                lambda ex, p=p, text=text: _render(job, text, list(ex), p.terms),
                p.examples, backend.count_tokens, context, max_new_tokens)
        except PromptTooLong as e:
            too_long.append(Failed(p.item, f"PromptTooLong: {e}", p, final=True))
            continue
        except Exception as e:  # noqa: BLE001 - a tokenizer or /tokenize failure: retried like generation's
            too_long.append(Failed(p.item, _error_text(e), p))
            continue
        fitted.append(p)
    return fitted, too_long


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    """One worker loop on one database connection (plus one for heartbeats)."""

    def __init__(self, url: str, options: WorkerOptions | None = None, *, worker_id: str | None = None,
                 log: Callable[[str], None] | None = None, read_url: str | None = None) -> None:
        self.url = url
        self.read_url = read_url  # a streaming replica the selection step reads from (scoi.db.reads)
        from scoi.config import read_max_lag_from_env

        read_max_lag_from_env()  # a bad SCOI_READ_MAX_LAG stops the worker now, not each item
        self.opts = options or WorkerOptions()
        if self.opts.batch_size < 1:
            raise ValueError("batch size must be at least 1")
        if self.opts.stall_timeout <= 0:
            raise ValueError("stall timeout must be positive")
        self.id = worker_id or default_worker_id()
        self.log = log or (lambda msg: None)
        self.conn = store.connect(url)
        self.liveness = Liveness(url, self.id, stall_timeout=self.opts.stall_timeout,
                                 interval=self.opts.heartbeat_interval(), log=self.log)
        self.stats = WorkerStats(worker=self.id)
        self.caches = WorkerCaches(self.conn, url, read_url=read_url,
                                   log=lambda msg: self.log(f"worker {self.id}: {msg}"))
        self._stop = threading.Event()
        self._last_write_ms = 0.0
        #: the current batch's claim (ms), part of its items' overhead (the prefetch loop
        #: sets it back when it claims the next batch early)
        self.claim_ms = 0.0
        self._last_stall_check = 0.0
        self._next_schedule_check = 0.0

    # ------------------------------------------------------------------ control
    def request_stop(self) -> None:
        """Finish the current batch, then return from ``run``."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested (the current batch is the last)."""
        return self._stop.is_set()

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

        def handler(signum: int, frame: Any) -> None:
            if self._stop.is_set() and signum == signal.SIGINT:
                raise KeyboardInterrupt  # second Ctrl-C: stop now, items are released
            self.log(f"worker {self.id}: {signal.Signals(signum).name}, finishing the current batch")
            self.request_stop()

        for s in previous:
            signal.signal(s, handler)

        def restore() -> None:
            for s, h in previous.items():
                signal.signal(s, h)

        return restore

    # ------------------------------------------------------------------ queue
    def claim(self, limit: int | None = None) -> list[Claimed]:
        """Take up to ``limit`` (default ``batch_size``) items (input order), marking
        exhausted stalled ones failed."""
        t0 = time.perf_counter()
        now = time.monotonic()
        stall = float(self.opts.stall_timeout)
        if now - self._last_stall_check >= min(stall, 30.0):
            store.fail_stalled(self.conn, stall=stall, job_id=self.opts.job_id)
            self._last_stall_check = now
        n = self.opts.batch_size if limit is None else min(limit, self.opts.batch_size)
        if self.opts.max_items is not None:
            n = min(n, self.opts.max_items - self.stats.claimed)
            if n <= 0:
                return []
        rows = store.claim_items(self.conn, self.id, stall=stall, n=n, job_id=self.opts.job_id)
        items = sorted((Claimed(*r) for r in rows), key=lambda c: (c.job_id, c.idx))
        self.stats.claimed += len(items)
        if items:  # an empty claim is idle time, not an item's
            t1 = time.perf_counter()
            self.find_reuse(items)
            self.claim_ms = (time.perf_counter() - t0) * 1000
            self.stats.add_phase("claim", (t1 - t0) * 1000)
            self.stats.add_phase("reuse", (time.perf_counter() - t1) * 1000)
        return items

    def find_reuse(self, items: list[Claimed]) -> None:
        """Mark the items whose job reuses exact matches (``--reuse exact``) and whose
        source has one in the job's corpora and metadata filter: one lookup per job of the
        batch, on this thread's connection, before anything is selected or generated.
        An item with inline codes (a CAT file's) goes to the model: a stored translation
        has no placeholders to put its codes back at."""
        for job_id, group in groupby(items, key=lambda c: c.job_id):
            group = [it for it in group if it.masked is None or not inline.has_tokens(it.masked)]
            if not group:
                continue
            try:
                job = self.caches.job(job_id)
                if job_reuse(job.params) != "exact":
                    continue
                found = exact_matches(self.conn, job.src_lang, job.tgt_lang, [it.source for it in group],
                                      corpora=job.params.get("corpora"), where=job.params.get("where"))
            except Exception as e:  # noqa: BLE001 - prepare() fails the items with this error
                for it in group:
                    it.reuse_error = f"looking up the translation memory failed: {_error_text(e)}"
                continue
            for it in group:
                it.reuse = found.get(it.source)

    def wait_for_work(self) -> None:
        """Idle until an item is queued (LISTEN), a stop is requested or ``poll_seconds`` pass."""
        deadline = time.monotonic() + self.opts.poll_seconds
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for _ in self.conn.notifies(timeout=min(left, 0.5), stop_after=1):
                return

    # ------------------------------------------------------------------ work
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
            reused = [_reused(p) for p in prep.prepared if p.item.reuse is not None]
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
            return [], [Failed(g.prepared.item, _error_text(e), g.prepared) for g in reused]
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
            return PrepareResult(None, reused, lookup_failed + [Failed(it, _error_text(e)) for it in group])
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
                failed.append(Failed(it, _error_text(e)))
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
        prompt = _render(job, item.masked or item.source, examples, terms)
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
            return GenerateResult([], [Failed(p.item, _error_text(e), p) for p in prepared], 0.0)
        max_new_tokens = int(job.params.get("max_new_tokens", defaults.MAX_NEW_TOKENS))
        prepared, too_long = _fit_context(job, backend, prepared, max_new_tokens)
        if not prepared:
            return GenerateResult([], too_long, 0.0)
        g0 = time.perf_counter()
        try:
            gens = backend.generate([p.prompt for p in prepared], max_new_tokens=max_new_tokens,
                                    stop=stop_markers(job.template))
            if len(gens) != len(prepared):
                raise RuntimeError(f"backend returned {len(gens)} generations for {len(prepared)} prompts")
        except Exception as e:  # noqa: BLE001
            return GenerateResult([], [Failed(p.item, _error_text(e), p) for p in prepared] + too_long,
                                  time.perf_counter() - g0)
        seconds = time.perf_counter() - g0
        done = [_generated(p, g) for p, g in zip(prepared, gens)]
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
                refused.append(Failed(g.prepared.item, f"the output could not be stored: {_error_text(e)}",
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
            # a reused item had no prompt: no example count (NULL), not 0
            "examples_used": [g.prepared.examples_used if g.origin_pair_id is None else None for g in done],
            "qa": [None if g.qa is None else "\n".join(g.qa) for g in done],
            "origins": ["llm" if g.origin_pair_id is None else "tm" for g in done],
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

    # ------------------------------------------------------------------ schedules and destinations
    def run_schedules(self) -> None:
        """Run the due schedules (scoi.jobs.schedules), at most every ``schedule_seconds``;
        a worker bound to one job (``job_id``) leaves them to the others."""
        from datetime import datetime, timezone

        from scoi.jobs.schedules import run_due
        from scoi.jobs.sources import cancelled_on

        if self.opts.job_id is not None or time.monotonic() < self._next_schedule_check:
            return
        self._next_schedule_check = time.monotonic() + self.opts.schedule_seconds
        try:
            with cancelled_on(self._stop):  # SIGTERM cancels a slow source query at once
                run_due(self.conn, self.id, datetime.now(timezone.utc), self.url, self.log)
        except psycopg.Error as e:  # the queue still works; the next check retries
            self.log(f"worker {self.id}: checking schedules failed: {e}")

    def deliver_outputs(self, items: list[Claimed]) -> None:
        """Write the batch's new outputs to their jobs' destinations (table or file), after
        the batch committed; idempotent, and a destination's failure is kept, not raised."""
        from scoi.jobs.sources import deliver

        try:
            deliver(self.conn, sorted({c.job_id for c in items}), self.url, self.log)
        except psycopg.Error as e:
            self.log(f"worker {self.id}: delivering outputs failed: {e}")

    def preload(self, job_id: int) -> None:
        """Build the job's selector (with its parser) and backend before claiming anything."""
        job = self.caches.job(job_id)
        try:
            if method(job.method).examples and job.k > 0:
                self.caches.selector(job)
            self.caches.backend(job)
        except Exception:  # noqa: BLE001 - each item will carry the error when processed
            pass

    def run(self) -> WorkerStats:
        """Claim and process batches until stopped (or, with ``burst``, until the queue is empty)."""
        restore = self._install_signals()
        hb = self.liveness.start()
        started = time.perf_counter()
        error: str | None = None
        interrupted = False
        try:
            if self.opts.job_id is not None:
                self.preload(self.opts.job_id)
            while True:
                try:
                    listen_for_items(self.conn)
                    self._loop()
                    break
                except psycopg.Error as e:
                    # a long-running worker outlives a database restart; --burst (cron, CI) stops
                    if self.opts.burst or not (self.conn.closed or self.conn.broken):
                        raise
                    if not self._reconnect(e):
                        break
        except KeyboardInterrupt:
            interrupted = True
            raise
        except BaseException as e:
            error = f"worker {self.id} crashed: {_error_text(e)}"
            raise
        finally:
            self.stats.seconds = time.perf_counter() - started
            self.stats.retries = self.caches.backend_retries()
            self.liveness.stop()
            try:  # only after an interruption or a crash mid-batch does the worker still hold items
                if not self.conn.closed and not self.conn.broken:
                    if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                        self.conn.rollback()
                    store.release_items(self.conn, self.id, uncount=interrupted, error=error)
            except psycopg.Error:
                pass
            restore()
            hb.join(timeout=5)
        return self.stats

    def _loop(self) -> None:
        """Claim and process batches until stopped or, with ``burst``, the queue is done."""
        if self.opts.prefetch:
            run_pipelined(self)
            return
        while not self._stop.is_set():
            self.run_schedules()
            items = self.claim()
            if not items:
                if self.queue_done():
                    return
                self.wait_for_work()
                continue
            self.process(items)

    def _reconnect(self, error: BaseException) -> bool:
        """Wait for the database after the connection was lost (a restart): one log line,
        then attempts with backoff until it answers (True) or a stop is requested (False).
        The worker does not start the embedded server itself: ``scoi db stop`` stays stopped
        until something starts it again (docs/jobs.md). The batch it held is handed back
        on the new connection, its attempt uncounted (the restart was not the items' fault),
        unless another worker claimed it meanwhile."""
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        self.log(f"worker {self.id}: lost the database ({reason}); reconnecting until it is back")
        with contextlib.suppress(psycopg.Error):
            self.conn.close()
        self.caches.drop_selectors()  # their connections went with the server
        t0, delay = time.monotonic(), 0.5
        while not self._stop.wait(delay):
            conn = None
            try:
                conn = store.connect(self.url)
                # registered (lock taken) again before any claim: a worker without its lock
                # reads as dead, and its own next claim would take its items as a dead one's
                self.liveness.beat()
                store.release_items(conn, self.id, uncount=True, error=None)
            except psycopg.Error:
                if conn is not None:
                    conn.close()
                delay = min(2 * delay, defaults.RECONNECT_MAX_SECONDS)
                continue
            self.conn = self.caches.conn = conn
            self.log(f"worker {self.id}: database back after {time.monotonic() - t0:.1f} s, resuming")
            return True
        return False

    def queue_done(self) -> bool:
        """After an empty claim: stop (burst, or max_items reached) rather than wait."""
        return self.opts.burst or (self.opts.max_items is not None and self.stats.claimed >= self.opts.max_items)

    def read_jobs(self, items: list[Claimed]) -> None:
        """Read the items' job rows into the cache on this thread (the prepare thread then
        never uses this worker's connection); a job that cannot be read fails its items
        in prepare()."""
        for job_id in {it.job_id for it in items}:
            try:
                self.caches.job(job_id)
            except Exception:  # noqa: BLE001 - prepare() fails the items with this error
                pass

    def close(self) -> None:
        self.caches.close()
        self.conn.close()
        self.liveness.close()  # last: the lock ends with this session

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Claimed", "Failed", "GenerateResult", "Generated", "PrepareResult", "Prepared", "Worker", "WorkerOptions",
           "WorkerStats", "default_worker_id"]
