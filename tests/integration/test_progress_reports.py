"""Progress reports of long steps, through their callbacks: ``scoi gaps --file`` one per
sentence selected, the HNSW index build its phase and tuples as PostgreSQL reports them."""

from __future__ import annotations

from scoi.embedding.embedder import Embedder
from scoi.embedding.embeddings import embed_missing
from scoi.gaps import sentence_gaps
from scoi.selection.selector import Selector
from tests.helpers.database import scratch_database
from tests.helpers.ingest import DEMO, demo_pairs, ingest_inprocess
from tests.tiny_model import build_tiny_sentence_transformer


def test_sentence_gaps_reports_each_sentence_selected(job_db):
    sentences = [fr for fr, _ in demo_pairs()[:5]] + ["", "Un chat."]
    seen: list[int] = []
    with Selector("fr", "en", url=job_db) as sel:
        report = sentence_gaps(sel, sentences, scope="file", progress=seen.append)
    assert seen == [1] * 6 and report.selections == 6  # blank lines are not sentences


def test_the_hnsw_index_build_reports_its_phase_and_tuples(server_url, template_url, tmp_path):
    model = str(build_tiny_sentence_transformer(tmp_path / "tiny-st"))
    reports: list[tuple[str, int, int]] = []
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        summary = embed_missing(url, Embedder(model), index_progress=lambda *r: reports.append(r), index_poll=0.002)
    assert summary.index_seconds > 0 and reports, summary
    phases = {phase for phase, _, _ in reports}
    assert all(phase.startswith(("initializing", "building index")) for phase in phases), phases
    assert all(0 <= done <= total for _, done, total in reports if total)
