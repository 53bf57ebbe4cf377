"""A worker's batch survives what one job's settings do to it: a template that renders
text PostgreSQL cannot store fails its own items only (never the batch, the worker, or
another job's prefetched item), and a job cancelled mid-batch is counted as cancelled in
the worker's summary, not as lost to other workers. Real embedded PostgreSQL, the worker
in this process, the fake OpenAI-compatible server. The CLI side: tests/e2e/test_worker_trust.py."""

from __future__ import annotations

import time

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import cancel
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.jobs import items, ok_server

#: Renders a NUL for one sentence only, so the sample render at submit passes.
POISON_TEMPLATE = "French: {{ query }}{% if query == 'Poison.' %}{{ '\\x00' }}{% endif %}\nEnglish:"


def _spec(url: str, **kw) -> JobSpec:
    return JobSpec("fr", "en", model="openai:stub", method="zero", k=0,
                   backend_options={"base_url": url, "max_retries": 0}, **kw)


def test_a_template_rendering_nul_fails_its_own_item_only(job_db, tmp_path):
    template = tmp_path / "poison.j2"
    template.write_text(POISON_TEMPLATE, encoding="utf-8")
    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        poisoned = submit(conn, _spec(stub.url, template=str(template), max_attempts=1, name="poisoned"),
                          ["Un.", "Poison.", "Deux.", "Trois."])
        victim = submit(conn, _spec(stub.url, name="victim"), ["Quatre.", "Cinq.", "Six."])
        # Prefetch on, batches of up to 2: the poisoned item is prepared while the victim's
        # wait prefetched behind it (the worker used to die there, failing both).
        with Worker(job_db, WorkerOptions(batch_size=2, burst=True, prefetch=True)) as w:
            stats = w.run()
    assert (stats.done, stats.failed, stats.lost) == (6, 1, 0)
    got = items(job_db, poisoned)
    assert [i["status"] for i in got] == ["done", "failed", "done", "done"]
    assert "the prompt cannot be stored" in got[1]["last_error"] and "NUL" in got[1]["last_error"]
    assert got[1]["prompt"] is None
    assert [(i["status"], i["attempts"], i["last_error"]) for i in items(job_db, victim)] == [("done", 1, None)] * 3


def test_a_workers_summary_counts_cancelled_items_as_cancelled(job_db):
    with ok_server() as stub, psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, _spec(stub.url), ["Un.", "Deux.", "Trois."])
        with Worker(job_db, WorkerOptions(batch_size=3), worker_id="W") as w:
            claimed = w.claim()
            preps = w.prepare_batch(claimed)
            assert cancel(conn, job_id) == 3  # `scoi job cancel` while the batch generates
            w.finish(claimed, preps, time.perf_counter())
    assert (w.stats.done, w.stats.cancelled, w.stats.lost) == (0, 3, 0)
    assert w.stats.to_dict()["cancelled"] == 3
    assert [i["status"] for i in items(job_db, job_id)] == ["cancelled"] * 3
