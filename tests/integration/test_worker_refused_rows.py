"""Whatever else the database refuses in a worker's batch (real embedded
PostgreSQL, the worker in this process), only the item holding it fails. The rest of
the jobs' handling of what models and users send, through the CLI:
tests/e2e/test_job_outputs_retries_and_keys.py."""

from __future__ import annotations

import time

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.batch_items import Generated
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.jobs import items, prepared


def test_a_result_the_database_refuses_fails_alone(job_db):
    """Whatever else the database refuses (e.g. a character its encoding lacks), only the
    item holding it fails, with the reason; the rest of the batch is stored."""
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0), ["Un.", "Deux.", "Trois."])
    with Worker(job_db, WorkerOptions(batch_size=3), worker_id="W") as w:
        claimed = w.claim()
        bad = Generated(prepared(claimed[1]), "bad\x00", "bad\x00", 1.0)  # not cleaned: as if generate missed it
        w.store(claimed, [Generated(prepared(claimed[0]), "one", "one", 1.0), bad,
                          Generated(prepared(claimed[2]), "three", "three", 1.0)], [], time.perf_counter(), 0.0)
        assert (w.stats.done, w.stats.requeued, w.stats.lost) == (2, 1, 0)
    got = items(job_db, job_id)
    assert [(i["status"], i["output"]) for i in got] == [("done", "one"), ("queued", None), ("done", "three")]
    assert "could not be stored" in got[1]["last_error"] and "0x00" in got[1]["last_error"]
