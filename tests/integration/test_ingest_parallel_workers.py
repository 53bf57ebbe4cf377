"""Ingest in this process: parallel parsing giving the same rows as parsing in one process,
a failed write failing fast, the last batch written task by task, reruns starting no
workers, and the fork server's workers having the pipelines loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from tests.helpers.database import scalar, scratch_database
from tests.helpers.ingest import (
    assert_consistent,
    ingest_inprocess,
    snapshot,
    stored_pairs,
    write_tsv,
)


def test_parallel_workers_store_the_same_rows(server_url, template_url, tmp_path, pairs):
    path = write_tsv(tmp_path / "w.tsv", pairs[:120])
    snaps = {}
    for workers in (0, 2):
        with scratch_database(server_url) as url:
            summary = ingest_inprocess(url, [path], workers=workers, batch_size=10)
            assert (summary.inserted, summary.parsed_sentences) == (120, 240)
            # The workers' CPU on parsing, and the part of it in spaCy itself (the rest:
            # Moses, the trees' terms), measured in the workers (benchmarks/bench_ingest.py).
            assert 0 < summary.parser_cpu_seconds < summary.parse_cpu_seconds
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
from scoi.analysis import analyzer
from scoi.config import ENV_PRELOAD_PIPELINES
from scoi.parsers import choose_parser

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
