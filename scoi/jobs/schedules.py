"""Schedules stored in PostgreSQL: a job template, a source, a destination and a cron line.

``scoi schedule add`` creates the schedule and the one long-lived job its runs grow (named
like the schedule). Every ``scoi worker`` checks for due schedules between batches
(:func:`run_due`, with ``now`` passed in, so tests inject the clock):

* exactly one run per tick however many workers are up: a run starts by inserting the
  (schedule, tick) row of ``schedule_run`` with ON CONFLICT DO NOTHING, in the transaction
  that adds the items; a worker that inserts nothing leaves the tick alone;
* missed ticks collapse: after a downtime only the latest tick is run
  (scoi.core.cron.due_tick);
* each run is recorded: tick, job, items added and skipped, or the error (a failing source
  query adds nothing and is retried at the next tick).

``scoi job sync`` stays for cron users; both add only what the job does not hold yet.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import psycopg
from psycopg.rows import dict_row

from scoi.core import defaults
from scoi.core.cron import CronError, check_cron, due_tick, next_tick
from scoi.db.queries import load
from scoi.jobs.destinations import Destination, deliver, destinations, save_destination
from scoi.jobs.source_checks import SourceInterrupted
from scoi.jobs.source_jobs import append_from_source
from scoi.jobs.sources import Source, read_source, save_source, source_of_job
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.create import new_job
from scoi.jobs.store import find_job_by_name, get_job, notify_workers
from scoi.jobs.validate import validate

SQL = load("schedules")
MAX_ERROR_CHARS = 2000


@dataclass
class RunResult:
    """One run of a schedule (a row of ``schedule_run``)."""

    schedule: str
    tick: datetime
    job_id: int | None
    added: int | None
    skipped: int | None
    error: str | None
    manual: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def add_schedule(conn: psycopg.Connection, name: str, cron: str, spec: JobSpec, source: Source,
                 destination: Destination | None, default_url: str, *,
                 tz: str = defaults.SCHEDULE_TIMEZONE) -> dict[str, Any]:
    """Check everything a run will need (cron line, job settings, source query, destination
    table), then store the schedule and its job in one transaction."""
    from scoi.core.names import BadName, check_name

    try:
        check_name("schedule", name)
    except BadName as e:
        raise JobError(str(e)) from None
    if name.strip().isdigit():
        raise JobError(f"schedule name {name!r} must be non-empty and not a number")
    try:
        reading = check_cron(cron, tz)
    except CronError as e:
        raise JobError(str(e)) from None
    spec.name = name
    validate(conn, spec)
    source.check()
    rows = read_source(source, default_url)  # a query that fails or has the wrong shape stops here
    if destination is not None:
        destination.check(default_url, source, [k for k, text in rows if text and k is not None])
    if find_job_by_name(conn, name) is not None:
        raise JobError(f"a job named {name!r} exists already, and a schedule's job takes the schedule's name; "
                       "pick another schedule name")
    with new_job(conn, spec, input_path=source.path if source.kind == "file" else None) as job_id:
        save_source(conn, job_id, source)
        if destination is not None:
            save_destination(conn, job_id, destination)
        try:
            with conn.transaction():
                conn.execute(SQL["insert_schedule"], {"name": name, "cron": cron, "timezone": tz,
                                                      "spec": json.dumps(_spec_dict(spec)), "job_id": job_id})
        except psycopg.errors.UniqueViolation:
            raise JobError(f"a schedule named {name!r} exists already (`scoi schedule rm {name}` first)") from None
    return {"name": name, "cron": cron, "timezone": tz, "reads": reading, "job_id": job_id,
            "source_rows": len(rows), "next_tick": next_tick(cron, _utc_now(), tz)}


def _spec_dict(spec: JobSpec) -> dict[str, Any]:
    return {"src": spec.src, "tgt": spec.tgt, "model": spec.model, "method": spec.method, "k": spec.k,
            "template": spec.template, "max_attempts": spec.max_attempts, **spec.params()}


def list_schedules(conn: psycopg.Connection, now: datetime | None = None) -> list[dict[str, Any]]:
    """Every schedule with its last run and next tick."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(SQL["list_schedules"]).fetchall()
    return [_with_next(r, now or _utc_now()) for r in rows]


def _with_next(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    row = dict(row)
    try:
        row["next_tick"] = None if row["paused"] else next_tick(row["cron"], now, row["timezone"])
    except CronError:
        row["next_tick"] = None
    return row


def get_schedule(conn: psycopg.Connection, name: str) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(SQL["schedule_by_name"], {"name": name}).fetchone()
    if row is None:
        raise JobError(f"no schedule {name!r} (see `scoi schedule list`)")
    return _with_next(row, _utc_now())


def show_schedule(conn: psycopg.Connection, name: str, runs: int = defaults.SCHEDULE_RUNS_SHOWN) -> dict[str, Any]:
    """The schedule, its source and destination (with the delivery state), its job's
    progress and its recent runs."""
    from scoi.jobs.store import status

    out = get_schedule(conn, name)
    with conn.cursor(row_factory=dict_row) as cur:
        out["runs"] = cur.execute(SQL["recent_runs"], {"id": out["id"], "n": runs}).fetchall()
    job_id = out["job_id"]
    if job_id is not None:
        source = source_of_job(conn, job_id)
        out["source"] = source.to_dict() if source else None
        dest = destinations(conn, [job_id]).get(job_id)
        out["destination"] = {**dest[0].to_dict(), **dest[1]} if dest else None
        st = status(conn, job_id, errors=3)
        out["job"] = {k: st[k] for k in ("state", "total", "queued", "running", "done", "failed", "cancelled",
                                         "undelivered")}
        out["job"]["errors"] = st["errors"]
    return out


def set_paused(conn: psycopg.Connection, name: str, paused: bool) -> None:
    if conn.execute(SQL["set_paused"], {"name": name, "paused": paused}).fetchone() is None:
        raise JobError(f"no schedule {name!r} (see `scoi schedule list`)")


def remove_schedule(conn: psycopg.Connection, name: str) -> int | None:
    """Delete the schedule and its runs; its job stays (its id is returned)."""
    row = conn.execute(SQL["delete_schedule"], {"name": name}).fetchone()
    if row is None:
        raise JobError(f"no schedule {name!r} (see `scoi schedule list`)")
    return row[0]


def run_tick(conn: psycopg.Connection, schedule_id: int, name: str, tick: datetime, worker: str,
             default_url: str, *, manual: bool = False) -> RunResult | None:
    """Run one tick of a schedule, unless another worker ran (or is running) it: None then.

    The run row, the new items and the counts commit together; a source that fails adds
    nothing (savepoint) and the run keeps the error. The source query runs on a connection
    of its own (bounded by its timeouts) while this transaction holds the schedule's
    advisory lock, which other workers only *try* to take: they skip the schedule instead
    of waiting on the uncommitted run row."""
    with conn.transaction():
        if not conn.execute(SQL["try_lock_schedule"], {"id": schedule_id}).fetchone()[0]:
            return None  # another worker is running this schedule now
        row = conn.execute(SQL["claim_tick"], {"id": schedule_id, "tick": tick, "manual": manual,
                                               "worker": worker}).fetchone()
        if row is None:
            return None
        job_id = row[0]
        added = skipped = None
        error = None
        try:
            with conn.transaction():
                if job_id is None:
                    raise JobError(f"schedule {name!r} has no job any more (it was deleted); remove the schedule "
                                   "and add it again")
                job = get_job(conn, job_id)
                source = source_of_job(conn, job_id)
                if source is None:
                    raise JobError(f"job {job.label!r} has no stored source")
                result = append_from_source(conn, job_id, job.max_attempts, source, default_url)
                added, skipped = result.added, result.skipped
                if added:
                    notify_workers(conn)
        except SourceInterrupted:
            raise  # this process is stopping: no run recorded, the tick is left to another worker
        except (JobError, psycopg.Error, OSError) as e:
            error = (str(e).strip().splitlines() or [type(e).__name__])[0][:MAX_ERROR_CHARS]
        conn.execute(SQL["finish_run"], {"id": schedule_id, "tick": tick, "added": added, "skipped": skipped,
                                         "error": error})
    return RunResult(name, tick, job_id, added, skipped, error, manual)


def run_now(conn: psycopg.Connection, name: str, worker: str, default_url: str,
            now: datetime | None = None) -> RunResult:
    """Run a schedule by hand (paused or not); recorded as a manual run at ``now``."""
    sched = get_schedule(conn, name)
    result = run_tick(conn, sched["id"], name, now or _utc_now(), worker, default_url, manual=True)
    if result is None:
        raise JobError(f"schedule {name!r} is being run by another process right now (or was, at this very "
                       "instant); try again once it is done")
    return result


def run_due(conn: psycopg.Connection, worker: str, now: datetime, default_url: str,
            log: Callable[[str], None] | None = None) -> list[RunResult]:
    """Run every schedule with a due tick at ``now`` (those another worker runs are skipped),
    then retry the pending deliveries of the schedules' jobs. The runs this worker made."""
    say = log or (lambda msg: None)
    results: list[RunResult] = []
    with conn.cursor(row_factory=dict_row) as cur:
        candidates = cur.execute(SQL["due_candidates"]).fetchall()
    for s in candidates:
        try:
            tick = due_tick(s["cron"], s["last_tick"], now, created_at=s["created_at"], tz=s["timezone"])
        except CronError as e:
            say(f"schedule {s['name']}: {e}")
            continue
        if tick is None:
            continue
        try:
            result = run_tick(conn, s["id"], s["name"], tick, worker, default_url)
        except SourceInterrupted:
            say(f"schedule {s['name']}: tick {tick:%Y-%m-%d %H:%M} UTC left to another worker (stopping)")
            break
        if result is None:
            continue
        results.append(result)
        say(f"schedule {s['name']}: tick {tick:%Y-%m-%d %H:%M} UTC: " +
            (f"error: {result.error}" if result.error else f"{result.added} new items, {result.skipped} skipped"))
    job_ids = [r[0] for r in conn.execute(SQL["schedule_job_ids"]).fetchall()]
    if job_ids:
        deliver(conn, job_ids, default_url, log)
    return results


__all__ = ["RunResult", "add_schedule", "get_schedule", "list_schedules", "remove_schedule", "run_due", "run_now",
           "run_tick", "set_paused", "show_schedule"]
