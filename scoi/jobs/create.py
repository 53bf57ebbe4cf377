"""Create a job: validate it, then store its row and items in one transaction and wake the
workers. Every way of making a job (``scoi job submit``, table sources, schedules,
experiment cells) goes through here.
"""

from __future__ import annotations

from typing import Sequence

import psycopg

from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import add_items, insert_job, notify_workers
from scoi.jobs.validate import validate


def submit(conn: psycopg.Connection, spec: JobSpec, sources: Sequence[str],
           references: Sequence[str] | None = None, *, input_path: str | None = None,
           references_path: str | None = None) -> int:
    """Create a job with one item per source line (input order); return its id."""
    if references is not None and len(references) != len(sources):
        raise JobError(f"the references have {len(references)} lines but the input has {len(sources)}; "
                       "they must be aligned line by line")
    if not sources:
        raise JobError("the input has no lines")
    validate(conn, spec)
    with conn.transaction():
        job_id = insert_job(conn, spec, input_path, references_path)
        add_items(conn, job_id, 0, sources, references, spec.max_attempts)
        notify_workers(conn)
    return job_id


__all__ = ["submit"]
