"""Sentence embeddings and the fuzzy methods through the real database and the real
sentence-transformers loading path (a tiny random-weight model built in a temp dir):
incremental, kill-safe embedding; fuzzy = the BM25 pool re-ranked by cosine (checked
against the literal reference on vectors the model computes afresh); fuzzy-ann = the HNSW
index's top k (checked against exact search); the offline failure."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from scoi.embedding.embedder import Embedder, EmbedderError
from scoi.embedding.embeddings import EmbeddingError, embed_missing, find_embedder, nearest
from scoi.selection.selector import SelectionError, Selector
from tests import reference_baselines as slow
from tests.helpers.database import scalar, scratch_database
from tests.helpers.ingest import DEMO, DEMO_TEST, demo_pairs, ingest_inprocess
from tests.tiny_model import build_tiny_sentence_transformer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "tiny-st"))


class Interrupted(Embedder):
    """The real model, interrupted (as by Ctrl-C) when it starts its ``fail_at``-th batch."""

    def __init__(self, model: str, fail_at: int) -> None:
        super().__init__(model)
        self.calls, self.fail_at = 0, fail_at

    def encode(self, texts):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyboardInterrupt
        return super().encode(texts)


def test_embedder_loads_a_directory_and_normalises(model_dir) -> None:
    emb = Embedder(model_dir)
    vecs = emb.encode(["Le chat dort.", "Il pleut.", "Le chat dort."])
    assert vecs.dtype == np.float32 and vecs.shape == (3, emb.dim)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[2]) and not np.allclose(vecs[0], vecs[1])
    assert emb.encode([]).shape == (0, emb.dim)


def test_a_model_not_on_disk_fails_at_once_offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EmbedderError, match="not available offline") as err:
        Embedder("nobody/no-such-sentence-model")
    assert "'nobody/no-such-sentence-model'" in str(err.value) and "local directory" in str(err.value)


def test_embed_is_incremental_and_kill_safe(server_url, template_url, model_dir) -> None:
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        n_sentences = scalar(url, "SELECT count(*) FROM sentence")
        with pytest.raises(KeyboardInterrupt):
            embed_missing(url, Interrupted(model_dir, fail_at=3), batch_size=100)
        assert scalar(url, "SELECT count(*) FROM sentence_embedding") == 200  # two committed batches
        again = embed_missing(url, Embedder(model_dir), batch_size=100)
        assert (again.todo, again.embedded) == (n_sentences - 200, n_sentences - 200)
        assert scalar(url, "SELECT count(*) FROM sentence_embedding") == n_sentences
        assert embed_missing(url, Embedder(model_dir)).embedded == 0  # nothing left
        with psycopg.connect(url) as conn:
            indexdef = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                    (again.index,)).fetchone()[0]
        assert "hnsw" in indexdef and "vector_cosine_ops" in indexdef and f"vector({again.dim})" in indexdef
        # The stored vectors are the model's vectors of the stored texts.
        with psycopg.connect(url) as conn:
            texts, stored = zip(*conn.execute("""SELECT s.text, se.embedding::text FROM sentence_embedding se
                                                 JOIN sentence s ON s.id = se.sentence_id
                                                 ORDER BY s.id LIMIT 20""").fetchall())
        stored = np.array([np.fromstring(v.strip("[]"), sep=",") for v in stored])
        assert np.allclose(stored, Embedder(model_dir).encode(list(texts)), atol=1e-5)


def test_fuzzy_and_fuzzy_ann_selection(server_url, template_url, model_dir) -> None:
    queries = [fr for fr, _ in demo_pairs(DEMO_TEST)][:6]
    emb = Embedder(model_dir)
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [DEMO])
        with pytest.raises(SelectionError, match="scoi embed --model"):
            Selector("fr", "en", url=url, method="fuzzy", embedder=model_dir)
        embed_missing(url, emb, langs=["fr"])
        with Selector("fr", "en", url=url, pool=30, method="fuzzy", embedder=model_dir) as sel:
            bm25 = Selector("fr", "en", url=url, pool=30, method="bm25")
            for q in queries:
                res = sel.select(q, k=6, record=True)
                # the same pool as BM25's, re-ranked by the cosine of freshly computed vectors
                assert [c.pair_id for c in res.candidates] == [c.pair_id for c in bm25.select(q).candidates]
                want = slow.fuzzy(emb.encode([q])[0], emb.encode([c.src for c in res.candidates]), 6)
                assert [p.pair_id for p in res.selected] == [res.candidates[i].pair_id for i, _ in want]
                assert [p.coverage for p in res.selected] == pytest.approx([c for _, c in want], abs=1e-5)
                assert {p.criterion for p in res.selected} == {"fuzzy"}
                assert f"embedder:{emb.name}" in res.signature.split("|")
                assert res.params["embedder"] == emb.name
                assert scalar(url, "SELECT count(*) FROM selection_pick WHERE selection_id = %s",
                              (res.selection_id,)) == 6
            bm25.close()
        with Selector("fr", "en", url=url, method="fuzzy-ann", embedder=model_dir, ef_search=100) as sel:
            row = find_embedder(sel.reader, emb.name)
            with psycopg.connect(url) as conn:
                eligible = dict(conn.execute("""SELECT s.text, min(e.pair_id) FROM sentence s
                                                JOIN example e ON e.src_id = s.id AND e.tgt_lang = 'en'
                                                WHERE s.lang = 'fr' AND s.eligible GROUP BY s.text""").fetchall())
            texts = sorted(eligible)
            all_vecs = emb.encode(texts)
            for q in queries:
                res = sel.select(q, k=5)
                qv = emb.encode([q])[0]
                exact = nearest(sel.reader, row, qv, lang="fr", tgt="en", corpora=None, n=5, exact=True)
                sims = all_vecs @ qv
                top = np.sort(sims)[::-1][:5]
                # exact search by SQL = numpy over every eligible sentence (cosine values)
                assert [1 - d for _, d, _ in exact] == pytest.approx(list(top), abs=1e-5)
                # the index on a 300-sentence table with ef_search 100 finds the exact top 5; two
                # sentences whose cosines differ by < 1e-5 may swap (the selector encodes the
                # query with one BLAS thread, this test with several: last-bit differences)
                assert {p.pair_id for p in res.selected} == {pid for pid, _, _ in exact}
                assert [p.coverage for p in res.selected] == pytest.approx([1 - d for _, d, _ in exact], abs=1e-5)
                assert len(res.candidates) == 5 and res.certified is None
                assert "hnsw:cosine,ef_search=100" in res.signature.split("|")
        # A pool sentence embedded later than the pool's corpus: a clear error, not a silent skip.
        with psycopg.connect(url) as conn:
            conn.execute("DELETE FROM sentence_embedding WHERE sentence_id IN "
                         "(SELECT id FROM sentence WHERE lang = 'fr' ORDER BY id LIMIT 100)")
        with Selector("fr", "en", url=url, pool=100, method="fuzzy", embedder=model_dir) as sel:
            with pytest.raises(EmbeddingError, match="scoi embed --model"):
                sel.select(queries[0])
