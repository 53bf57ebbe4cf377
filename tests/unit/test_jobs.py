"""The worker pool's supervisor: summaries of its worker processes summed (no database).
The pool itself runs in tests/e2e/test_jobs.py (``scoi worker --concurrency 2``)."""

from __future__ import annotations

def test_supervisor_sums_worker_summaries():
    from scoi.jobs.supervisor import merge_summaries

    one = {"claimed": 3, "done": 2, "reused": 1, "requeued": 1, "failed": 0, "lost": 0, "cancelled": 1, "batches": 2,
           "generate_ms": 10.0,
           "overhead_ms": 3.0, "retries": 1, "seconds": 2.0, "errors": ["E2"]}
    two = {**one, "done": 3, "requeued": 0, "retries": 4, "seconds": 4.0, "errors": ["E1", "E2"]}
    total = merge_summaries([one, two])
    assert (total["claimed"], total["done"], total["seconds"], total["errors"]) == (6, 5, 4.0, ["E1", "E2"])
    assert total["retries"] == 5 and total["reused"] == 2 and total["cancelled"] == 2
    assert total["items_per_second"] == 1.25 and total["overhead_ms_per_item"] == 1.0
    assert total["worker"] == "2 processes" and total["workers"] == [one, two]


def test_rbm25_variant_is_a_job_setting_of_rbm25_jobs_only():
    from scoi.jobs.spec import JobSpec

    agrawal = JobSpec("fr", "en", "openai:m", method="rbm25", rbm25_variant="agrawal")
    assert agrawal.params()["rbm25_variant"] == "agrawal"
    assert "|method:rbm25|rbm25:agrawal|k:4|" in agrawal.signature()
    assert "|rbm25:moses|" in JobSpec("fr", "en", "openai:m", method="rbm25").signature()  # the default
    plain = JobSpec("fr", "en", "openai:m", method="scoi", rbm25_variant="agrawal")
    assert "rbm25_variant" not in plain.params() and "rbm25" not in plain.signature()
