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
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import groupby
from typing import Any, Callable

import psycopg

from scoi.config import read_max_lag_from_env
from scoi.core import defaults, inline
from scoi.core.methods import method
from scoi.jobs import store
from scoi.jobs.batch_items import Claimed, error_text
from scoi.jobs.batch_pipeline import BatchPipeline
from scoi.jobs.caches import WorkerCaches
from scoi.jobs.liveness import Liveness
from scoi.jobs.prefetch import run_pipelined
from scoi.jobs.schedules import run_due
from scoi.jobs.sources import cancelled_on
from scoi.jobs.spec import job_reuse
from scoi.jobs.store import listen_for_items
from scoi.jobs.worker_stats import WorkerStats
from scoi.reuse import exact_matches


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


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker(BatchPipeline):
    """One worker loop on one database connection (plus one for heartbeats)."""

    def __init__(self, url: str, options: WorkerOptions | None = None, *, worker_id: str | None = None,
                 log: Callable[[str], None] | None = None, read_url: str | None = None) -> None:
        self.url = url
        self.read_url = read_url  # a streaming replica the selection step reads from (scoi.db.reads)
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
                    it.reuse_error = f"looking up the translation memory failed: {error_text(e)}"
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

    # ------------------------------------------------------------------ schedules and the run loop
    def run_schedules(self) -> None:
        """Run the due schedules (scoi.jobs.schedules), at most every ``schedule_seconds``;
        a worker bound to one job (``job_id``) leaves them to the others."""
        if self.opts.job_id is not None or time.monotonic() < self._next_schedule_check:
            return
        self._next_schedule_check = time.monotonic() + self.opts.schedule_seconds
        try:
            with cancelled_on(self._stop):  # SIGTERM cancels a slow source query at once
                run_due(self.conn, self.id, datetime.now(timezone.utc), self.url, self.log)
        except psycopg.Error as e:  # the queue still works; the next check retries
            self.log(f"worker {self.id}: checking schedules failed: {e}")
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
            error = f"worker {self.id} crashed: {error_text(e)}"
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



__all__ = ["Worker", "WorkerOptions", "default_worker_id"]
