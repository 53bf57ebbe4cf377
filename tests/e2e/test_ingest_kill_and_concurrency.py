"""Crashes and concurrency of ``scoi ingest`` processes: ``kill -9`` mid-run then resume,
two ingests at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from tests.helpers.cli import cli_json, last_json, scoi_env
from tests.helpers.database import scalar
from tests.helpers.ingest import assert_consistent, stored_pairs, write_tsv


def start_ingest(args: list[str], db_url: str, log) -> subprocess.Popen:
    """`scoi ingest ARGS` in its own process group (so its parser workers can be killed with it)."""
    return subprocess.Popen([sys.executable, "-m", "scoi.cli.main", "ingest", *args], env=scoi_env(db_url),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.mark.slow
def test_kill_9_then_resume(db_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "big.tsv", pairs)
    args = [str(path), "--src", "fr", "--tgt", "en", "--batch-size", "20", "--workers", "1"]
    with open(tmp_path / "run1.log", "wb") as log:
        proc = start_ingest(args, db_url, log)
        try:
            deadline = time.monotonic() + 240
            seen = 0
            while seen == 0 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
                seen = scalar(db_url, "SELECT count(*) FROM pair")
        finally:
            kill_group(proc)
    assert proc.returncode == -signal.SIGKILL, (tmp_path / "run1.log").read_text()
    # The parser worker died with its parent (same process group); allow a moment for reaping.
    for _ in range(100):
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("a process of the killed ingest is still alive")

    committed = scalar(db_url, "SELECT count(*) FROM pair")
    assert 0 < committed < len(pairs), "the kill must land mid-run"
    assert committed % 20 == 0  # whole batches only
    assert scalar(db_url, "SELECT status FROM ingest_run") == "running"  # as the killed run left it
    # ... but read as dead: its session (and so its advisory lock) is gone. The server
    # notices the closed socket at once; allow a moment.
    for _ in range(100):
        if scalar(db_url, "SELECT state FROM ingest_run_status") == "dead":
            break
        time.sleep(0.05)
    runs = cli_json(["ingest-runs", "--json"], db_url)
    assert [(r["state"], r["inserted"]) for r in runs] == [("dead", committed)]
    assert_consistent(db_url)

    out = cli_json(["ingest", *args[:-1], "0"], db_url)  # resume (in this process, parsing in it too)
    assert (out["read"], out["inserted"], out["duplicates"]) == (len(pairs), len(pairs) - committed, committed)
    assert stored_pairs(db_url) == Counter(pairs)
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 2 * len(pairs)
    assert_consistent(db_url)
    runs = cli_json(["ingest-runs", "--json"], db_url)
    assert [r["state"] for r in runs] == ["done", "dead"]  # newest first


def test_a_live_ingest_reads_as_running(db_url, tmp_path, pairs):
    """The lock is held from the moment the row exists until the run ends: never a false dead."""
    path = write_tsv(tmp_path / "big.tsv", pairs)
    with open(tmp_path / "run.log", "wb") as log:
        proc = start_ingest([str(path), "--src", "fr", "--tgt", "en", "--batch-size", "20", "--workers", "0"],
                            db_url, log)
        states = set()
        try:
            deadline = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < deadline:
                state = scalar(db_url, "SELECT max(state) FROM ingest_run_status")
                if state is not None:
                    states.add(state)
                time.sleep(0.02)
            proc.wait(timeout=60)
        finally:
            kill_group(proc)
    assert proc.returncode == 0, (tmp_path / "run.log").read_text()
    assert "running" in states and "dead" not in states, states
    assert scalar(db_url, "SELECT state FROM ingest_run_status") == "done"


def test_two_concurrent_ingests_of_overlapping_files(db_url, tmp_path, pairs):
    a = write_tsv(tmp_path / "a.tsv", pairs[:200])
    b = write_tsv(tmp_path / "b.tsv", pairs[100:])
    procs, logs = [], []
    for path in (a, b):
        log = open(tmp_path / f"{path.stem}.log", "wb")
        logs.append(log)
        procs.append(start_ingest([str(path), "--src", "fr", "--tgt", "en", "--corpus", "shared",
                                   "--batch-size", "25", "--workers", "0", "--json"], db_url, log))
    try:
        for proc in procs:
            proc.wait(timeout=300)
    finally:
        for proc in procs:
            kill_group(proc)
        for log in logs:
            log.close()
    outs = []
    for proc, path in zip(procs, (a, b)):
        text = (tmp_path / f"{path.stem}.log").read_text()
        assert proc.returncode == 0, text
        outs.append(last_json(text))
    assert sum(o["inserted"] for o in outs) == len(pairs)
    assert sum(o["duplicates"] for o in outs) == 100  # the overlap, counted by whichever run came second
    assert stored_pairs(db_url) == Counter(pairs)
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 2 * len(pairs)
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 1
    assert_consistent(db_url)
