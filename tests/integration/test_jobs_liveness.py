"""A dead worker's items are free at once (real embedded PostgreSQL,
workers in this process). A worker's liveness is its session: each holds an advisory
lock on a connection of its own, and here that session is ended by the server
(pg_terminate_backend), as when the process is killed or its machine is lost. The
subprocess version (SIGKILL, then ``scoi worker --burst``): tests/e2e/test_jobs.py."""

from __future__ import annotations

import time

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import status
from scoi.jobs.batch_items import Generated
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.jobs import items, prepared


def _submit(url: str, lines: list[str], max_attempts: int = 3) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return submit(conn, JobSpec("fr", "en", model="openai:none", method="zero", k=0, max_attempts=max_attempts),
                      lines)


def _end_session(url: str, worker: str) -> None:
    """End the worker's liveness session on the server, as its death would."""
    with psycopg.connect(url, autocommit=True) as conn:
        pids = conn.execute("SELECT l.pid FROM pg_locks l JOIN job_worker w ON l.locktype = 'advisory' "
                            "AND l.classid = w.lock_space::oid AND l.objid = w.lock_key::oid AND l.objsubid = 2 "
                            "WHERE w.id = %s AND l.granted", (worker,)).fetchall()
        assert len(pids) == 1, pids
        assert conn.execute("SELECT pg_terminate_backend(%s, 5000)", pids[0]).fetchone()[0]


def _held(url: str, job_id: int) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return status(conn, job_id)["held_by"]


def test_a_dead_workers_items_are_claimed_at_once_and_its_late_result_is_refused(job_db):
    job_id = _submit(job_db, ["Un.", "Deux.", "Trois."])
    a = Worker(job_db, WorkerOptions(batch_size=2, stall_timeout=300), worker_id="A")
    b = Worker(job_db, WorkerOptions(batch_size=3, stall_timeout=300), worker_id="B")
    try:
        held_by_a = a.claim()
        assert [c.idx for c in held_by_a] == [0, 1]
        assert _held(job_db, job_id) == {"live": 2, "dead": 0, "stuck": 0, "unknown": 0}
        assert [c.idx for c in b.claim()] == [2]  # A is alive: its items are not B's
        _end_session(job_db, "A")
        assert _held(job_db, job_id)["dead"] == 2
        taken = b.claim()  # at once: a dead worker's items wait for no stall timeout (300 s here)
        assert [(c.idx, c.attempt) for c in taken] == [(0, 2), (1, 2)]
        rows = items(job_db, job_id)
        assert all(r["locked_by"] == "B" and "worker A died" in r["last_error"] for r in rows[:2])
        # A, presumed dead, comes back and tries to write: refused, nothing written twice.
        a.store(held_by_a, [Generated(prepared(c), "from A", "raw A", 1.0) for c in held_by_a], [],
                time.perf_counter(), 0.0)
        assert (a.stats.done, a.stats.lost) == (0, 2)
        b.store(taken, [Generated(prepared(c), "from B", "raw B", 1.0) for c in taken], [], time.perf_counter(), 0.0)
        assert (b.stats.done, b.stats.lost) == (2, 0)
    finally:
        a.close()
        b.close()
    rows = items(job_db, job_id)
    assert [(r["status"], r["output"], r["attempts"], r["last_error"]) for r in rows[:2]] == [
        ("done", "from B", 2, None), ("done", "from B", 2, None)]


def test_an_item_that_kills_every_worker_stops_after_max_attempts(job_db):
    """The dead holder's attempt counts: with max_attempts = 2, two deaths end the item failed."""
    job_id = _submit(job_db, ["Poison."], max_attempts=2)
    for name in ("A", "B"):
        w = Worker(job_db, WorkerOptions(batch_size=1), worker_id=name)
        try:
            assert len(w.claim()) == 1
            _end_session(job_db, name)
        finally:
            w.close()
    with Worker(job_db, WorkerOptions(burst=True), worker_id="C") as c:
        assert c.run().claimed == 0
    [row] = items(job_db, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 2)
    assert row["last_error"] == "worker B died (its database session ended) on attempt 2 of 2"


def test_a_live_but_stuck_worker_keeps_the_stall_timeout(job_db):
    job_id = _submit(job_db, ["Un."])
    a = Worker(job_db, WorkerOptions(batch_size=1, stall_timeout=2), worker_id="A")
    b = Worker(job_db, WorkerOptions(batch_size=1, stall_timeout=60), worker_id="B")
    try:
        assert len(a.claim()) == 1
        with psycopg.connect(job_db, autocommit=True) as conn:  # A is alive but sends no heartbeat
            conn.execute("UPDATE job_item SET heartbeat_at = now() - interval '10 s' WHERE locked_by = 'A'")
        assert _held(job_db, job_id) == {"live": 0, "dead": 0, "stuck": 1, "unknown": 0}
        assert b.claim() == []  # stuck for A's own timeout, not for B's 60 s
        with psycopg.connect(job_db, autocommit=True) as conn:
            conn.execute("UPDATE job_item SET heartbeat_at = now() - interval '61 s' WHERE locked_by = 'A'")
        [cb] = b.claim()
        assert (cb.idx, cb.attempt) == (0, 2)
        assert "worker A stopped responding" in items(job_db, job_id)[0]["last_error"]
    finally:
        a.close()
        b.close()


def test_workers_register_and_leave_no_rows_behind(job_db):
    job_id = _submit(job_db, ["Un."])

    def workers() -> set[str]:
        with psycopg.connect(job_db) as conn:
            return {r[0] for r in conn.execute("SELECT id FROM job_worker_state WHERE alive")}

    with Worker(job_db, WorkerOptions(), worker_id="clean"):
        assert workers() == {"clean"}
    assert workers() == set()
    dead = Worker(job_db, WorkerOptions(batch_size=1), worker_id="dead")
    try:
        dead.claim()
        _end_session(job_db, "dead")
        with Worker(job_db, WorkerOptions(), worker_id="next"), psycopg.connect(job_db) as conn:
            # the dead one holds an item: kept
            assert conn.execute("SELECT count(*) FROM job_worker WHERE id = 'dead'").fetchone()[0] == 1
        with psycopg.connect(job_db, autocommit=True) as conn:
            conn.execute("UPDATE job_item SET status = 'cancelled' WHERE job_id = %s", (job_id,))
        with Worker(job_db, WorkerOptions(), worker_id="later"), psycopg.connect(job_db) as conn:
            # it holds nothing now: pruned
            assert conn.execute("SELECT count(*) FROM job_worker WHERE id = 'dead'").fetchone()[0] == 0
    finally:
        dead.close()


def test_prefetch_selects_the_same_examples_and_hands_back_the_next_batch_on_stop(job_db):
    """With prefetch the next batch's examples are selected while this
    one generates; the prompts are the ones the sequential loop builds, and a worker that
    stops keeps no prefetched item (their attempts are not counted)."""
    from tests.helpers.jobs import demo_test_pairs, ok_server

    sources = [fr for fr, _ in demo_test_pairs()[:10]]
    prompts = {}
    with ok_server(delay=0.05) as stub, psycopg.connect(job_db, autocommit=True) as conn:
        for prefetch in (False, True):
            spec = JobSpec("fr", "en", model="openai:stub", k=2, name=f"p{prefetch}",
                           backend_options={"max_retries": 0, "base_url": stub.url})
            job_id = submit(conn, spec, sources)
            with Worker(job_db, WorkerOptions(batch_size=3, burst=True, job_id=job_id, prefetch=prefetch)) as w:
                assert w.run().done == len(sources)
            prompts[prefetch] = [(r["prompt"], r["attempts"]) for r in items(job_db, job_id)]
        assert prompts[True] == prompts[False]
        assert all(a == 1 for _, a in prompts[True])

        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", k=2, name="stop",
                                      backend_options={"max_retries": 0, "base_url": stub.url}), sources)
        with Worker(job_db, WorkerOptions(batch_size=3, job_id=job_id)) as w:
            store_batch = w.store  # stop once the first batch is stored, with the second one prefetched

            def store_then_stop(*args, **kwargs):
                store_batch(*args, **kwargs)
                w.request_stop()

            w.store = store_then_stop
            stats = w.run()
    rows = items(job_db, job_id)
    # batches ramp up 1, 2, 3: the first (one item) was stored, the prefetched second handed back
    assert [r["status"] for r in rows] == ["done"] * 1 + ["queued"] * 9
    assert all(r["attempts"] == 0 for r in rows[1:]) and stats.claimed == 3


def test_a_worker_whose_session_is_cut_takes_its_lock_again(job_db):
    """A live worker whose liveness connection is lost (server restart, network) reads as
    dead only until its next heartbeat, which reconnects and takes the lock again."""
    import threading

    def alive() -> bool:
        with psycopg.connect(job_db) as conn:
            row = conn.execute("SELECT alive FROM job_worker_state WHERE id = 'W'").fetchone()
        return bool(row and row[0])

    with Worker(job_db, WorkerOptions(heartbeat_seconds=0.2, poll_seconds=0.2), worker_id="W") as w:
        runner = threading.Thread(target=w.run)
        runner.start()
        try:
            _end_session(job_db, "W")
            deadline = time.monotonic() + 10
            while not alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert alive()
        finally:
            w.request_stop()
            runner.join(timeout=30)
    assert not alive()
