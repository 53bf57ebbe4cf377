"""The worker loop with prefetch: while batch N generates (on a model server, a GPU or
another core), batch N+1 is already claimed and its examples are selected in a thread
(parsing, and preselection on the selector's own connection), so selection costs wall
time only where it outlasts generation.

The thread runs only while the batch generates (joined before the batch is stored: the
worker's connection and the selector's label space are never used by both at once), and
selections are the same as without prefetch. On stop, the prefetched batch goes back to
the queue, its attempt uncounted.
"""

from __future__ import annotations

import time
from concurrent import futures
from typing import Any

from scoi.jobs import store

#: scoi.jobs.worker.Worker (which imports this module: typed loosely, no import circle)
Worker = Any


def run_pipelined(worker: Worker) -> None:
    """Claim, prepare, generate and store batches until the worker stops or the queue is
    done (``Worker.run`` with ``prefetch``)."""
    with futures.ThreadPoolExecutor(1, thread_name_prefix="scoi-prepare") as pool:
        current: tuple[list[Any], list[Any], float] | None = None
        # Batches grow 1, 2, 4, ... up to batch_size: the first batch has no generation
        # to hide its selection behind (all of it is its items' overhead), so it is one
        # item, and each next batch's selection runs behind a batch half its size.
        ramp = 1
        try:
            while True:
                if current is None:
                    if worker.stopping:
                        return
                    worker.run_schedules()
                    items = worker.claim(ramp)
                    if not items:
                        if worker.queue_done():
                            return
                        worker.wait_for_work()
                        ramp = 1  # after idling, the next batch again has nothing to hide behind
                        continue
                    t0 = time.perf_counter()
                    setup0 = worker.caches.setup_seconds
                    preps = _submit_prepare(worker, pool, items).result()
                    # loading the job's parser and selector is one-off, not per-item overhead
                    current = (items, preps, t0 + worker.caches.setup_seconds - setup0)
                items, preps, t0 = current
                claim_ms = worker.claim_ms
                c0 = time.perf_counter()
                ramp = min(2 * ramp, worker.opts.batch_size)
                following = worker.claim(ramp) if not worker.stopping else []
                claim_s = time.perf_counter() - c0 if following else 0.0
                next_claim_ms = worker.claim_ms if following else 0.0
                current, pending = None, _submit_prepare(worker, pool, following) if following else None
                worker.claim_ms = claim_ms
                done, failed, not_overhead = worker.generate_batch(preps)
                w0 = time.perf_counter()
                next_preps = pending.result() if pending is not None else []
                wait_s = time.perf_counter() - w0  # the next batch's selection outlasting this generation
                worker.stats.add_phase("prepare_wait", wait_s * 1000)
                worker.store(items, done, failed, t0, not_overhead + claim_s + wait_s)
                worker.claim_ms = next_claim_ms
                if following:
                    current = (following, next_preps, time.perf_counter() - wait_s)
                if worker.stopping:
                    return
        finally:
            if current is not None and worker.stopping and not worker.conn.closed and not worker.conn.broken:
                # stopped with a prefetched batch: hand it back, attempt uncounted
                store.release_items(worker.conn, worker.id, uncount=True, error=None)


def _submit_prepare(worker: Worker, pool: futures.ThreadPoolExecutor, items: list[Any]) -> futures.Future:
    """Start step 1 of a batch in the prepare thread; its job rows are read here first,
    so that thread never uses the worker's connection."""
    worker.read_jobs(items)
    return pool.submit(worker.prepare_batch, items)


__all__ = ["run_pipelined"]
