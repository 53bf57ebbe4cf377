"""Table sources against a real server, in process: the query's session user is scoi_reader
on a connection of its own, and a slow schedule source holds no lock another worker waits
on. Other workers are checked with ``lock_timeout``: a lock wait
would be an error, not a delay."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import psycopg
import pytest

from scoi.jobs import schedules as S
from scoi.jobs.source_checks import SourceError, reader_url
from scoi.jobs.sources import Source, cancelled_on, read_query, read_source
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import claim_items, connect
from scoi.jobs.create import submit as submit_job

UTC = timezone.utc
SLOW = "SELECT id, body FROM documents WHERE pg_sleep(600) IS NOT NULL"


def spec() -> JobSpec:
    return JobSpec("fr", "en", model="openai:fake", method="zero", k=0)


@pytest.fixture()
def docs(db_url: str) -> str:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO documents VALUES (1, 'Le chat dort.'), (2, 'Il pleut.')")
        conn.execute("GRANT SELECT ON documents TO scoi_reader")
    return db_url


def test_the_source_session_user_is_the_reader(docs):
    """Not SET ROLE from a superuser session: the session user itself is scoi_reader."""
    assert read_query("SELECT session_user::text, current_user::text", reader_url(docs)) == \
        [("scoi_reader", "scoi_reader")]


def test_reader_url_from_the_environment(docs, monkeypatch):
    """SCOI_SOURCE_DATABASE_URL, when set, is where sources in scoi's database are read."""
    monkeypatch.setenv("SCOI_SOURCE_DATABASE_URL", "host=/nowhere dbname=x user=my_reader")
    assert reader_url(docs) == "host=/nowhere dbname=x user=my_reader"
    monkeypatch.delenv("SCOI_SOURCE_DATABASE_URL")
    assert "user=scoi_reader" in reader_url(docs) and "password" not in reader_url(docs + "&password=x")
    # Whatever it names must only read: the superuser scoi migrates with is refused.
    monkeypatch.setenv("SCOI_SOURCE_DATABASE_URL", docs)
    with pytest.raises(SourceError, match="'postgres' is a superuser"):
        read_source(Source("sql", query="SELECT id, body FROM documents"), docs)


def _wait_for_sleeping_source(url: str) -> int:
    """The pid of scoi_reader's backend once it sleeps in the source query."""
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(400):
            row = conn.execute("SELECT pid FROM pg_stat_activity WHERE usename = 'scoi_reader' AND state = 'active' "
                               "AND query LIKE '%%pg_sleep(600)%%'").fetchone()
            if row:
                return row[0]
            time.sleep(0.05)
    raise AssertionError("the source query never started")


def test_slow_schedule_source_blocks_no_other_worker(docs):
    """While one worker sits in a schedule's slow source query, another worker checking
    the same due tick skips it without waiting for a lock, and claims an unrelated job's
    items at once; the slow source, cancelled, is recorded as the run's error."""
    with connect(docs) as conn:
        S.add_schedule(conn, "slow", "* * * * *", spec(), Source("sql", query="SELECT id, body FROM documents",
                                                                  timeout=300), None, docs)
        conn.execute("UPDATE schedule SET created_at = %s", (datetime(2026, 11, 20, tzinfo=UTC),))
        conn.execute("UPDATE job_source SET query = %s", (SLOW,))
        other_job = submit_job(conn, JobSpec("fr", "en", model="openai:fake", method="zero", k=0, name="other"),
                               ["Bonjour.", "Merci."], None)
    now = datetime(2026, 11, 24, 12, 0, 30, tzinfo=UTC)
    results: list = []

    def first_worker() -> None:
        with connect(docs) as conn:
            results.extend(S.run_due(conn, "w1", now, docs))

    t = threading.Thread(target=first_worker)
    t.start()
    try:
        source_pid = _wait_for_sleeping_source(docs)
        with connect(docs) as conn:
            conn.execute("SET lock_timeout = '100ms'")  # a lock wait fails this test instead of delaying it
            conn.commit()
            assert S.run_due(conn, "w2", now, docs) == []  # the tick is being run: skipped, no wait
            claimed = claim_items(conn, "w2", stall=60, n=10, job_id=None)
            conn.commit()
        assert sorted((j, i) for j, i, *_ in claimed) == [(other_job, 0), (other_job, 1)]
    finally:
        with psycopg.connect(docs, autocommit=True) as admin:
            admin.execute("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'scoi_reader'")
        t.join(60)
    assert not t.is_alive()
    [run] = results
    assert run.added is None and run.error == "source query cancelled by another session (pg_cancel_backend)"
    assert source_pid
    with psycopg.connect(docs) as conn:
        assert conn.execute("SELECT count(*) FROM job_item i JOIN job j ON j.id = i.job_id "
                            "WHERE j.name = 'slow'").fetchone()[0] == 0


def test_a_timed_out_source_is_a_run_error(docs):
    """A tick whose source outlives its timeout records one line and adds nothing."""
    with connect(docs) as conn:
        S.add_schedule(conn, "slow", "* * * * *", spec(), Source("sql", query="SELECT id, body FROM documents",
                                                                  timeout=0.5), None, docs)
        conn.execute("UPDATE job_source SET query = %s", (SLOW,))
        r = S.run_now(conn, "slow", "me", docs)
    assert r.added is None and r.error.startswith("source query cancelled after 0.5 s (statement_timeout")


def test_multiple_statements_refused_in_read_query(docs):
    """The extended protocol refuses several statements whatever they are."""
    with pytest.raises(SourceError, match="more than one statement"):
        read_query("SELECT '1', 'a'; SELECT '2', 'b'", reader_url(docs))
    assert read_query("SELECT '1', 'a%';", reader_url(docs)) == [("1", "a%")]  # one statement, a literal %


def test_stopping_worker_cancels_its_source_and_leaves_the_tick(docs):
    """A worker told to stop (SIGTERM sets its stop event) cancels the source query it
    sits in at once, instead of waiting for the timeout; the tick is not recorded, so
    another worker runs it."""
    with connect(docs) as conn:
        S.add_schedule(conn, "slow", "* * * * *", spec(), Source("sql", query="SELECT id, body FROM documents",
                                                                  timeout=300), None, docs)
        conn.execute("UPDATE schedule SET created_at = %s", (datetime(2026, 11, 20, tzinfo=UTC),))
        conn.execute("UPDATE job_source SET query = %s", (SLOW,))
    now = datetime(2026, 11, 24, 12, 0, 30, tzinfo=UTC)
    stop = threading.Event()
    results: list = []
    logged: list[str] = []

    def stopping_worker() -> None:
        with connect(docs) as conn, cancelled_on(stop):
            results.extend(S.run_due(conn, "w1", now, docs, logged.append))

    t = threading.Thread(target=stopping_worker)
    t.start()
    try:
        _wait_for_sleeping_source(docs)
        stop.set()
        t.join(120)  # the source's own timeout is 300 s: only the cancel ends it before
    finally:
        with psycopg.connect(docs, autocommit=True) as admin:
            admin.execute("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'scoi_reader'")
        t.join(60)
    assert results == [] and any("left to another worker (stopping)" in m for m in logged), logged
    with connect(docs) as conn:
        assert conn.execute("SELECT count(*) FROM schedule_run").fetchone()[0] == 0
        conn.execute("UPDATE job_source SET query = 'SELECT id, body FROM documents'")
        [run] = S.run_due(conn, "w2", now, docs)
    assert (run.tick, run.added, run.error) == (datetime(2026, 11, 24, 12, 0, tzinfo=UTC), 2, None)


def test_a_source_whose_backend_is_terminated_is_one_line(docs):
    """A source query killed by an administrator is one clear line, not a traceback."""
    errors: list[str] = []

    def read() -> None:
        try:
            read_query(SLOW, reader_url(docs), 300)
        except SourceError as e:
            errors.append(str(e))

    t = threading.Thread(target=read)
    t.start()
    try:
        pid = _wait_for_sleeping_source(docs)
        with psycopg.connect(docs, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    finally:
        t.join(60)
    [error] = errors
    assert error.startswith("source query's connection was closed by the server") and "\n" not in error
