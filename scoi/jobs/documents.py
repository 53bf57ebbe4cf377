"""Jobs over CAT-tool files: XLIFF 1.2/2.x or PO in, the same file out with targets filled.

``scoi job submit --input FILE.xlf`` (or ``.xliff``, ``.po``, ``.pot``) reads the file's
segments (scoi.formats), checks all of it before anything is stored, and stores in one
transaction the job, the file as given (``job_document``) and one item per segment:
``source_key`` the segment key, ``masked`` the source with its inline codes as placeholders
(the prompt's text), ``source`` the text without them (what selection matches on). The
worker checks each answer's placeholders (``job_item.qa``). ``scoi job export --format
xliff|po`` re-reads the stored file and writes it back with the done items' targets.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from scoi.core import inline
from scoi.db.queries import load
from scoi.formats import DocumentError, Filled, Segment, po, xliff
from scoi.jobs.create import new_job
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import add_items, append_new
from scoi.jobs.validate import validate

SQL = load("documents")
#: File name endings read as CAT files, and their format.
SUFFIXES = {".xlf": "xliff", ".xliff": "xliff", ".po": "po", ".pot": "po"}
DOCUMENT_FORMATS = ("xliff", "po")
_MODULES = {"xliff": xliff, "po": po}
#: The largest CAT file a job takes (it is stored whole with the job).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


def document_format(path: str | Path) -> str | None:
    """``xliff`` or ``po`` for a CAT file's name, None for any other input."""
    return SUFFIXES.get(Path(path).suffix.lower())


def read_document(path: str | Path) -> bytes:
    """The file's bytes (read once: a pipe works), refused past MAX_DOCUMENT_BYTES."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as e:
        raise JobError(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise JobError(f"{path}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB; split it")
    return data


def read_segments(path: str | Path, src: str | None = None,
                  tgt: str | None = None) -> tuple[str, bytes, list[Segment]]:
    """The CAT file at ``path``: (format, bytes, segments to translate); a bad file is a
    JobError naming file:line."""
    fmt = document_format(path)
    if fmt is None:
        raise JobError(f"{path}: not a CAT file; expected a name ending in {', '.join(SUFFIXES)}")
    data = read_document(path)
    try:
        return fmt, data, _MODULES[fmt].read(data, str(path), src, tgt)
    except DocumentError as e:
        raise JobError(str(e)) from None


def submit_document(conn: psycopg.Connection, spec: JobSpec, path: str | Path) -> tuple[int, int]:
    """A job with one item per segment of the CAT file at ``path``; (job id, items). The
    whole file is read and checked first: a bad file stores nothing."""
    fmt, data, segments = read_segments(path, spec.src, spec.tgt)
    name = str(path)
    if not segments:
        raise JobError(f"{name}: nothing to translate (every unit is translated already, marked translate=\"no\", "
                       "or without text); nothing was stored")
    validate(conn, spec)
    with new_job(conn, spec, input_path=str(Path(path).resolve())) as job_id:
        conn.execute(SQL["insert_document"], {"job_id": job_id, "format": fmt, "name": Path(path).name,
                                              "content": data})
        add_items(conn, job_id, 0, [inline.plain(s.masked) for s in segments], None, spec.max_attempts,
                  keys=[s.key for s in segments], masked=[s.masked for s in segments])
    return job_id, len(segments)


def append_document(conn: psycopg.Connection, job_id: int, max_attempts: int, path: str | Path,
                    src: str | None = None, tgt: str | None = None) -> tuple[int, int]:
    """A schedule's run over a CAT file, in the caller's transaction: the file read again
    becomes the job's stored document (exports fill this version), and its segments the
    job lacks (by key) become items. Returns (added, skipped)."""
    fmt, data, segments = read_segments(path, src, tgt)
    conn.execute(SQL["upsert_document"], {"job_id": job_id, "format": fmt, "name": Path(path).name,
                                          "content": data})
    _, added = append_new(conn, job_id, max_attempts, [inline.plain(s.masked) for s in segments],
                          keys=[s.key for s in segments], masked=[s.masked for s in segments])
    return added, len(segments) - added


def export_document(conn: psycopg.Connection, job_id: int, fmt: str) -> tuple[bytes, int]:
    """The job's stored file with the done items' targets filled; (bytes, targets written)."""
    row = conn.execute(SQL["document_of_job"], {"job_id": job_id}).fetchone()
    if row is None:
        raise JobError(f"job {job_id} was not submitted from an XLIFF or PO file, so it has none to fill; export "
                       "it as jsonl or tsv")
    have, name, content, tgt = row
    if have != fmt:
        raise JobError(f"job {job_id} was submitted from a {have.upper()} file ({name}); export it with --format "
                       f"{have}")
    filled = {key: Filled(output, list(qa or []), masked)
              for key, output, qa, masked in conn.execute(SQL["document_outputs"], {"job_id": job_id})}
    try:
        return _MODULES[fmt].write(bytes(content), name, filled, tgt)
    except DocumentError as e:
        raise JobError(str(e)) from None


__all__ = ["DOCUMENT_FORMATS", "SUFFIXES", "append_document", "document_format", "export_document", "read_document",
           "read_segments", "submit_document"]
