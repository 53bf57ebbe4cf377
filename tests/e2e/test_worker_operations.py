"""Operating workers: the exit status of ``scoi worker --burst`` when items failed, and a
long-running worker outliving a restart of the embedded database (real subprocesses, the
fake OpenAI-compatible server)."""

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

from tests.helpers.cli import last_json, run_scoi, scoi_cli
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.jobs import items, ok_server, stub_model_args, submit_lines

SHORT = ("--max-new-tokens", "12")


def test_burst_worker_exits_3_when_items_failed_in_its_run(job_db, tmp_path):
    with FakeOpenAI(always=500) as fake:
        job_id = submit_lines(job_db, tmp_path / "in.fr", ["Un.", "Deux.", "Trois."], "openai:stub", *SHORT,
                              *stub_model_args(fake.url), "--max-attempts", "1")
        proc = run_scoi(["worker", "--burst", "--json"], job_db)
    assert proc.returncode == 3, proc.stderr
    summary = last_json(proc, ok=False)
    assert (summary["failed"], summary["done"]) == (3, 0)
    assert all(i["status"] == "failed" and "500" in i["last_error"] for i in items(job_db, job_id))
    # nothing failed in the next run: 0, though the job still holds the failed items
    with ok_server() as ok:
        submit_lines(job_db, tmp_path / "more.fr", ["Quatre."], "openai:stub", *SHORT, *stub_model_args(ok.url))
        again = run_scoi(["worker", "--burst", "--json"], job_db)
    assert again.returncode == 0 and last_json(again)["done"] == 1


def test_worker_help_documents_its_exit_status(job_db):
    text = " ".join(scoi_cli(["worker", "--help"], job_db).stdout.split())
    assert "Exit status: 0" in text and "3 (--burst) some items ended failed" in text


# --------------------------------------------------------------------------- database restarts
def _at_home(home: Path, *args: str, **kw) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "SCOI_DATABASE_URL"}
    env["SCOI_HOME"] = str(home)
    return dict(args=[sys.executable, "-m", "scoi.cli.main", *args], env=env, **kw)


def _scoi_at(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(**_at_home(home, *args, capture_output=True, text=True, timeout=180))


def _wait_until(pred, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f"; worker log:\n{log.read_text()}" if log else ""))


@pytest.mark.slow
def test_long_running_worker_resumes_after_the_database_restarts(tmp_path):
    """``scoi worker --poll 0.5`` on the embedded server, then ``scoi db stop`` while it
    generates an item: the worker says so once, waits (it does not start the server
    itself), and once another command has started the server again, finishes the item it
    held (handed back, its attempt uncounted, not left for the stall timeout) and one
    submitted after the restart."""
    home = Path(tempfile.mkdtemp(prefix="scoi-restart-"))
    home.chmod(0o755)  # as root the server's account must reach its data dir
    log = tmp_path / "worker.err"
    try:
        status = _scoi_at(home, "db", "upgrade")
        assert status.returncode == 0, status.stderr
        url = last_json(_scoi_at(home, "db", "status", "--json"))["url"]
        with ok_server() as stub, ok_server(delay=3) as slow, log.open("w") as err:
            worker = subprocess.Popen(**_at_home(home, "worker", "--poll", "0.5", stdout=subprocess.PIPE,
                                                 stderr=err, text=True))
            try:
                first = submit_lines(url, tmp_path / "a.fr", ["Un."], "openai:stub", *SHORT, *stub_model_args(stub.url))
                _wait_until(lambda: items(url, first)[0]["status"] == "done", 60, "the first item")
                held = submit_lines(url, tmp_path / "h.fr", ["Trois."], "openai:slow", *SHORT,
                                    *stub_model_args(slow.url))
                _wait_until(lambda: items(url, held)[0]["status"] == "running", 30, "the held item")
                assert _scoi_at(home, "db", "stop").returncode == 0
                _wait_until(lambda: "lost the database" in log.read_text(), 30, "the worker to notice")
                time.sleep(2)  # a few reconnection attempts while the server is down
                assert worker.poll() is None, log.read_text()
                assert not _running(url)  # the worker did not start the server again
                assert _scoi_at(home, "db", "status").returncode == 0  # any command starts it
                second = submit_lines(url, tmp_path / "b.fr", ["Deux."], "openai:stub", *SHORT,
                                      *stub_model_args(stub.url))
                _wait_until(lambda: items(url, second)[0]["status"] == "done", 60, "the item after the restart", log)
                _wait_until(lambda: items(url, held)[0]["status"] == "done", 60, "the held item", log)
                assert worker.poll() is None
            finally:
                worker.send_signal(signal.SIGTERM)
                worker.communicate(timeout=60)
        text = log.read_text()
        assert worker.returncode == 0, text
        assert text.count("lost the database") == 1 and "database back after" in text, text
        assert "Traceback" not in text
        assert items(url, second)[0]["output"].startswith("ok ")
        assert items(url, held)[0]["attempts"] == 1  # the attempt the restart cut short is not counted
    finally:
        _scoi_at(home, "db", "stop")
        shutil.rmtree(home, ignore_errors=True)


def _running(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True
