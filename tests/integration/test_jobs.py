"""The job worker's steps against a real database, in this process: claims, heartbeats
and stale claims, attempts, and a batch's prepare / generate / store, with the fake
OpenAI-compatible server as the model. Through the CLI: tests/e2e/test_jobs.py."""

from __future__ import annotations

import time

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.batch_items import Generated
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.fake_openai import closed_port
from tests.helpers.jobs import items, ok_server, prepared


def test_stale_claim_cannot_write_and_rewrite_is_a_noop(job_db):
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0), ["Un.", "Deux."])
    a = Worker(job_db, WorkerOptions(batch_size=1, stall_timeout=60), worker_id="A")
    b = Worker(job_db, WorkerOptions(batch_size=1, stall_timeout=1), worker_id="B")
    try:
        [ca] = a.claim()
        assert (ca.idx, ca.attempt) == (0, 1)
        with psycopg.connect(job_db, autocommit=True) as conn:  # A stops sending heartbeats
            conn.execute("UPDATE job_item SET heartbeat_at = now() - interval '5 s' WHERE locked_by = 'A'")
        [cb] = b.claim()
        assert (cb.idx, cb.attempt) == (0, 2)  # re-claimed: the stalled item comes first
        a.store([ca], [Generated(prepared(ca), "from A", "raw A", 1.0)], [], time.perf_counter(), 0.0)
        assert a.stats.lost == 1 and a.stats.done == 0  # A's late result is refused
        b.store([cb], [Generated(prepared(cb), "from B", "raw B", 1.0)], [], time.perf_counter(), 0.0)
        b.store([cb], [Generated(prepared(cb), "again", "raw", 1.0)], [], time.perf_counter(), 0.0)
        assert b.stats.done == 1 and b.stats.lost == 1  # writing twice changes nothing
    finally:
        a.close()
        b.close()
    got = items(job_db, job_id)[0]
    assert (got["status"], got["output"], got["locked_by"], got["attempts"]) == ("done", "from B", "B", 2)


def test_stalled_item_out_of_attempts_ends_failed(job_db):
    with psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, max_attempts=1),
                        ["Un."])
        conn.execute("UPDATE job_item SET status = 'running', attempts = 1, locked_by = 'dead', "
                     "heartbeat_at = now() - interval '1 hour' WHERE job_id = %s", (job_id,))
    with Worker(job_db, WorkerOptions(stall_timeout=5, burst=True)) as w:
        assert w.run().claimed == 0
    got = items(job_db, job_id)[0]
    assert got["status"] == "failed" and "worker dead stopped responding" in got["last_error"]


def test_worker_steps_prepare_generate_store(job_db):
    """The steps of a batch, one by one: prompts, answers (or errors keeping the prompt), rows."""
    from scoi.core.prompt import render_prompt

    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        ok_job = submit(conn, JobSpec("fr", "en", model="openai:stub", method="zero", k=0,
                                      backend_options={"max_retries": 0, "base_url": stub.url}), ["Bonjour.", "Merci."])
        port = closed_port()
        down = f"http://127.0.0.1:{port}/v1"
        down_job = submit(conn, JobSpec("fr", "en", model="openai:down", method="zero", k=0,
                                        backend_options={"max_retries": 0, "base_url": down}), ["Salut."])
        with Worker(job_db, WorkerOptions(batch_size=10), worker_id="W") as w:
            claimed = w.claim()
            assert [(c.job_id, c.idx) for c in claimed] == [(ok_job, 0), (ok_job, 1), (down_job, 0)]
            prep = w.prepare(ok_job, claimed[:2])
            assert prep.failed == [] and [p.item for p in prep.prepared] == claimed[:2]
            assert [p.prompt for p in prep.prepared] == [render_prompt(c.source, [], "fr", "en") for c in claimed[:2]]
            assert all(p.selection is None for p in prep.prepared)
            gen = w.generate(prep.job, prep.prepared)
            assert gen.failed == [] and gen.seconds > 0
            assert [g.output for g in gen.done] == [f"ok {len(p.prompt)}" for p in prep.prepared]
            down_prep = w.prepare(down_job, claimed[2:])
            down_gen = w.generate(down_prep.job, down_prep.prepared)
            [failed] = down_gen.failed
            assert down_gen.done == [] and failed.prepared is down_prep.prepared[0]
            assert "BackendError" in failed.error and str(port) in failed.error
            w.store(claimed, gen.done, down_gen.failed, time.perf_counter(), gen.seconds)
            assert (w.stats.done, w.stats.requeued, w.stats.lost) == (2, 1, 0)
    assert [i["status"] for i in items(job_db, ok_job)] == ["done", "done"]
    [again] = items(job_db, down_job)
    assert again["status"] == "queued" and again["prompt"] == down_prep.prepared[0].prompt
