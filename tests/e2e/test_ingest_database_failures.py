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

from tests.helpers.cli import last_json
from tests.helpers.ingest import DEMO

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
