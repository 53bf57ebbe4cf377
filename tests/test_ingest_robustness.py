"""Crashes, reruns and concurrency: `kill -9` mid-run then resume, two ingests at once,
and parallel parsing giving the same rows as parsing in one process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from conftest import scoi_env
from fixtures_ingest import (
    assert_consistent,
    cli_json,
    demo_pairs,
    ingest_inprocess,
    scalar,
    scratch_database,
    snapshot,
    stored_pairs,
    write_tsv,
)


@pytest.fixture(scope="module")
def pairs():
    return demo_pairs()


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
    assert_consistent(db_url)

    out = cli_json(["ingest", *args[:-1], "0"], db_url)  # resume (in this process, parsing in it too)
    assert (out["read"], out["inserted"], out["duplicates"]) == (len(pairs), len(pairs) - committed, committed)
    assert stored_pairs(db_url) == Counter(pairs)
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 2 * len(pairs)
    assert_consistent(db_url)


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
        outs.append(json.loads(text.strip().splitlines()[-1]))
    assert sum(o["inserted"] for o in outs) == len(pairs)
    assert sum(o["duplicates"] for o in outs) == 100  # the overlap, counted by whichever run came second
    assert stored_pairs(db_url) == Counter(pairs)
    assert scalar(db_url, "SELECT count(*) FROM sentence") == 2 * len(pairs)
    assert scalar(db_url, "SELECT count(*) FROM corpus") == 1
    assert_consistent(db_url)


def test_parallel_workers_store_the_same_rows(server_url, template_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "w.tsv", pairs[:120])
    snaps = {}
    for workers in (0, 2):
        with scratch_database(server_url) as url:
            summary = ingest_inprocess(url, [path], workers=workers, batch_size=10)
            assert (summary.inserted, summary.parsed_sentences) == (120, 240)
            assert scalar(url, "SELECT workers FROM ingest_run") == workers
            assert_consistent(url)
            snaps[workers] = snapshot(url)
    assert len(snaps[2]["pairs"]) == 120 and snaps[2]["postings"]
    for table in snaps[0]:
        assert snaps[2][table] == snaps[0][table], table


def test_failed_write_with_workers_fails_fast_and_keeps_whole_batches(db_url, tmp_path, pairs, monkeypatch):
    """A batch that cannot be written ends the run with the error (it used to hang in the pool's
    terminate(), waiting for the thread that feeds it tasks); earlier batches stay, a rerun completes."""
    import threading

    from ingest.writer import BatchWriter

    real_write, calls = BatchWriter.write, []

    def failing_write(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("disk full (simulated)")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(BatchWriter, "write", failing_write)
    path = write_tsv(tmp_path / "f.tsv", pairs[:100])
    outcome: list = []

    def run():
        try:
            outcome.append(ingest_inprocess(db_url, [path], workers=1, batch_size=5))
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=150)
    assert not thread.is_alive(), "ingest hung after a failed batch write"
    assert isinstance(outcome[0], RuntimeError) and "disk full" in str(outcome[0])
    assert scalar(db_url, "SELECT count(*) FROM pair") == 10  # the two batches before the failure
    assert scalar(db_url, "SELECT status || ': ' || error FROM ingest_run") == "failed: disk full (simulated)"
    assert_consistent(db_url)

    monkeypatch.setattr(BatchWriter, "write", real_write)
    again = ingest_inprocess(db_url, [path], workers=0, batch_size=50)
    assert (again.inserted, again.duplicates) == (90, 10)
    assert stored_pairs(db_url) == Counter(pairs[:100])
    assert_consistent(db_url)


WORKER_PROBE = """
import json, os, sys
import ingest.workers as W
from scoi.analysis import analyzer, choose_parser
from scoi.config import ENV_PRELOAD_PIPELINES

def probe(_):
    info = analyzer.cache_info()
    return info.hits, info.misses, sorted(W._ANALYZERS), "torch" in sys.modules and sys.modules["torch"] is not None

if __name__ == "__main__":
    pipelines = {lang: choose_parser(lang).name for lang in ("fr", "en")}
    with W.worker_pool(2, pipelines) as pool:
        print(json.dumps(pool.map(probe, range(2), chunksize=1)))
    print(ENV_PRELOAD_PIPELINES in os.environ, "spacy" in sys.modules)
"""


def test_workers_are_forked_with_the_pipelines_loaded(tmp_path):
    """The fork server builds the analysers (pipelines + Moses) once; each worker's own
    request is a cache hit (two languages: two hits, and the two misses are the fork server's)."""
    script = tmp_path / "probe.py"
    script.write_text(WORKER_PROBE)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    workers, main = out.stdout.strip().splitlines()
    assert json.loads(workers) == [[2, 2, ["en", "fr"], False]] * 2
    assert main == "False False"  # nothing leaks into, or gets loaded in, the main process


@given(n=st.integers(1, 60), parts=st.integers(1, 6))
def test_a_batch_splits_into_near_equal_consecutive_tasks(n, parts):
    from ingest.pipeline import _split

    batch = list(range(n))
    pieces = _split(batch, parts)
    assert [x for p in pieces for x in p] == batch
    assert len(pieces) == min(n, parts) and max(map(len, pieces)) - min(map(len, pieces)) <= 1


@given(n=st.integers(0, 6))
def test_with_last_flags_only_the_last_item(n):
    from ingest.pipeline import _with_last

    assert list(_with_last(iter([[i] for i in range(n)]))) == [([i], i == n - 1) for i in range(n)]


def test_last_batch_is_written_task_by_task(db_url, tmp_path, pairs, monkeypatch):
    """Batches are one transaction each, except the last, written as each of its tasks is
    parsed (so a run does not end waiting for one big write); the result is the same."""
    from ingest.writer import BatchWriter

    real_write, sizes = BatchWriter.write, []

    def counting_write(self, sentences, pair_rows, **kwargs):
        sizes.append(len(pair_rows))
        return real_write(self, sentences, pair_rows, **kwargs)

    monkeypatch.setattr(BatchWriter, "write", counting_write)
    path = write_tsv(tmp_path / "f.tsv", pairs[:50])
    summary = ingest_inprocess(db_url, [path], workers=0, batch_size=20)
    assert sizes == [20, 20, 3, 3, 2, 2]  # the last 10 pairs: 4 tasks
    assert summary.inserted == 50 and stored_pairs(db_url) == Counter(pairs[:50])
    assert_consistent(db_url)


def test_rerun_with_nothing_to_parse_starts_no_workers(db_url, tmp_path, pairs, monkeypatch):
    """A rerun of a stored file writes its (duplicate) pairs without starting parse workers;
    a grown file starts them at the first task with new sentences."""
    import ingest.workers as W

    path = write_tsv(tmp_path / "f.tsv", pairs[:40])
    assert ingest_inprocess(db_url, [path], workers=0, batch_size=20).inserted == 40

    def no_pool(*args, **kwargs):
        raise AssertionError("worker processes started although nothing needs parsing")

    with monkeypatch.context() as m:
        m.setattr(W, "worker_pool", no_pool)
        again = ingest_inprocess(db_url, [path], workers=2, batch_size=20)
    assert (again.inserted, again.duplicates, again.parsed_sentences) == (0, 40, 0)

    grown = write_tsv(tmp_path / "g.tsv", pairs[:60])
    more = ingest_inprocess(db_url, [grown], workers=1, batch_size=20)
    assert (more.inserted, more.duplicates) == (20, 40)
    assert stored_pairs(db_url) == Counter(pairs[:60])
    assert_consistent(db_url)
