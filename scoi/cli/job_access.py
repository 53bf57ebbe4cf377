"""What the job, worker and eval commands share: the database, a job by id or name (a
clear failure otherwise), and worker log lines on stderr. scoi's modules are imported
when a command runs, so ``--help`` stays quick."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scoi.cli.common import database_url, fail, say

if TYPE_CHECKING:
    import psycopg

    from scoi.jobs.spec import Job


def log_line(text: str) -> None:
    """A worker's log line, on stderr (stdout stays clean for --json), printed as it is."""
    say(text, err=True)


def open_db() -> psycopg.Connection:
    """A connection to scoi's database (SCOI_DATABASE_URL or the embedded server)."""
    from scoi.jobs.store import connect

    return connect(database_url())


def job_or_fail(conn: psycopg.Connection, ref: str) -> Job:
    """The job ``ref`` names (id or name), or one clear line and exit 1."""
    from scoi.jobs.spec import JobError
    from scoi.jobs.store import get_job

    try:
        return get_job(conn, ref)
    except JobError as e:
        fail(str(e))


__all__ = ["job_or_fail", "log_line", "open_db"]
