"""Batch translation jobs in PostgreSQL: submit (store), work (worker, supervisor for
several processes), recur (schedule), score (eval), compare methods (experiment).

    from scoi.jobs import JobSpec, submit, Worker, WorkerOptions
    job_id = submit(conn, JobSpec("fr", "en", model="hf:/models/gemma"), lines)
    Worker(url, WorkerOptions(burst=True)).run()
"""

from scoi.jobs.eval import EvalError, Score, compare, evaluate
from scoi.jobs.experiment import ExperimentSpec, create_or_resume, get_experiment, results, run_jobs
from scoi.jobs.schedule import SyncResult, sync
from scoi.jobs.store import (EXPORT_FORMATS, Job, JobError, JobSpec, cancel, connect, export_rows, export_to_file,
                             get_job, list_jobs, read_lines, retry, status, submit, write_export)
from scoi.jobs.supervisor import SupervisorError, run_pool
from scoi.jobs.worker import Worker, WorkerOptions, WorkerStats

__all__ = ["EXPORT_FORMATS", "EvalError", "ExperimentSpec", "Job", "JobError", "JobSpec", "Score", "SupervisorError", "SyncResult",
           "Worker", "WorkerOptions", "WorkerStats", "cancel", "compare", "connect", "create_or_resume", "evaluate", "get_experiment", "export_rows",
           "export_to_file", "get_job", "list_jobs", "read_lines", "results", "retry", "run_jobs", "run_pool", "status", "submit", "sync",
           "write_export"]
