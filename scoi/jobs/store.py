"""The job queue in PostgreSQL (tables of migration 0003): job rows and items inserted,
looked up, listed, claimed, completed, failed, released, retried, cancelled, and their
scores. Plain functions over a psycopg connection, so the CLI, the worker, the scheduler and
tests share one implementation. Statements are the named blocks of scoi/db/sql/jobs.sql.

Validation lives above (scoi.jobs.validate), creation in scoi.jobs.create, export in
scoi.jobs.export: this module imports no selector, embeddings or backend.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import psycopg
from psycopg.rows import dict_row

from scoi.db.queries import load
from scoi.jobs.spec import Job, JobError, JobSpec, source_hash


SQL = load("jobs")


def connect(url: str) -> psycopg.Connection:
    """A connection for the functions of this module: autocommit, because each of them
    that writes opens its own transaction (and a worker's idle LISTEN must not sit in one)."""
    from scoi.db import connect as db_connect

    return db_connect(url, autocommit=True)


def insert_job(conn: psycopg.Connection, spec: JobSpec, input_path: str | None, references_path: str | None) -> int:
    """Insert the job row (no items); a taken name is a JobError naming the way out."""
    try:
        return conn.execute(SQL["insert_job"], {
            "name": spec.name, "src": spec.src.lower(), "tgt": spec.tgt.lower(), "method": spec.method, "k": spec.k,
            "model": spec.model, "template": spec.template, "params": json.dumps(spec.params()),
            "signature": spec.signature(), "input_path": input_path, "references_path": references_path,
            "max_attempts": spec.max_attempts}).fetchone()[0]
    except psycopg.errors.UniqueViolation:
        raise JobError(f"a job named {spec.name!r} exists already; pick another --name, or use "
                       f"`scoi job sync` to add new lines to it") from None


def add_items(conn: psycopg.Connection, job_id: int, start: int, sources: Sequence[str],
              references: Sequence[str | None] | None, max_attempts: int, *,
              keys: Sequence[str | None] | None = None, masked: Sequence[str | None] | None = None) -> int:
    """COPY items ``start``, ``start+1``, ... into the job; blank sources are done at once.
    ``keys``: the source rows' keys (table sources, scoi.jobs.sources; segment keys of a CAT
    file). ``masked``: the sources with their inline codes as placeholders (CAT files)."""
    refs = references if references is not None else [None] * len(sources)
    item_keys = keys if keys is not None else [None] * len(sources)
    item_masked = masked if masked is not None else [None] * len(sources)
    with conn.cursor().copy(SQL["copy_items"]) as cp:
        for i, (src, ref, key, mask) in enumerate(zip(sources, refs, item_keys, item_masked)):
            blank = not src
            cp.write_row((job_id, start + i, src, source_hash(src), ref, max_attempts,
                          "done" if blank else "queued", "" if blank else None, "now" if blank else None, key,
                          mask))
    return len(sources)


def done_at_submit(conn: psycopg.Connection, job_id: int) -> int:
    """Items of a new job that are done already: blank sources, passed through at submit
    (docs/jobs.md), so submit does not call them queued."""
    return conn.execute(SQL["done_items"], {"id": job_id}).fetchone()[0]


def notify_workers(conn: psycopg.Connection) -> None:
    """Wake idle workers (they LISTEN; sent at commit, so they see the new items)."""
    conn.execute(SQL["notify_items"])


def listen_for_items(conn: psycopg.Connection) -> None:
    """Subscribe ``conn`` to the notifications :func:`notify_workers` sends."""
    conn.execute(SQL["listen_items"])


def lock_for_append(conn: psycopg.Connection, job_id: int) -> tuple[int, set[str]]:
    """Lock the job row (until the caller's transaction ends) and return the next item
    index and the content hashes it already holds: concurrent appends are serialised."""
    conn.execute(SQL["lock_job"], {"id": job_id})
    next_idx, hashes = conn.execute(SQL["sync_state"], {"id": job_id}).fetchone()
    return next_idx, set(hashes)


def append_new(conn: psycopg.Connection, job_id: int, max_attempts: int, texts: Sequence[str],
               references: Sequence[str | None] | None = None, *,
               keys: Sequence[str | None] | None = None,
               masked: Sequence[str | None] | None = None) -> tuple[int, int]:
    """Append the texts the job does not hold yet, inside the caller's transaction, the job
    row locked (:func:`lock_for_append`). A text is known by its source key when ``keys``
    are given (table sources), else by its content hash; blank texts are skipped (added once
    they have text); ``masked``: the texts with their inline codes as placeholders (CAT
    files). Returns (index of the first item added, number added): the one
    "append only new items" step of ``scoi job sync``, table sources and schedule runs."""
    next_idx, known = lock_for_append(conn, job_id)
    if keys is not None:
        known = {r[0] for r in conn.execute(SQL["known_keys"], {"job_id": job_id})}
    refs = references if references is not None else [None] * len(texts)
    marks = keys if keys is not None else [None] * len(texts)
    masks = masked if masked is not None else [None] * len(texts)
    new: list[tuple[str, str | None, str | None, str | None]] = []
    for text, ref, key, mask in zip(texts, refs, marks, masks):
        if not text:
            continue
        mark = key if keys is not None else source_hash(text)
        if mark in known:
            continue
        known.add(mark)
        new.append((text, ref, key, mask))
    if new:
        add_items(conn, job_id, next_idx, [t for t, _, _, _ in new],
                  [r for _, r, _, _ in new] if references is not None else None, max_attempts,
                  keys=[k for _, _, k, _ in new] if keys is not None else None,
                  masked=[m for _, _, _, m in new] if masked is not None else None)
    return next_idx, len(new)


def _job(row: dict[str, Any] | None) -> Job | None:
    return Job(**row) if row else None


def get_job(conn: psycopg.Connection, ref: str | int) -> Job:
    """The job with id or name ``ref``."""
    with conn.cursor(row_factory=dict_row) as cur:
        text = str(ref).strip()
        row = None
        if text.isdigit():
            row = cur.execute(SQL["job_by_id"], {"id": int(text)}).fetchone()
        else:
            row = cur.execute(SQL["job_by_name"], {"name": text}).fetchone()
    job = _job(row)
    if job is None:
        raise JobError(f"no job {ref!r} (give a job id or name; see `scoi job list`)")
    return job


def find_job_by_name(conn: psycopg.Connection, name: str) -> Job | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return _job(cur.execute(SQL["job_by_name"], {"name": name}).fetchone())


def list_jobs(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every job with its item counts by status (view ``job_progress``) and its done items
    by origin (``origins``: llm, tm)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(SQL["list_jobs"]).fetchall()
    origins = origin_counts(conn)
    for r in rows:
        r["origins"] = origins.get(r["job_id"], {"llm": 0, "tm": 0})
    return rows


def origin_counts(conn: psycopg.Connection, job_id: int | None = None) -> dict[int, dict[str, int]]:
    """Done items by origin (llm: the model wrote it; tm: an exact match's stored translation),
    per job (one job, or all)."""
    return {j: {"llm": llm, "tm": tm} for j, llm, tm in conn.execute(SQL["origin_counts"], {"id": job_id})}


#: The states of a running item's holder (view ``job_item_holder``): ``live``; ``dead``,
#: its session gone (the next claim takes the item); ``stuck``, alive but without heartbeat
#: for its stall timeout; ``unknown``, a holder that never registered (stall timeout only).
HOLDER_STATES = ("live", "dead", "stuck", "unknown")


def status(conn: psycopg.Connection, job_id: int, errors: int = 5) -> dict[str, Any]:
    """Progress of one job, with its latest scores, its running items by the state of
    their worker (``held_by``), a few of its errors (of the items' current attempts) and
    a few of its warnings (outputs cleaned to be stored) and of its undelivered items (outputs
    its table destination refused, with why), how many done items dropped examples
    of their selection to fit the model's context (``examples_dropped``), and ``qa``: the items whose
    answer broke their inline codes (CAT-file jobs), how many and the first few."""
    with conn.cursor(row_factory=dict_row) as cur:
        out = dict(cur.execute(SQL["job_progress"], {"id": job_id}).fetchone())
        out["errors"] = cur.execute(SQL["recent_errors"], {"id": job_id, "n": errors}).fetchall()
        out["warnings"] = cur.execute(SQL["recent_warnings"], {"id": job_id, "n": errors}).fetchall()
        out["delivery_errors"] = cur.execute(SQL["delivery_errors"], {"id": job_id, "n": errors}).fetchall()
        out["scores"] = cur.execute(SQL["latest_scores"], {"id": job_id}).fetchall()
        out["examples_dropped"] = cur.execute(SQL["examples_dropped"], {"id": job_id}).fetchone()
        out["qa"] = {"flagged": cur.execute(SQL["qa_count"], {"id": job_id}).fetchone()["n"],
                     "items": cur.execute(SQL["qa_flags"], {"id": job_id, "n": errors}).fetchall()}
        held = {r["holder_state"]: r["n"] for r in cur.execute(SQL["holder_counts"], {"id": job_id})}
    out["held_by"] = {state: held.get(state, 0) for state in HOLDER_STATES}
    out["origins"] = origin_counts(conn, job_id).get(job_id, {"llm": 0, "tm": 0})
    return out


def claim_items(conn: psycopg.Connection, worker: str, *, stall: float, n: int,
                job_id: int | None) -> list[tuple[int, int, str, int, str | None]]:
    """Claim up to ``n`` items: (job_id, idx, source, attempt, masked) rows (see ``claim``)."""
    return conn.execute(SQL["claim"], {"worker": worker, "stall": stall, "n": n, "job_id": job_id}).fetchall()


def fail_stalled(conn: psycopg.Connection, *, stall: float, job_id: int | None) -> None:
    """End failed the stalled items that have no attempt left."""
    conn.execute(SQL["fail_stalled"], {"stall": stall, "job_id": job_id})


def register_worker(conn: psycopg.Connection, worker: str, *, host: str, pid: int, key: int,
                    stall: float) -> bool:
    """Record the worker and take its liveness lock on ``conn`` (the connection it keeps for
    its lifetime): while that session lives, the worker's items are its own; once it ends
    (kill -9, lost machine) they are free at once. False: the lock is held by another session."""
    with conn.transaction():
        conn.execute(SQL["prune_workers"])
        return bool(conn.execute(SQL["register_worker"], {"worker": worker, "host": host, "pid": pid,
                                                          "key": key, "stall": stall}).fetchone()[0])


def unregister_worker(conn: psycopg.Connection, worker: str) -> None:
    """Remove a stopping worker's row (kept if it still holds items, see ``unregister_worker``)."""
    conn.execute(SQL["unregister_worker"], {"worker": worker})


def heartbeat(conn: psycopg.Connection, worker: str) -> None:
    """Keep the worker's claims alive."""
    conn.execute(SQL["heartbeat"], {"worker": worker})


def complete_items(conn: psycopg.Connection, worker: str, columns: dict[str, list[Any]]) -> list[tuple[int, int]]:
    """Store a batch's results (``columns``: the arrays of ``complete_items``); the rows
    actually written, i.e. still held under the worker's claim."""
    return conn.execute(SQL["complete_items"], {"worker": worker, **columns}).fetchall()


def cancelled_among(conn: psycopg.Connection, job_ids: list[int], idxs: list[int]) -> int:
    """How many of these items (job_ids[i], idxs[i]) are cancelled now (a worker's summary
    counts them apart from items lost to other workers)."""
    return conn.execute(SQL["cancelled_among"], {"job_ids": job_ids, "idxs": idxs}).fetchone()[0]


def fail_items(conn: psycopg.Connection, worker: str, columns: dict[str, list[Any]]) -> list[tuple[int, int, str]]:
    """Record a batch's failed attempts; (job_id, idx, new status) of the rows written."""
    return conn.execute(SQL["fail_items"], {"worker": worker, **columns}).fetchall()


def release_items(conn: psycopg.Connection, worker: str, *, uncount: bool, error: str | None) -> None:
    """Hand the worker's running items back to the queue (see ``release_items``)."""
    conn.execute(SQL["release_items"], {"worker": worker, "uncount": uncount, "error": error})


def scored_items(conn: psycopg.Connection, job_id: int) -> list[tuple[str, str | None, str, str, int]]:
    """(source, output, reference, status, idx) of the job's items that have a reference."""
    return conn.execute(SQL["eval_items"], {"id": job_id}).fetchall()


def insert_score(conn: psycopg.Connection, job_id: int, metric: str, score: float, signature: str, n: int,
                 segments: dict[int, float] | None = None) -> int:
    """Store a system score (and its per-item scores, by item idx); return its id."""
    score_id = conn.execute(SQL["insert_score"], {"id": job_id, "metric": metric, "score": score,
                                                  "signature": signature, "n": n}).fetchone()[0]
    if segments:
        conn.execute(SQL["insert_segment_scores"], {"score_id": score_id, "idxs": list(segments),
                                                    "scores": list(segments.values())})
    return score_id


def latest_segment_scores(conn: psycopg.Connection, job_id: int, metric: str) -> dict[int, float]:
    """Item idx -> score of the job's latest evaluation with ``metric`` that kept them."""
    return dict(conn.execute(SQL["latest_segment_scores"], {"id": job_id, "metric": metric}).fetchall())


def latest_score_rows(conn: psycopg.Connection, job_id: int) -> list[tuple[str, float, str, int, Any]]:
    """(metric, score, signature, n_items, created_at) of the job's latest scores."""
    return conn.execute(SQL["latest_scores"], {"id": job_id}).fetchall()


def retry(conn: psycopg.Connection, job_id: int, *, include_cancelled: bool = True) -> int:
    """Queue failed (and cancelled) items again with fresh attempts; the number queued.

    The job is reactivated only when items were queued again: ``--failed-only`` on a
    cancelled job without failed items must leave it cancelled (reactivating it made its
    cancelled items read as a finished job). Items not queued keep their status."""
    statuses = ["failed", "cancelled"] if include_cancelled else ["failed"]
    with conn.transaction():
        n = conn.execute(SQL["retry_items"], {"id": job_id, "statuses": statuses}).rowcount
        if n:
            conn.execute(SQL["set_job_status"], {"id": job_id, "status": "active"})
            notify_workers(conn)
    return n


def cancel(conn: psycopg.Connection, job_id: int) -> int:
    """Stop a job: its queued and running items become cancelled (``retry`` undoes it).

    A job with no queued or running item left has finished (a cancel racing its last items
    finds them done): its status stays as it is, so it does not read "cancelled" with every
    item done. Returns the number of items stopped."""
    with conn.transaction():
        n = conn.execute(SQL["cancel_items"], {"id": job_id}).rowcount
        if n:
            conn.execute(SQL["set_job_status"], {"id": job_id, "status": "cancelled"})
        return n


__all__ = ["HOLDER_STATES", "add_items", "append_new", "cancel", "claim_items", "complete_items", "connect", "fail_items", "fail_stalled", "find_job_by_name", "get_job", "heartbeat", "insert_job", "insert_score", "latest_score_rows", "latest_segment_scores", "list_jobs", "listen_for_items", "lock_for_append", "notify_workers", "register_worker", "release_items", "retry", "scored_items", "status", "unregister_worker"]
