"""Worker processes: :func:`run_worker` runs one worker to its end, :func:`run_workers` runs
N of them (``scoi worker --concurrency N``, ``experiment run --workers N``) and sums their
summaries.

Each pool worker is its own process (a model and a parser per process, no GIL shared),
started with multiprocessing's ``spawn`` (no forked torch or database state) to call
:func:`run_worker`; the queue in PostgreSQL is all they share (scoi/jobs/worker.py).
SIGTERM and SIGINT are forwarded, so every child finishes its current batch.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable, Sequence

from scoi.jobs.worker import Worker, WorkerOptions
from scoi.jobs.worker_stats import WorkerStats
from scoi.periodic import every

#: The summary fields that add up over workers (WorkerStats.to_dict).
SUMMED = ("claimed", "done", "reused", "requeued", "failed", "lost", "cancelled", "batches", "generate_ms",
          "overhead_ms", "retries")


class SupervisorError(RuntimeError):
    """A worker process failed or reported no summary."""


def log_to_stderr(text: str) -> None:
    """A worker's log line on stderr (stdout stays clean for JSON summaries)."""
    print(text, file=sys.stderr, flush=True)


def run_worker(url: str, options: WorkerOptions, *, read_url: str | None = None,
               log: Callable[[str], None] | None = None,
               progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run one worker with ``options`` in this process until it exits; its summary.
    ``progress`` gets its counts as a line (:func:`progress_text`) every half second."""
    report = (lambda stats: progress(progress_text(*counts_of(stats)))) if progress is not None else None
    with Worker(url, options, log=log, read_url=read_url) as worker, watch_counts(worker, report):
        return worker.run().to_dict()


#: The counts a progress line shows (WorkerStats fields).
COUNTED = ("done", "failed", "requeued", "lost")


def counts_of(stats: WorkerStats) -> tuple[int, ...]:
    return tuple(getattr(stats, key) for key in COUNTED)


def progress_text(done: int, failed: int, requeued: int, lost: int, prefix: str = "") -> str:
    """Items done, failed and sent back so far, for a progress line."""
    return f"{prefix}{done} done, {failed} failed, {requeued} requeued" + (f", {lost} lost" if lost else "")


@contextlib.contextmanager
def watch_counts(worker: Worker, report: Callable[[WorkerStats], None] | None,
                 interval: float = 0.5) -> Iterator[None]:
    """Meanwhile, hand ``report`` the worker's stats every ``interval`` seconds (read from a
    thread: it reads only plain integers the worker only ever increases)."""
    if report is None:
        yield
        return
    def watch(stop: threading.Event) -> None:
        while not stop.wait(interval):
            report(worker.stats)

    with every(interval, watch, "scoi-progress"):
        yield


def merge_summaries(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One summary for the pool: counts summed, the slowest worker's seconds, rates over
    the whole pool, the first five distinct errors."""
    total: dict[str, Any] = {"worker": f"{len(summaries)} processes", "workers": list(summaries)}
    for key in SUMMED:
        total[key] = sum(s[key] for s in summaries)
    total["seconds"] = max(s["seconds"] for s in summaries)
    total["items_per_second"] = round(total["done"] / total["seconds"], 3) if total["seconds"] else 0.0
    total["overhead_ms_per_item"] = round(total["overhead_ms"] / total["claimed"], 3) if total["claimed"] else 0.0
    total["errors"] = sorted({e for s in summaries for e in s["errors"]})[:5]
    return total


def _child(url: str, options: WorkerOptions, read_url: str | None, log: Callable[[str], None],
           results: Any, counts: Any, slot: int) -> None:
    """A pool process: run one worker, keep its counts in ``counts`` (shared with the
    parent, for its progress line) from ``slot``, hand its summary to the parent."""
    def share(stats: WorkerStats) -> None:
        counts[slot:slot + len(COUNTED)] = counts_of(stats)

    try:
        with Worker(url, options, log=log, read_url=read_url) as worker, watch_counts(worker, share):
            results.put(worker.run().to_dict())
    except KeyboardInterrupt:  # a second Ctrl-C: the worker released its items
        sys.exit(130)


def run_workers(n: int, options: WorkerOptions, url: str, *, read_url: str | None = None,
             log: Callable[[str], None] = log_to_stderr,
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run ``n`` worker processes with ``options`` until they exit; their merged summary.
    ``log`` must be picklable (a module-level function): each process calls its own copy.
    ``progress`` gets the processes' counts summed, as a line, every half second."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    width = len(COUNTED)
    counts = ctx.Array("q", width * n)  # each process's counts so far, side by side
    procs = [ctx.Process(target=_child, args=(url, options, read_url, log, results, counts, i * width),
                         daemon=False) for i in range(n)]
    for p in procs:
        p.start()

    def forward(signum: int, frame: Any) -> None:
        for p in procs:
            if p.is_alive() and p.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    summaries: list[dict[str, Any]] = []
    try:
        while len(summaries) < n:  # read before join: a child blocks on a full pipe until read
            if progress is not None:
                values = counts[:]
                progress(progress_text(*(sum(values[k::width]) for k in range(width)), prefix=f"{n} processes: "))
            try:
                summaries.append(results.get(timeout=0.5))
            except queue.Empty:
                if not any(p.is_alive() for p in procs) and results.empty():
                    break
        for p in procs:
            p.join()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed or len(summaries) != n:
        raise SupervisorError(f"a worker process exited with status {failed[0] if failed else 0}"
                              + ("" if failed else " without a summary"))
    return merge_summaries(summaries)


__all__ = ["COUNTED", "SupervisorError", "counts_of", "log_to_stderr", "merge_summaries", "progress_text", "run_workers",
           "run_worker", "watch_counts"]
