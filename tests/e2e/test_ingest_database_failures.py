"""``scoi ingest`` when its database fails under it: the server killed mid-run, a full
disk. Each ends with one line naming the cause (no traceback), a non-zero exit, whole
batches stored, and the run listed as dead (its session is gone) or failed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from tests.helpers.cli import last_json, run_scoi
from tests.helpers.ingest import DEMO, assert_consistent

pytestmark = pytest.mark.filterwarnings("ignore:.*XDG_RUNTIME_DIR")


def scoi_at(home: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """``scoi ARGS`` with its own embedded server in ``home`` (no SCOI_DATABASE_URL)."""
    return subprocess.run([sys.executable, "-m", "scoi.cli.main", *args], env=home_env(home), check=False,
                          capture_output=True, text=True, timeout=300, **kwargs)


def home_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SCOI_DATABASE_URL"}
    env["SCOI_HOME"] = str(home)
    return env


@pytest.fixture()
def home():
    """A SCOI_HOME of this test's own (below a folder open to other users, which the
    embedded server needs when run as root); its server is stopped after."""
    base = Path(tempfile.mkdtemp(prefix="scoi-dbfail-"))
    base.chmod(0o755)
    path = base / "home"
    yield path
    if path.exists():
        scoi_at(path, "db", "stop")
    shutil.rmtree(base, ignore_errors=True)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.slow
def test_ingest_whose_database_server_is_killed_says_so_in_one_line_and_the_run_reads_dead(home):
    started = scoi_at(home, "db", "status", "--json")
    assert started.returncode == 0, started.stderr
    data_dir = Path(last_json(started)["data_dir"])
    assert scoi_at(home, "db", "upgrade").returncode == 0
    url = f"postgresql://postgres@/scoi?host={data_dir}"
    args = [str(DEMO), "--src", "fr", "--tgt", "en", "--batch-size", "20", "--workers", "1"]
    proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "ingest", *args], env=home_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, committed = time.monotonic() + 240, 0
        while committed == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            with psycopg.connect(url) as conn:
                committed = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
        assert proc.poll() is None, "the ingest must still be running when its server is killed"
        postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert "Traceback" not in stderr
    (line,) = error_lines(stderr)
    assert line.startswith("error: the database failed during the ingest: ") and "rerun" in line
    assert "\\n" not in line  # libpq's multi-line text folded, not escaped

    # The next command starts the server again (or, while the killed one's backends are
    # still exiting, says in one line that it cannot open it).
    for _ in range(20):
        runs = scoi_at(home, "ingest-runs", "--json")
        if runs.returncode == 0:
            break
        (line,) = error_lines(runs.stderr)
        assert line.startswith("error: cannot open the database: ") and "\\n" not in line
        time.sleep(1)
    assert runs.returncode == 0, runs.stderr
    (run,) = last_json(runs)
    assert run["state"] == "dead" and 0 < run["inserted"] < 307 and run["inserted"] % 20 == 0
    check = scoi_at(home, "db", "check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.fixture()
def full_disk_tables(db_url):
    """``db_url`` with the tables an ingest fills (sentence, pair, bm25_doc) on a 256 kB
    tmpfs: a real "No space left on device" part-way through an ingest of the demo corpus.
    Needs root (mount) and the test server on this machine."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with psycopg.connect(db_url, autocommit=True) as conn:
        data_dir = Path(conn.execute("SHOW data_directory").fetchone()[0])
    if not data_dir.is_dir():
        pytest.skip("the test server's data directory is not on this machine")
    base = Path(tempfile.mkdtemp(prefix="scoi-full-"))
    base.chmod(0o755)
    mount = base / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=False).returncode:
        shutil.rmtree(base)
        pytest.skip("cannot mount a tmpfs here")
    location = mount / "space"
    location.mkdir()
    owner = data_dir.stat()
    os.chown(location, owner.st_uid, owner.st_gid)
    location.chmod(0o700)
    name = f"tiny_{os.getpid()}"
    tables = ("sentence", "pair", "bm25_doc")
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(sql.Identifier(name),
                                                                              sql.Literal(str(location))))
            for table in tables:
                conn.execute(sql.SQL("ALTER TABLE {} SET TABLESPACE {}").format(sql.Identifier(table),
                                                                                sql.Identifier(name)))
        yield db_url
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            for table in tables:
                conn.execute(sql.SQL("ALTER TABLE {} SET TABLESPACE pg_default").format(sql.Identifier(table)))
            conn.execute(sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(name)))
        subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_ingest_onto_a_full_disk_says_so_in_one_line_and_keeps_whole_batches(full_disk_tables):
    url = full_disk_tables
    proc = run_scoi(["ingest", str(DEMO), "--src", "fr", "--tgt", "en", "--batch-size", "20", "--workers", "0"], url)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    (line,) = error_lines(proc.stderr)
    assert line.startswith("error: the database failed during the ingest: could not extend file")
    assert "No space left on device" in line and "free space on the database server's disk" in line
    with psycopg.connect(url) as conn:
        pairs = conn.execute("SELECT count(*) FROM pair").fetchone()[0]
        status, error, inserted = conn.execute("SELECT status, error, inserted FROM ingest_run").fetchone()
    assert pairs % 20 == 0 and 0 < pairs == inserted < 307  # whole batches only, counted with them
    assert status == "failed" and "No space left on device" in error
    assert_consistent(url)


def test_an_unreachable_database_is_reported_on_one_line():
    proc = run_scoi(["ingest-runs"], "postgresql://scoi@127.0.0.1:1/scoi")  # nothing listens on port 1
    assert proc.returncode == 1
    (line,) = error_lines(proc.stderr)
    assert line.startswith("error: cannot open the database: ")
    assert "Connection refused Is the server running" in line and "\\n" not in line and "\\t" not in line


@pytest.mark.slow
def test_the_first_command_after_the_server_was_killed_starts_it_again(home):
    """kill -9 of the embedded postmaster: the next command (not the one after) starts the
    server again, although the dead server's backends hold its memory for a moment."""
    started = scoi_at(home, "db", "status", "--json")
    assert started.returncode == 0, started.stderr
    data_dir = Path(last_json(started)["data_dir"])
    assert scoi_at(home, "db", "upgrade").returncode == 0
    for _ in range(3):
        postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        corpora = scoi_at(home, "corpora", "--json")
        assert corpora.returncode == 0, corpora.stderr
