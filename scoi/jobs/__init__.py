"""Batch translation jobs in PostgreSQL: submit (store), work (worker), recur (schedule).

    from scoi.jobs import JobSpec, submit, Worker, WorkerOptions
    job_id = submit(conn, JobSpec("fr", "en", model="hf:/models/gemma"), lines)
    Worker(url, WorkerOptions(burst=True)).run()
"""

from scoi.jobs.schedule import SyncResult, sync
from scoi.jobs.store import (EXPORT_FORMATS, Job, JobError, JobSpec, cancel, export_rows, get_job, list_jobs,
                             read_lines, retry, status, submit, write_export)
from scoi.jobs.worker import Worker, WorkerOptions, WorkerStats

__all__ = ["EXPORT_FORMATS", "Job", "JobError", "JobSpec", "SyncResult", "Worker", "WorkerOptions", "WorkerStats",
           "cancel", "export_rows", "get_job", "list_jobs", "read_lines", "retry", "status", "submit", "sync",
           "write_export"]
