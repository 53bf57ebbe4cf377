"""Batch translation jobs in PostgreSQL: describe (spec), check (validate), create (create),
queue (store), export (export), work (worker: the claim and run loop; batch_pipeline: its
prepare/generate/store steps on batch_items; worker_stats: its counts; caches: its selectors
and backends; prefetch: the pipelined loop; liveness: its lock and heartbeats; supervisor
for several processes), grow from a file (sync) or on a cron line (schedules), score
(eval), compare methods (experiment).

    from scoi.jobs import JobSpec, submit, Worker, WorkerOptions
    job_id = submit(conn, JobSpec("fr", "en", model="hf:/models/gemma"), lines)
    Worker(url, WorkerOptions(burst=True)).run()

The names are resolved on first use: ``scoi job --help`` imports no submodule (no numpy).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "scoi.jobs.eval": ("EvalError", "Score", "compare", "evaluate"),
    "scoi.jobs.experiment": ("create_or_resume", "get_experiment", "results", "run_jobs"),
    "scoi.jobs.experiment_grid": ("ExperimentSpec",),
    "scoi.jobs.sync": ("SyncResult", "sync"),
    "scoi.jobs.spec": ("Job", "JobError", "JobSpec", "read_lines"),
    "scoi.jobs.create": ("submit",),
    "scoi.jobs.export": ("EXPORT_FORMATS", "export_rows", "export_to_file", "write_export"),
    "scoi.jobs.store": ("cancel", "connect", "get_job", "list_jobs", "retry", "status"),
    "scoi.jobs.supervisor": ("SupervisorError", "run_workers", "run_worker"),
    "scoi.jobs.worker": ("Worker", "WorkerOptions"),
    "scoi.jobs.worker_stats": ("WorkerStats",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'scoi.jobs' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
