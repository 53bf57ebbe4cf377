"""An experiment's cells in PostgreSQL: one per model and grid point (the unique key
holds the model), an experiment stored before models could be several resumes as it was
and takes a second model, and a refused rerun stores nothing."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest

from scoi.jobs.experiment import create_or_resume, get_experiment
from scoi.jobs.experiment_grid import ExperimentSpec
from scoi.jobs.spec import JobError
from tests.helpers.jobs import demo_test_pairs

SPEC = ExperimentSpec("legacy", "fr", "en", {"stub": "openai:stub"}, methods=["zero", "bm25"], ks=[2])


def _data():
    pairs = demo_test_pairs()[:3]
    return [fr for fr, _ in pairs], [en for _, en in pairs]


def test_the_same_grid_point_for_two_models_is_two_cells(job_db):
    sources, refs = _data()
    spec = replace(SPEC, models={"a": "openai:a", "b": "openai:b"})
    with psycopg.connect(job_db, autocommit=True) as conn:
        exp, created = create_or_resume(conn, spec, sources, refs)
        rows = conn.execute("SELECT model, method, k FROM experiment_job ORDER BY job_id").fetchall()
    assert created == 4 and rows == [("openai:a", "zero", 0), ("openai:a", "bm25", 2), ("openai:b", "zero", 0),
                                     ("openai:b", "bm25", 2)]
    assert [(c.model, job.model) for c, job in exp.cells] == [("a", "openai:a"), ("a", "openai:a"),
                                                              ("b", "openai:b"), ("b", "openai:b")]


def test_an_experiment_stored_with_one_model_resumes_and_takes_a_second(job_db):
    sources, refs = _data()
    with psycopg.connect(job_db, autocommit=True) as conn:
        create_or_resume(conn, SPEC, sources, refs)
        # As one stored before 0036: no model list in the grid, job names without a label.
        conn.execute("UPDATE experiment SET grid = grid - 'models' WHERE name = 'legacy'")
        conn.execute("UPDATE job SET name = replace(name, 'legacy/stub/', 'legacy/')")
        again, created = create_or_resume(conn, SPEC, sources, refs)
        assert created == 0 and [c.model for c, _ in again.cells] == ["stub", "stub"]
        more, created = create_or_resume(conn, replace(SPEC, models={"b": "openai:b"}), sources, refs)
        assert created == 2 and list(more.models.items()) == [("stub", "openai:stub"), ("b", "openai:b")]
        assert [job.name for c, job in more.cells if c.model == "b"] == ["legacy/b/zero-k0-reverse-xglm-s0",
                                                                         "legacy/b/bm25-k2-reverse-xglm-s0"]
        n_jobs = conn.execute("SELECT count(*) FROM job").fetchone()[0]
        with pytest.raises(JobError, match="in the experiment as 'b'"):
            create_or_resume(conn, replace(SPEC, models={"c": "openai:b"}), sources, refs)
        with pytest.raises(JobError, match="another grid, direction or input"):
            create_or_resume(conn, replace(SPEC, ks=[4]), sources, refs)
        assert conn.execute("SELECT count(*) FROM job").fetchone()[0] == n_jobs
        assert list(get_experiment(conn, "legacy").models) == ["stub", "b"]
