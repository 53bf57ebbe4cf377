"""Schedules and jobs over table rows against a real database, with an injected clock
(``run_due(..., now=...)``): one run per tick among concurrent workers, missed ticks
collapsed, runs recorded, only new keys added, table destinations upserted, bad queries
and tables refused with nothing changed, read-only and write roles honoured, another
database by URL from the environment. The model is the fake OpenAI-compatible server."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from scoi.jobs import schedules as S
from scoi.jobs.destinations import Destination
from scoi.jobs.sources import Source
from scoi.jobs.spec import JobError, JobSpec
from scoi.jobs.store import connect
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.database import fresh_database, scalar
from tests.helpers.jobs import items, ok_server

UTC = timezone.utc
CREATED = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
QUERY = "SELECT id, body FROM documents WHERE body IS NOT NULL"


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


@pytest.fixture()
def stub():
    with ok_server() as server:
        yield server


def spec_for(stub) -> JobSpec:
    return JobSpec("fr", "en", model="openai:stub", method="zero", k=0,
                   backend_options={"max_retries": 0, "base_url": stub.url})


def make_tables(url: str, rows=((1, "Bonjour."), (2, "Merci."), (3, None))) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("CREATE TABLE documents_en (id int PRIMARY KEY, body_en text, note text DEFAULT 'x')")
        for r in rows:
            conn.execute("INSERT INTO documents VALUES (%s, %s)", r)
        conn.execute("GRANT SELECT ON documents, documents_en TO scoi_reader")  # source queries run as it


def add(conn, url, stub, name="docs", query=QUERY, dest=None, cron="15 2 * * *", source_url=None):
    dest = dest if dest is not None else Destination("table", table="documents_en", key="id", column="body_en")
    out = S.add_schedule(conn, name, cron, spec_for(stub), Source("sql", query=query, url=source_url), dest or None,
                         url)
    conn.execute("UPDATE schedule SET created_at = %s WHERE name = %s", (CREATED, name))  # the injected past
    return out


def run_worker(url: str, job_id: int) -> None:
    """A burst worker on the schedule's job (a worker bound to a job runs no schedules: the
    tests' runs are the injected-clock ones)."""
    with Worker(url, WorkerOptions(burst=True, batch_size=4, job_id=job_id)) as w:
        w.run()


def runs(url: str, name: str = "docs") -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT r.tick, r.added, r.skipped, r.error FROM schedule_run r "
                            "JOIN schedule s ON s.id = r.schedule_id WHERE s.name = %s ORDER BY tick",
                            (name,)).fetchall()


def test_one_run_per_tick_however_many_workers(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub)["job_id"]
    now = at(21, 2, 20)
    n_workers = 4
    barrier = threading.Barrier(n_workers)
    results: list[list] = []

    def worker(i: int) -> None:
        with connect(db_url) as conn:
            barrier.wait()
            results.append(S.run_due(conn, f"w{i}", now, db_url))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    made = [r for rs in results for r in rs]
    assert len(made) == 1 and made[0].tick == at(21, 2, 15) and made[0].added == 2
    assert runs(db_url) == [(at(21, 2, 15), 2, 0, None)]
    assert [i["source_key"] for i in items(db_url, job_id)] == ["1", "2"]


def test_missed_ticks_run_once_and_each_run_is_recorded(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        add(conn, db_url, stub)
        assert S.run_due(conn, "w", at(20, 23, 0), db_url) == []  # before the first tick
        # Down until the 24th at noon: the ticks of the 21st to the 24th collapse into one run.
        [r] = S.run_due(conn, "w", at(24, 12, 0), db_url)
        assert (r.tick, r.added, r.skipped, r.error) == (at(24, 2, 15), 2, 0, None)
        assert S.run_due(conn, "w", at(24, 23, 59), db_url) == []
        conn.execute("INSERT INTO documents VALUES (4, 'Au revoir.')")
        [r] = S.run_due(conn, "w", at(25, 2, 15), db_url)
        assert (r.tick, r.added, r.skipped) == (at(25, 2, 15), 1, 2)
    assert runs(db_url) == [(at(24, 2, 15), 2, 0, None), (at(25, 2, 15), 1, 2, None)]


def test_only_keys_the_job_lacks_are_added(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub, query="SELECT id, body FROM documents")["job_id"]
        [r] = S.run_due(conn, "w", at(21, 3), db_url)
        assert (r.added, r.skipped) == (2, 1)  # id 3 has no text yet
        conn.execute("UPDATE documents SET body = 'Bonjour à tous.' WHERE id = 1")  # a known key: not again
        conn.execute("UPDATE documents SET body = 'Enfin.' WHERE id = 3")           # now it has text
        [r] = S.run_due(conn, "w", at(22, 3), db_url)
        assert (r.added, r.skipped) == (1, 2)
    got = items(db_url, job_id)
    assert [(i["idx"], i["source_key"], i["source"]) for i in got] == [
        (0, "1", "Bonjour."), (1, "2", "Merci."), (2, "3", "Enfin.")]


def test_table_destination_is_upserted_when_items_are_done(db_url, stub):
    make_tables(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO documents_en (id, body_en, note) VALUES (2, 'stale', 'kept')")
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub)["job_id"]
        S.run_due(conn, "w", at(21, 3), db_url)
    run_worker(db_url, job_id)
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT id, body_en, note FROM documents_en ORDER BY id").fetchall()
    outputs = {i["source_key"]: i["output"] for i in items(db_url, job_id)}
    assert rows == [(1, outputs["1"], "x"), (2, outputs["2"], "kept")]  # inserted, and updated in place
    assert all(o.startswith("ok ") for o in outputs.values())
    assert all(i["delivered_at"] is not None for i in items(db_url, job_id))
    with connect(db_url) as conn:
        show = S.show_schedule(conn, "docs")
    assert show["destination"]["pending"] == 0 and show["destination"]["last_error"] is None
    assert show["job"]["done"] == 2 and show["runs"][0]["added"] == 2


def test_schema_qualified_and_quoted_identifiers(db_url, stub):
    make_tables(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute('CREATE SCHEMA "Out Put"')
        conn.execute('CREATE TABLE "Out Put"."Docs; EN" ("Doc Id" int UNIQUE, "the ""text""" text)')
    dest = Destination("table", table='Out Put.Docs; EN', key="Doc Id", column='the "text"')
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub, dest=dest)["job_id"]
        S.run_due(conn, "w", at(21, 3), db_url)
    run_worker(db_url, job_id)
    assert scalar(db_url, 'SELECT count(*) FROM "Out Put"."Docs; EN" WHERE "the ""text""" LIKE \'ok %%\'') == 2


BAD_QUERIES = [
    ("SELECT id, body, id FROM documents", "returns 3 columns"),
    ("SELECT id FROM documents", "returns 1 columns"),
    ("SELECT body, id FROM documents", "second column 'id' is not text"),
    ("SELECT NULL::int, body FROM documents", "NULL key"),
    ("SELECT 1, body FROM documents", "returned the key '1' twice"),
    ("SELECT id, body FROM no_such_table", 'the source query failed: relation "no_such_table" does not exist'),
    ("WITH gone AS (DELETE FROM documents RETURNING id, body) SELECT * FROM gone",
     "in a read-only transaction"),
    ("UPDATE documents SET body = 'x' RETURNING id, body", "read-only transaction"),
    ("", "--source-sql is empty"),
]


@pytest.mark.parametrize("query,message", BAD_QUERIES)
def test_a_bad_source_query_is_a_clear_error_and_changes_nothing(db_url, stub, query, message):
    make_tables(db_url)
    with connect(db_url) as conn, pytest.raises(JobError, match=message.replace("(", r"\(").replace(")", r"\)")):
        add(conn, db_url, stub, query=query)
    assert scalar(db_url, "SELECT count(*) FROM schedule") == 0
    assert scalar(db_url, "SELECT count(*) FROM job") == 0
    assert scalar(db_url, "SELECT string_agg(id || ':' || coalesce(body, '-'), ',' ORDER BY id) FROM documents") \
        == "1:Bonjour.,2:Merci.,3:-"


def test_a_source_failing_at_a_tick_is_recorded_and_adds_nothing(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub)["job_id"]
        conn.execute("ALTER TABLE documents RENAME TO documents_old")
        [r] = S.run_due(conn, "w", at(21, 3), db_url)
        assert r.added is None and 'relation "documents" does not exist' in r.error
        assert items(db_url, job_id) == []
        conn.execute("ALTER TABLE documents_old RENAME TO documents")
        assert S.run_due(conn, "w", at(21, 4), db_url) == []  # that tick ran (and failed): the next one retries
        [r] = S.run_due(conn, "w", at(22, 3), db_url)
        assert (r.added, r.error) == (2, None)
    assert [e for *_, e in runs(db_url)][1] is None


@pytest.mark.parametrize("dest,message", [
    (Destination("table", table="nope", key="id", column="body_en"), "no such table"),
    (Destination("table", table="documents_en", key="id", column="nope"), "has no column 'nope'"),
    (Destination("table", table="documents_en", key="body_en", column="note"), "has no unique constraint"),
    (Destination("table", table="a.b.c", key="id", column="body_en"), "expected TABLE or SCHEMA.TABLE"),
    (Destination("table", table="documents_en", key="id", column="body_en",
                 url="postgresql://scoi:hunter2@db/scoi"), "holds a password"),
    (Destination("file", path="/no/such/dir/out.tsv", format="tsv"), "does not exist"),
])
def test_a_destination_that_cannot_receive_outputs_is_refused(db_url, stub, dest, message):
    make_tables(db_url)
    with connect(db_url) as conn, pytest.raises(JobError, match=message):
        add(conn, db_url, stub, dest=dest)
    assert scalar(db_url, "SELECT count(*) FROM job") == 0


def test_source_url_with_a_password_is_refused(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        for url in ("postgresql://u:secret@host/db", "host=h dbname=d password=secret"):
            with pytest.raises(JobError, match="holds a password, and secrets are never stored"):
                add(conn, db_url, stub, source_url=url)


def test_read_only_role_reads_the_source_and_a_role_without_write_is_refused(db_url, stub):
    make_tables(db_url)
    reader = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON documents, documents_en TO {reader}")
    try:
        # Logged in as the test superuser (peer authentication), acting as the role from the start.
        as_reader = make_conninfo(db_url, options=f"-c role={reader}")
        with connect(db_url) as conn:
            with pytest.raises(JobError, match="may not INSERT and UPDATE"):
                add(conn, db_url, stub, dest=Destination("table", table="documents_en", key="id",
                                                         column="body_en", url=as_reader))
            # A superuser session acting as the role could switch back: a source refuses it.
            with pytest.raises(JobError, match="'postgres' is a superuser"):
                add(conn, db_url, stub, source_url=as_reader)
            job_id = add(conn, db_url, stub, source_url=make_conninfo(db_url, user="scoi_reader"))["job_id"]
            [r] = S.run_due(conn, "w", at(21, 3), db_url)
            assert r.added == 2
        assert len(items(db_url, job_id)) == 2
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {reader}")
            conn.execute(f"DROP ROLE {reader}")


def test_source_and_destination_in_another_database_from_the_environment(db_url, server_url, stub, monkeypatch):
    with fresh_database(server_url) as other:
        make_tables(other)
        monkeypatch.setenv("DOCS_DB_URL", make_conninfo(other, user="scoi_reader"))  # the source reads as it
        monkeypatch.setenv("DOCS_OUT_URL", other)
        dest = Destination("table", table="documents_en", key="id", column="body_en", url="env:DOCS_OUT_URL")
        with connect(db_url) as conn:
            job_id = add(conn, db_url, stub, source_url="env:DOCS_DB_URL", dest=dest)["job_id"]
            assert scalar(db_url, "SELECT url FROM job_source WHERE job_id = %s", (job_id,)) == "env:DOCS_DB_URL"
            [r] = S.run_due(conn, "w", at(21, 3), db_url)
            assert r.added == 2
        run_worker(db_url, job_id)
        assert scalar(other, "SELECT count(*) FROM documents_en WHERE body_en LIKE 'ok %%'") == 2
        monkeypatch.delenv("DOCS_DB_URL")
        with connect(db_url) as conn:
            [r] = S.run_due(conn, "w", at(22, 3), db_url)
        assert "environment variable DOCS_DB_URL" in r.error


def test_paused_schedules_do_not_run_and_resume_with_one_run(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        add(conn, db_url, stub)
        S.set_paused(conn, "docs", True)
        assert S.run_due(conn, "w", at(23, 3), db_url) == []
        assert S.list_schedules(conn, at(23, 3))[0]["next_tick"] is None
        S.set_paused(conn, "docs", False)
        [r] = S.run_due(conn, "w", at(23, 3), db_url)
        assert r.tick == at(23, 2, 15)
        with pytest.raises(JobError, match="no schedule 'nope'"):
            S.set_paused(conn, "nope", True)


def test_a_failed_delivery_is_kept_and_retried(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub)["job_id"]
        S.run_due(conn, "w", at(21, 3), db_url)
        conn.execute("ALTER TABLE documents_en RENAME TO documents_en_away")
    run_worker(db_url, job_id)  # translated, but the destination is gone
    assert all(i["status"] == "done" and i["delivered_at"] is None for i in items(db_url, job_id))
    # the destination's fault, not the rows': no item is marked undelivered one by one
    assert scalar(db_url, "SELECT count(*) FROM job_item WHERE delivery_error IS NOT NULL") == 0
    with connect(db_url) as conn:
        dest = S.show_schedule(conn, "docs")["destination"]
        assert dest["pending"] == 2 and 'relation "documents_en" does not exist' in dest["last_error"]
        conn.execute("ALTER TABLE documents_en_away RENAME TO documents_en")
        S.run_due(conn, "w", at(21, 4), db_url)  # each check retries the pending deliveries
        dest = S.show_schedule(conn, "docs")["destination"]
    assert dest["pending"] == 0 and dest["last_error"] is None
    assert scalar(db_url, "SELECT count(*) FROM documents_en") == 2


def test_file_source_and_file_destination(db_url, stub, tmp_path, monkeypatch):
    monkeypatch.setenv("SCOI_DEST_DIR", str(tmp_path))  # the submitter's check and the worker's
    monkeypatch.setenv("SCOI_SOURCE_DIR", str(tmp_path))
    inbox = tmp_path / "inbox.fr"
    inbox.write_text("Bonjour.\nMerci.\n\n", encoding="utf-8")
    out = tmp_path / "inbox.en.tsv"
    with connect(db_url) as conn:
        job_id = S.add_schedule(conn, "inbox", "*/5 * * * *", spec_for(stub), Source("file", path=str(inbox)),
                                Destination("file", path=str(out), format="tsv"), db_url)["job_id"]
        r = S.run_now(conn, "inbox", "me", db_url)
        assert (r.added, r.skipped, r.manual) == (2, 1, True)
    run_worker(db_url, job_id)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("index\tsource\toutput") and len(lines) == 3
    inbox.write_text("Bonjour.\nMerci.\nEncore.\n", encoding="utf-8")
    with connect(db_url) as conn:
        assert S.run_now(conn, "inbox", "me", db_url).added == 1
    run_worker(db_url, job_id)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4
    assert all(i["delivered_at"] is not None for i in items(db_url, job_id))


def test_names_clash_and_removal_keeps_the_job(db_url, stub):
    make_tables(db_url)
    with connect(db_url) as conn:
        job_id = add(conn, db_url, stub)["job_id"]
        with pytest.raises(JobError, match="a job named 'docs' exists already"):
            add(conn, db_url, stub)
        with pytest.raises(JobError, match="bad cron expression"):
            add(conn, db_url, stub, name="other", cron="every night")
        S.run_due(conn, "w", at(21, 3), db_url)
        assert S.remove_schedule(conn, "docs") == job_id
        assert S.list_schedules(conn) == []
    assert scalar(db_url, "SELECT count(*) FROM schedule_run") == 0
    assert len(items(db_url, job_id)) == 2
