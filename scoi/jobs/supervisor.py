"""``scoi worker --concurrency N``: run N single-process workers and sum their summaries.

Each worker is its own process (a model and a parser per process, no GIL shared), started
as ``scoi worker ... --json`` with the parent's options; the queue in PostgreSQL is all
they share (scoi/jobs/worker.py). SIGTERM and SIGINT are forwarded, so every child
finishes its current batch.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any, Sequence

from scoi.jobs.worker import WorkerOptions

#: The summary fields that add up over workers (WorkerStats.to_dict).
SUMMED = ("claimed", "done", "requeued", "failed", "lost", "batches", "generate_ms", "overhead_ms", "retries")


class SupervisorError(RuntimeError):
    """A worker process failed or printed no summary."""


def worker_command(options: WorkerOptions) -> list[str]:
    """The command line of one child: ``scoi worker`` with ``options``, reporting in JSON."""
    cmd = [sys.executable, "-m", "scoi.cli.main", "worker", "--batch-size", str(options.batch_size),
           "--stall-timeout", repr(options.stall_timeout), "--poll", repr(options.poll_seconds), "--json"]
    if options.burst:
        cmd.append("--burst")
    if options.job_id is not None:
        cmd += ["--job", str(options.job_id)]
    if options.max_items is not None:
        cmd += ["--max-items", str(options.max_items)]
    if not options.prefetch:
        cmd.append("--no-prefetch")
    return cmd


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


def run_pool(n: int, options: WorkerOptions) -> dict[str, Any]:
    """Run ``n`` worker processes with ``options`` until they exit; their merged summary."""
    cmd = worker_command(options)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(n)]

    def forward(signum: int, frame: Any) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        outs = [p.communicate()[0] for p in procs]
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    summaries = []
    for p, out in zip(procs, outs):
        lines = [ln for ln in out.splitlines() if ln.strip()]
        if p.returncode != 0 or not lines:
            raise SupervisorError(f"a worker process exited with status {p.returncode}")
        summaries.append(json.loads(lines[-1]))
    return merge_summaries(summaries)


__all__ = ["SupervisorError", "merge_summaries", "run_pool", "worker_command"]
