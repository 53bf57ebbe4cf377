"""``scoi job sync``: add to a named job the input lines it does not hold yet.

A job fed by a file that grows ("translate the lines of this file that have no
translation yet") is one long-lived named job: each sync appends the file's new lines as
items and a burst worker translates them. The run is started from outside, by cron (or a
systemd timer, or CI) calling idempotent commands::

    # m h dom mon dow  command
    15 2 * * *  flock -n /tmp/scoi-nightly-fr-en.lock sh -c 'scoi job sync --input /data/inbox.fr \\
        --src fr --tgt en --name nightly-fr-en --model hf:/models/gemma-3-270m \\
        && scoi worker --burst --job nightly-fr-en \\
        && scoi job export nightly-fr-en --format tsv -o /data/inbox.fr-en.tsv'

Schedules kept inside scoi, run by the workers from a table source, are
:mod:`scoi.jobs.schedules` (``scoi schedule add``).

Idempotent: lines are matched by content hash (md5 of the stripped line), so running sync
twice adds nothing the second time, appending lines to the file adds exactly those, and a
line seen before (even at another position) is not translated again. Blank lines are
skipped. Two syncs of one job at the same time are serialised by a row lock on the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import psycopg

from scoi.jobs.create import new_job
from scoi.jobs.spec import JobError, JobSpec, check_backend_options
from scoi.jobs.store import append_new, find_job_by_name, notify_workers
from scoi.jobs.validate import validate

# The settings a sync run may not change on an existing job (they define its outputs).
_FIXED = (("src", "src_lang"), ("tgt", "tgt_lang"), ("method", "method"), ("k", "k"), ("model", "model"),
          ("template", "template"))


@dataclass
class SyncResult:
    job_id: int
    name: str
    created: bool
    added: int    # new items
    skipped: int  # lines already in the job (or repeated in the file, or blank)
    first_index: int | None  # index of the first added item

    def to_dict(self) -> dict:
        return {"job_id": self.job_id, "name": self.name, "created": self.created, "added": self.added,
                "skipped": self.skipped, "first_index": self.first_index}


def sync(conn: psycopg.Connection, spec: JobSpec, sources: Sequence[str],
         references: Sequence[str] | None = None, *, input_path: str | None = None,
         references_path: str | None = None, check: Sequence[str] | None = None) -> SyncResult:
    """Create the job named ``spec.name`` if needed, then append the lines it lacks.

    ``check``: the settings (JobSpec attribute names) the caller gave explicitly; on an
    existing job they must match its stored ones (default: all of them); a first run must
    give src, tgt and model."""
    if not spec.name:
        raise JobError("sync needs --name: the recurring job's name")
    check_backend_options(spec.backend_options)  # also when the job exists: a secret given is refused, not ignored
    if references is not None and len(references) != len(sources):
        raise JobError(f"the references have {len(references)} lines but the input has {len(sources)}; "
                       "they must be aligned line by line")
    existing = find_job_by_name(conn, spec.name)
    if existing is None and check is not None and not {"src", "tgt", "model"} <= set(check):
        raise JobError(f"job {spec.name!r} does not exist yet: its first sync needs --src, --tgt and --model")
    if existing is None:
        validate(conn, spec)
    else:
        _check_same_settings(spec, existing, check)
    if existing is None:
        # Two first runs at once: the second one's INSERT fails on the unique name
        # (a clear error); it succeeds the next night.
        with new_job(conn, spec, input_path=input_path, references_path=references_path) as job_id:
            next_idx, added = append_new(conn, job_id, spec.max_attempts, sources, references)
    else:
        job_id = existing.id
        with conn.transaction():
            next_idx, added = append_new(conn, job_id, existing.max_attempts, sources, references)
            if added:
                notify_workers(conn)
    return SyncResult(job_id=job_id, name=spec.name, created=existing is None, added=added,
                      skipped=len(sources) - added, first_index=next_idx if added else None)


def _check_same_settings(spec: JobSpec, job, check: Sequence[str] | None) -> None:
    for attr, column in _FIXED:
        if check is not None and attr not in check:
            continue
        want, have = getattr(spec, attr), getattr(job, column)
        if isinstance(want, str):
            want = want.lower() if attr in ("src", "tgt") else want
        if want != have:
            raise JobError(f"job {job.label!r} exists with {column}={have!r}, not {want!r}; a recurring job keeps "
                           "its settings (submit a new job, or sync under another --name)")
    if job.status == "cancelled":
        raise JobError(f"job {job.label!r} is cancelled; `scoi job retry {job.label}` reactivates it")


__all__ = ["SyncResult", "sync"]
