"""A blank source segment (empty, or only whitespace kept from a table or a script) is
passed through without a model call, and its item says so: no origin (neither the model
nor the memory wrote its blank output), no example count, as for blank lines done at
submit. Real worker, real database, the fake OpenAI server counting requests."""

from __future__ import annotations

import psycopg

from scoi.jobs.create import submit
from scoi.jobs.export import export_rows
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import status
from scoi.jobs.worker import Worker, WorkerOptions
from tests.helpers.jobs import demo_test_pairs, items, ok_server


def test_blank_sources_have_no_origin_and_make_no_model_call(job_db):
    sentence = demo_test_pairs()[0][0]
    with ok_server() as fake, psycopg.connect(job_db, autocommit=True) as conn:
        job_id = submit(conn, JobSpec("fr", "en", model="openai:stub", method="zero", k=0, reuse="off",
                                      backend_options={"base_url": fake.url, "max_retries": 0}),
                        [sentence, "   ", "", "\t"])
        with Worker(job_db, WorkerOptions(burst=True)) as w:
            stats = w.run()
        completions = [c for c in fake.calls if c["path"].endswith("/completions")]
    assert len(completions) == 1 and stats.failed == 0  # the sentence alone reached the model
    rows = items(job_db, job_id)
    assert [r["status"] for r in rows] == ["done"] * 4
    assert [r["origin"] for r in rows] == ["llm", None, None, None]
    assert [r["output"] for r in rows[1:]] == ["", "", ""] and all(r["prompt"] is None for r in rows[1:])
    assert [r["examples_used"] for r in rows] == [0, None, None, None]
    with psycopg.connect(job_db) as conn:
        assert status(conn, job_id)["origins"] == {"llm": 1, "tm": 0}
        assert [r["origin"] for r in export_rows(conn, job_id)] == ["llm", None, None, None]
