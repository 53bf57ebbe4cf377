"""Table destinations checked when a job or schedule is made, and delivered row by row. A
destination that could never take an output is refused in one line with nothing stored; an output the
table refuses is ``undelivered`` with its error in ``job status`` / ``job list`` / --json,
and blocks none of the others."""

from __future__ import annotations


import psycopg

from tests.helpers.cli import last_json, refused, scoi_cli
from tests.helpers.database import scalar
from tests.helpers.jobs import ok_server, stub_model_args


def tables(url: str, *ddl: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO documents VALUES (1, 'Le chat dort.'), (7, 'Le chien court.')")
        conn.execute("CREATE TABLE documents_en (id int PRIMARY KEY, body_en text)")
        for statement in ddl:
            conn.execute(statement)
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO scoi_reader")


def submit(url: str, stub_url: str, query: str, table: str, key: str, column: str, *extra: str):
    return scoi_cli(["job", "submit", "--source-sql", query, "--src", "fr", "--tgt", "en", "--model", "openai:stub",
                     *stub_model_args(stub_url), "--dest-table", table, "--dest-key", key, "--dest-column", column,
                     *extra], url)


def no_job(url: str) -> None:
    assert scalar(url, "SELECT count(*) FROM job") == 0


def test_destination_column_must_take_text(db_url):
    """--dest-column of type integer is refused at submit (every delivery would fail)."""
    tables(db_url, "CREATE TABLE docs_int (id int PRIMARY KEY, n integer)")
    refused(submit(db_url, "http://127.0.0.1:9/v1", "SELECT id, body FROM documents", "docs_int", "id", "n"),
            "--dest-column n: docs_int.n is integer; expected a text column")
    no_job(db_url)


def test_key_and_column_must_differ(db_url):
    """--dest-key = --dest-column is refused at submit."""
    tables(db_url)
    refused(submit(db_url, "http://127.0.0.1:9/v1", "SELECT id, body FROM documents", "documents_en", "id", "id"),
            "--dest-key and --dest-column are both 'id'")
    no_job(db_url)


def test_undelivered_items_show_as_their_own_state(db_url):
    """An output the table refuses (here a CHECK constraint) leaves its item
    ``undelivered``, with the error, in job status, --json and job list; not ``done``."""
    tables(db_url, "ALTER TABLE documents_en ADD CHECK (id <> 7)")
    with ok_server() as stub:
        out = last_json(submit(db_url, stub.url, "SELECT id, body FROM documents", "documents_en", "id", "body_en",
                               "--name", "dst76", "--json"))
        assert out["items"] == 2
        summary = last_json(scoi_cli(["worker", "--burst", "--json"], db_url))
        assert summary["done"] == 2
    assert scalar(db_url, "SELECT string_agg(id::text, ',') FROM documents_en") == "1"
    st = last_json(scoi_cli(["job", "status", "dst76", "--json"], db_url))
    assert (st["state"], st["done"], st["undelivered"]) == ("undelivered", 1, 1)
    [err] = st["delivery_errors"]
    assert err["source_key"] == "7" and "violates check constraint" in err["delivery_error"]
    text = scoi_cli(["job", "status", "dst76"], db_url).stdout
    assert "undelivered" in text.splitlines()[0] and "item 1 [undelivered, key '7']" in text
    [row] = last_json(scoi_cli(["job", "list", "--json"], db_url))
    assert (row["state"], row["undelivered"]) == ("undelivered", 1)
    assert "undelivered" in scoi_cli(["job", "list"], db_url).stdout
    # Once the table takes it, the next delivery clears the state.
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE documents_en DROP CONSTRAINT documents_en_id_check")
    from scoi.jobs.destinations import deliver
    from scoi.jobs.store import connect

    with connect(db_url) as conn:
        assert deliver(conn, [st["job_id"]], db_url) == 1
        conn.commit()
    st = last_json(scoi_cli(["job", "status", "dst76", "--json"], db_url))
    assert (st["state"], st["done"], st["undelivered"], st["delivery_errors"]) == ("done", 2, 0, [])


def test_a_key_that_does_not_cast_is_refused_and_never_blocks_others(db_url):
    """A source key the key column's type does not take is refused at submit, naming it;
    one that arrives later (a schedule's tick) fails alone: the other rows are delivered."""
    tables(db_url, "CREATE TABLE inbox (k text PRIMARY KEY, body text)",
           "INSERT INTO inbox VALUES ('7', 'Le chien court.')")
    query = "SELECT 'abc'::text, 'Le chat dort.' UNION ALL SELECT '7', 'Le chien court.'"
    refused(submit(db_url, "http://127.0.0.1:9/v1", query, "documents_en", "id", "body_en"),
            "--dest-key id: the source key 'abc' is not a valid integer")
    no_job(db_url)
    with ok_server() as stub:
        added = scoi_cli(["schedule", "add", "inbox", "--cron", "15 2 * * *", "--src", "fr", "--tgt", "en",
                          "--model", "openai:stub", *stub_model_args(stub.url), "--source-sql",
                          "SELECT k, body FROM inbox", "--dest-table", "documents_en", "--dest-key", "id",
                          "--dest-column", "body_en"], db_url)
        assert added.returncode == 0, added.stderr
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("INSERT INTO inbox VALUES ('abc', 'Le chat dort.'), ('8', 'Il pleut.')")
        assert scoi_cli(["schedule", "run", "inbox"], db_url).returncode == 0
        last_json(scoi_cli(["worker", "--burst", "--json"], db_url))
    assert scalar(db_url, "SELECT string_agg(id::text, ',' ORDER BY id) FROM documents_en") == "7,8"
    st = last_json(scoi_cli(["job", "status", "inbox", "--json"], db_url))
    assert (st["state"], st["done"], st["undelivered"]) == ("undelivered", 2, 1)
    [err] = st["delivery_errors"]
    assert err["source_key"] == "abc" and 'invalid input syntax for type integer: "abc"' in err["delivery_error"]
    show = last_json(scoi_cli(["schedule", "show", "inbox", "--json"], db_url))
    assert show["job"]["undelivered"] == 1
    assert "1 of the outputs were not delivered" in show["destination"]["last_error"]


def test_keys_equal_once_cast_are_refused(db_url):
    """Keys 1.0 and 1.00 are one numeric value: refused at submit, naming both."""
    tables(db_url, "CREATE TABLE docs_num (id numeric PRIMARY KEY, body_en text)")
    query = "SELECT '1.0'::text, 'Le chat dort.' UNION ALL SELECT '1.00', 'Le chien court.'"
    refused(submit(db_url, "http://127.0.0.1:9/v1", query, "docs_num", "id", "body_en"),
            "the source keys '1.0' and '1.00' are the same numeric value in docs_num.id")
    no_job(db_url)
    # Distinct values of the key's type pass (and '7' goes into an integer key).
    with ok_server() as stub:
        ok = submit(db_url, stub.url, "SELECT '1.0'::text, 'Le chat dort.' UNION ALL SELECT '1.5', 'Il pleut.'",
                    "docs_num", "id", "body_en", "--json")
        assert last_json(ok)["items"] == 2
