"""``scoi corpora rm`` killed with ``kill -9`` in the middle of its transaction leaves the
database exactly as before; run again, it deletes the corpus and the index stays exact."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psycopg

from tests.helpers.cli import last_json, scoi_env
from tests.helpers.ingest import assert_consistent, ingest_inprocess, snapshot, stored_pairs, write_tsv


def test_kill_9_during_corpora_rm_changes_nothing(db_url, tmp_path, pairs):
    ingest_inprocess(db_url, [write_tsv(tmp_path / "a.tsv", pairs[:40])], corpus="a")
    ingest_inprocess(db_url, [write_tsv(tmp_path / "b.tsv", pairs[40:60])], corpus="b")
    before = snapshot(db_url)
    rm = [sys.executable, "-m", "scoi.cli.main", "corpora", "rm", "a", "--yes", "--json"]
    with psycopg.connect(db_url) as holder:
        # Hold the corpus row: the delete does all its work (pairs, sentences, postings,
        # blocks, df, N) and then waits on its last statement, with everything uncommitted.
        holder.execute("SELECT 1 FROM corpus WHERE name = 'a' FOR UPDATE")
        proc = subprocess.Popen(rm, env=scoi_env(db_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            waiting = False
            while not waiting and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
                with psycopg.connect(db_url) as probe:
                    waiting = probe.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                            "AND query LIKE 'DELETE FROM corpus%%'").fetchone()[0] > 0
            assert waiting, proc.communicate(timeout=5)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        holder.rollback()
    assert proc.returncode == -signal.SIGKILL
    for _ in range(100):  # the server notices the lost client and rolls its transaction back
        with psycopg.connect(db_url) as probe:
            if not probe.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DELETE FROM corpus%%' "
                                 "AND pid <> pg_backend_pid()").fetchone()[0]:
                break
        time.sleep(0.1)
    assert snapshot(db_url) == before
    assert_consistent(db_url)
    done = subprocess.run(rm, env=scoi_env(db_url), capture_output=True, text=True, timeout=300)
    assert last_json(done)["pairs"] == 40
    assert sum(stored_pairs(db_url).values()) == 20
    assert_consistent(db_url)
