"""A job's export carries each item's best match % (the highest among its recorded picks),
read from the database the worker wrote: real worker, fake OpenAI server, demo corpus."""

from __future__ import annotations

import io
import json

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.export import export_rows, write_export
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import status as job_status
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.jobs import ok_server


def test_export_has_the_best_pick_match_of_each_item(job_db):
    sentences = ["Bonjour, comment allez-vous ce soir ?", "Où est la gare ?"]
    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        # reuse off: the stored sentence is selected (a 100% match), not reused from the memory
        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", method="scoi", k=2, reuse="off",
                                      backend_options={"max_retries": 0, "base_url": stub.url}), sentences)
        with Worker(job_db, WorkerOptions(batch_size=10), worker_id="W") as w:
            w.process(w.claim())
        best = dict(conn.execute("SELECT i.idx, max(p.match) FROM job_item i JOIN selection_pick p "
                                 "ON p.selection_id = i.selection_id WHERE i.job_id = %s GROUP BY i.idx",
                                 (job_id,)).fetchall())
        traced = conn.execute("SELECT count(*) FROM job_item_trace WHERE job_id = %s AND match IS NOT NULL",
                              (job_id,)).fetchone()[0]
        rows = list(export_rows(conn, job_id))
        out = io.StringIO()
        write_export(iter(rows), "jsonl", out)
    assert [r["status"] for r in rows] == ["done", "done"] and traced == 4
    assert [r["match"] for r in rows] == [round(best[0], 2), round(best[1], 2)]
    assert rows[0]["match"] == 71.43 and rows[1]["match"] == 100.0  # "Où est la gare ?" is stored
    assert [json.loads(line)["match"] for line in out.getvalue().splitlines()] == [71.43, 100.0]


def test_a_job_with_min_match_prompts_only_qualifying_examples(job_db):
    """--min-match on a job reaches the worker's selections: every recorded pick is at or
    above it, a prompt holds fewer than k examples when too few qualify, and the job's
    signature names the threshold."""
    sentences = ["Bonjour, comment allez-vous ce soir ?", "Où est la gare ?"]
    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        spec = JobSpec("fr", "en", model="openai:stub", method="scoi", k=3, reuse="off", min_match=70,
                       backend_options={"max_retries": 0, "base_url": stub.url})
        job_id = submit(conn, spec, sentences)
        with Worker(job_db, WorkerOptions(batch_size=10), worker_id="W") as w:
            w.process(w.claim())
        picks = conn.execute("SELECT i.idx, p.match FROM job_item i JOIN selection_pick p "
                             "ON p.selection_id = i.selection_id WHERE i.job_id = %s ORDER BY i.idx, p.position",
                             (job_id,)).fetchall()
        signature = conn.execute("SELECT signature FROM job WHERE id = %s", (job_id,)).fetchone()[0]
        statuses = [r[0] for r in conn.execute("SELECT status FROM job_item WHERE job_id = %s ORDER BY idx",
                                               (job_id,)).fetchall()]
        dropped = job_status(conn, job_id)["examples_dropped"]
    assert statuses == ["done", "done"]
    assert dropped["items"] == 0  # fewer picks than k is no example dropped to fit the context
    assert picks and all(m >= 70 for _, m in picks)
    assert 0 < len(picks) < 2 * 3  # too few candidates reach 70%: fewer than k examples
    assert "match:70" in signature
    assert JobSpec("fr", "en", model="openai:stub", k=3).signature() != spec.signature()
