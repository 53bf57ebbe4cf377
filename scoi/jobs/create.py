"""Create a job: the one place a job row is made. ``scoi job submit`` (lines or a table
source), schedules, ``scoi job sync``'s first run and experiment cells all go through
:func:`new_job`, so a job is stored, with what goes with it, in one transaction and the
workers are woken at commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Sequence

import psycopg

from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import add_items, insert_job, notify_workers
from scoi.jobs.validate import validate


@contextmanager
def new_job(conn: psycopg.Connection, spec: JobSpec, *, input_path: str | None = None,
            references_path: str | None = None) -> Iterator[int]:
    """Insert the job row in a transaction and yield its id: the caller's block adds the
    items, source, destination or schedule in the same transaction, so a failure leaves
    nothing. Validation comes first, and is the caller's (:func:`validate`), because some
    callers read their source between the two."""
    with conn.transaction():
        job_id = insert_job(conn, spec, input_path, references_path)
        yield job_id
        notify_workers(conn)


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
    with new_job(conn, spec, input_path=input_path, references_path=references_path) as job_id:
        add_items(conn, job_id, 0, sources, references, spec.max_attempts)
    return job_id


__all__ = ["new_job", "submit"]
