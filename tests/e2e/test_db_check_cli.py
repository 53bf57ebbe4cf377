"""``scoi db check`` as a user runs it: a line per check as it ends, and an interrupted
check leaves no statement running on the server."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psycopg
import pytest
from psycopg import sql as psql

from scoi.db.check import APPLICATION_NAME, checks
from tests.helpers.cli import cli, ctrl_c_as_in_a_terminal, last_json, scoi_env


def test_db_check_prints_a_line_per_check_with_its_time(db_url):
    result = cli(["db", "check"], db_url)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(checks()) + 1
    names = [line.split(": ")[0].split()[-1] for line in lines[:-1]]
    assert sorted(names) == sorted(checks())  # in the order they end, over --jobs sessions
    for line in lines[:-1]:
        assert line.startswith("ok ") and line.endswith(" s)"), line
    assert lines[-1].startswith(f"{len(checks())} of {len(checks())} checks passed in ")
    out = last_json(cli(["db", "check", "--json"], db_url))
    assert all(c["seconds"] >= 0 for c in out["checks"]) and out["seconds"] >= 0


def _backends(url: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT pid, state, wait_event_type FROM pg_stat_activity WHERE application_name = %s",
                            [APPLICATION_NAME]).fetchall()


@pytest.mark.parametrize("signum, table", [(signal.SIGINT, "pair"), (signal.SIGTERM, "pair"),
                                           (signal.SIGINT, "bm25_doc")])
def test_an_interrupted_check_leaves_no_statement_on_the_server(db_url, signum, table):
    """Both sessions' checks wait on a lock another session holds (checks slow at 1M pairs);
    the signal cancels every one on the server, while the lock is still held. Locking the
    forward rows stops the index pass (decoded in Python) in the middle of its reads."""
    with psycopg.connect(db_url) as holder:
        holder.execute(psql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(psql.Identifier(table)))
        proc = subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "db", "check", "--jobs", "2"],
                                env=scoi_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=ctrl_c_as_in_a_terminal)
        try:
            deadline = time.monotonic() + 60
            while sum(w == "Lock" for _, _, w in _backends(db_url)) < 2:
                assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.1)
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=30)
            assert _backends(db_url) == []  # the lock is still held: a statement left would be waiting
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == (130 if signum == signal.SIGINT else 128 + signum), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "cancelled" in err
