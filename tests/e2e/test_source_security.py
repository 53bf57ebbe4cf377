"""Table sources that cannot write, escape or hang, through the CLI (``job submit``,
``schedule add``, ``schedule run``): each attack fails with one line, and the table, file or
session it targets is untouched. Source queries run as the role scoi_reader on a connection of their own."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.helpers.cli import refused, run_scoi, scoi_cli
from tests.helpers.database import scalar

DOCS = "SELECT id, body FROM documents"


@pytest.fixture()
def docs(db_url: str) -> str:
    """A database with documents (granted to scoi_reader, as the README says) and a canary
    table nobody granted."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE documents (id int PRIMARY KEY, body text)")
        conn.execute("CREATE TABLE documents_en (id int PRIMARY KEY, body_en text)")
        conn.execute("INSERT INTO documents VALUES (1, 'Le chat dort.'), (2, 'Il pleut.')")
        conn.execute("CREATE TABLE canary (x int)")
        conn.execute("INSERT INTO canary VALUES (1)")
        conn.execute("GRANT SELECT ON documents, documents_en TO scoi_reader")
    return db_url


@pytest.fixture()
def server_dir():
    """A folder the server's account could write (mode 0777): an attack that reached the
    file system would leave a file here."""
    folder = Path(tempfile.mkdtemp(prefix="scoi-attack-"))
    folder.chmod(0o777)
    yield folder
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()


def submit(url: str, query: str, *extra: str):
    return scoi_cli(["job", "submit", "--source-sql", query, "--src", "fr", "--tgt", "en", "--model", "openai:fake",
                     "--method", "zero", "-k", "0", *extra], url)


def canary(url: str) -> list[int]:
    return [x for (x,) in psycopg.connect(url).execute("SELECT x FROM canary ORDER BY x").fetchall()]


def no_job(url: str) -> None:
    assert scalar(url, "SELECT count(*) FROM job") == 0
    assert scalar(url, "SELECT count(*) FROM job_item") == 0


def test_commit_injection_refused(docs):
    """`...; COMMIT; DROP TABLE canary; ...` in job submit: one statement only."""
    proc = submit(docs, f"{DOCS}; COMMIT; DROP TABLE canary; {DOCS}", "--name", "src6")
    refused(proc, "more than one statement")
    assert canary(docs) == [1]
    no_job(docs)


def test_rollback_injection_refused(docs):
    """`...; ROLLBACK; INSERT INTO canary VALUES (42); ...` in job submit."""
    proc = submit(docs, f"{DOCS}; ROLLBACK; INSERT INTO canary VALUES (42); {DOCS}")
    refused(proc, "more than one statement")
    assert canary(docs) == [1]
    no_job(docs)
    # One statement that writes is refused too (read-only transaction, and no grant).
    refused(submit(docs, "INSERT INTO canary VALUES (43) RETURNING x::text, 'a'"), "read-only transaction")
    assert canary(docs) == [1]


def test_injection_in_schedule_add_and_run(docs):
    """Schedule add with an injected query fails and inserts nothing, also when the add
    would have failed later anyway (missing destination); a schedule whose stored query is
    an injection (stored before this check, or by hand) runs without a write at every run."""
    inject = f"{DOCS}; COMMIT; INSERT INTO canary VALUES (777); SELECT 1"
    base = ["schedule", "add", "--cron", "15 2 * * *", "--src", "fr", "--tgt", "en", "--model", "openai:fake",
            "--method", "zero", "-k", "0"]
    refused(scoi_cli([*base[:2], "inj1", *base[2:], "--source-sql", inject, "--dest-table", "nosuch",
                      "--dest-key", "id", "--dest-column", "body_en"], docs), "more than one statement")
    refused(scoi_cli([*base[:2], "inj2", *base[2:], "--source-sql", inject], docs), "more than one statement")
    assert canary(docs) == [1]
    assert scalar(docs, "SELECT count(*) FROM schedule") == 0
    # A schedule added with a good query, its stored query then replaced by the injection.
    proc = scoi_cli([*base[:2], "inj3", *base[2:], "--source-sql", DOCS], docs)
    assert proc.returncode == 0, proc.stderr
    with psycopg.connect(docs, autocommit=True) as conn:
        conn.execute("UPDATE job_source SET query = %s", (inject,))
    for _ in range(2):
        refused(scoi_cli(["schedule", "run", "inj3"], docs), "more than one statement")
    assert canary(docs) == [1]
    assert scalar(docs, "SELECT count(*) FROM schedule_run WHERE error LIKE '%%more than one statement%%'") == 2


@pytest.mark.parametrize("query", [
    "COPY (SELECT 1) TO PROGRAM 'id > {out}'; SELECT id, body FROM documents",
    "COPY (SELECT 1) TO PROGRAM 'id > {out}'",
])
def test_copy_to_program_refused(docs, server_dir, query):
    """COPY ... TO PROGRAM (behind a second statement, or alone) runs no command."""
    out = server_dir / "id.txt"
    line = refused(submit(docs, query.format(out=out)))
    assert "more than one statement" in line or "permission denied to COPY to or from an external program" in line
    assert not out.exists()
    no_job(docs)


@pytest.mark.parametrize("query", [
    "COPY (SELECT 'copied') TO '{out}'; SELECT id, body FROM documents",
    "COPY (SELECT 'copied') TO '{out}'",
])
def test_copy_to_file_refused(docs, server_dir, query):
    """COPY ... TO 'file' writes no server file."""
    out = server_dir / "copied.txt"
    line = refused(submit(docs, query.format(out=out)))
    assert "more than one statement" in line or "permission denied to COPY to a file" in line
    assert not out.exists()
    no_job(docs)


@pytest.mark.parametrize("function", ["pg_read_file('/etc/passwd')", "pg_read_binary_file('/etc/passwd')::text",
                                      "pg_ls_dir('/')", "lo_import('/etc/passwd')::text"])
def test_server_file_functions_refused(docs, function):
    """Pg_read_file and its kin read no server file: nothing becomes a job item."""
    refused(submit(docs, f"SELECT 'passwd', {function}"), "permission denied for function")
    no_job(docs)


def test_terminate_backend_refused(docs):
    """Pg_terminate_backend from a source kills no other session; one line, no traceback."""
    with psycopg.connect(docs, autocommit=True) as victim:
        pid = victim.info.backend_pid
        for query in ("SELECT pid::text, pg_terminate_backend(pid)::text FROM pg_stat_activity "
                      "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
                      f"SELECT 'k', pg_terminate_backend({pid})::text",
                      f"SELECT 'k', pg_cancel_backend({pid})::text"):
            line = refused(submit(docs, query))
            assert "permission denied" in line or "no rows with text" in line, line
        assert victim.execute("SELECT 1").fetchone() == (1,)  # still alive
    no_job(docs)


def test_slow_source_cancelled_by_its_timeout(docs):
    """Pg_sleep(600) in a source is cancelled by statement_timeout (--source-timeout), the
    command says so in one line, and no backend is left sleeping."""
    proc = run_scoi(["job", "submit", "--source-sql", "SELECT '1', pg_sleep(600)::text", "--src", "fr", "--tgt",
                     "en", "--model", "openai:fake", "--method", "zero", "-k", "0", "--source-timeout", "1"],
                    docs, timeout=120)
    refused(proc, "source query cancelled after 1 s (statement_timeout")
    no_job(docs)
    for _ in range(100):  # the backend goes with the closed connection (asynchronously)
        left = scalar(docs, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%%pg_sleep(600)%%' "
                            "AND pid <> pg_backend_pid()")
        if left == 0:
            break
        time.sleep(0.05)
    assert left == 0


def test_timeout_is_stored_and_bounded(docs):
    """A schedule keeps its --source-timeout for every run; nonsense timeouts are refused."""
    refused(submit(docs, DOCS, "--source-timeout", "0"), "--source-timeout 0")
    refused(submit(docs, DOCS, "--source-timeout", "nan"), "--source-timeout")
    proc = scoi_cli(["schedule", "add", "s", "--cron", "15 2 * * *", "--src", "fr", "--tgt", "en", "--model",
                     "openai:fake", "--method", "zero", "-k", "0", "--source-sql", DOCS, "--source-timeout", "2.5"],
                    docs)
    assert proc.returncode == 0, proc.stderr
    assert scalar(docs, "SELECT timeout_s FROM job_source") == 2.5
    proc = submit(docs, DOCS, "--name", "j")
    assert proc.returncode == 0, proc.stderr
    assert scalar(docs, "SELECT timeout_s FROM job_source j JOIN job ON job.id = j.job_id WHERE name = 'j'") == 30


def test_set_role_escape_refused(docs):
    """The query's session user is scoi_reader itself, so set_config('role', ...) or
    session_authorization cannot switch back to a superuser."""
    for setting in ("role", "session_authorization"):
        line = refused(submit(docs, f"SELECT set_config('{setting}', 'postgres', false), body FROM documents"))
        assert "permission denied to set" in line, line
    no_job(docs)


def test_source_reads_only_granted_tables(docs):
    """A table not granted to scoi_reader is not readable; the error says how to grant."""
    refused(submit(docs, "SELECT x::text, 'a' FROM canary"), "permission denied for table canary",
            "GRANT SELECT ON the_table TO scoi_reader")
    no_job(docs)


def test_source_url_of_a_superuser_is_refused(docs):
    """--source-url follows the same rules: its role must only read."""
    from psycopg.conninfo import make_conninfo

    line = refused(submit(docs, DOCS, "--source-url", make_conninfo(docs, user="postgres")), "is a superuser")
    assert "scoi_reader" in line
    no_job(docs)
    ok = submit(docs, DOCS, "--source-url", make_conninfo(docs, user="scoi_reader"), "--json")
    assert ok.returncode == 0, ok.stderr
    # Multi-statement and timeouts hold there too.
    refused(submit(docs, f"{DOCS}; DROP TABLE canary; {DOCS}", "--source-url", make_conninfo(docs, user="scoi_reader")),
            "more than one statement")
    assert canary(docs) == [1]


def test_reader_role_exists_once_and_is_harmless(docs):
    """The migration made scoi_reader (once per server, whatever the number of databases):
    no superuser, no power roles, read-only by default."""
    with psycopg.connect(docs) as conn:
        row = conn.execute("SELECT rolsuper, rolcreaterole, rolcreatedb, rolcanlogin, rolconfig FROM pg_roles "
                           "WHERE rolname = 'scoi_reader'").fetchone()
        members = conn.execute("SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member "
                               "WHERE r.rolname = 'scoi_reader'").fetchone()[0]
    assert row[:4] == (False, False, False, True) and "default_transaction_read_only=on" in row[4]
    assert members == 0
    assert os.geteuid() != 0 or "scoi_reader" in scalar(docs, "SELECT string_agg(map_name || ' ' || sys_name || ' ' "
                                                              "|| pg_username, ',') FROM pg_ident_file_mappings")
