"""Jobs made from and grown by a source (scoi.jobs.sources): ``scoi job submit
--source-sql`` stores the job, its source, its destination and its first items in one
transaction; a schedule's run adds the rows the job does not hold yet."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from scoi.config import source_dir_from_env
from scoi.jobs.create import new_job
from scoi.jobs.destinations import Destination, save_destination
from scoi.jobs.documents import append_document, document_format
from scoi.jobs.source_checks import SourceError, source_file_path
from scoi.jobs.sources import Source, read_source, save_source
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import append_new
from scoi.jobs.validate import validate


@dataclass
class Appended:
    added: int
    skipped: int  # rows already in the job, or blank


def append_from_source(conn: psycopg.Connection, job_id: int, max_attempts: int, source: Source,
                       default_url: str, rows: list[tuple[str | None, str]] | None = None) -> Appended:
    """Add to the job the source rows it does not hold yet (by key; by content hash for a
    file), inside the caller's transaction. The source is read (unless the caller read it
    already: ``rows``), and checked, before anything is written or locked."""
    if source.kind == "file" and document_format(source.path or "") is not None:
        added, skipped = append_document(conn, job_id, max_attempts,
                                         source_file_path(source.path or "", source_dir_from_env()))
        return Appended(added=added, skipped=skipped)
    if rows is None:
        rows = read_source(source, default_url)
    keys = [key for key, _ in rows] if source.kind == "sql" else None
    _, added = append_new(conn, job_id, max_attempts, [text or "" for _, text in rows], keys=keys)
    return Appended(added=added, skipped=len(rows) - added)


def submit_from_source(conn: psycopg.Connection, spec: JobSpec, source: Source, destination: Destination | None,
                       default_url: str) -> tuple[int, Appended]:
    """``scoi job submit --source-sql``: a job over the rows of a query (or a file's lines),
    with an optional destination, checked as a schedule's are (job settings, the
    destination table; the query is read read-only and its shape checked before any item
    is written). One transaction stores the job, its source, its destination and its
    items, so a query that fails leaves nothing. Returns (job id, what was added)."""
    validate(conn, spec)
    source.check()
    rows = read_source(source, default_url)  # on a connection of its own, before any write
    if destination is not None:
        destination.check(default_url, source, [k for k, text in rows if text and k is not None])
    with new_job(conn, spec, input_path=source.path if source.kind == "file" else None) as job_id:
        save_source(conn, job_id, source)
        if destination is not None:
            save_destination(conn, job_id, destination)
        appended = append_from_source(conn, job_id, spec.max_attempts, source, default_url, rows)
        if not appended.added:
            raise SourceError("the source has no rows with text to translate; nothing was stored")
    return job_id, appended


__all__ = ["Appended", "append_from_source", "submit_from_source"]
