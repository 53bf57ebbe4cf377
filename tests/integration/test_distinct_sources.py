"""One slot per source sentence (docs/method.md §5): a corpus holding the same source
sentence with several targets (and a variant differing only in spaces) gives every pool
method, the random fill and fuzzy-ann's nearest pairs each source once, by its best-ranked
pair, and the pool still has its size. Checked against tests/reference.py's literal rule."""

from __future__ import annotations

import psycopg
import pytest

from scoi.core.pool import source_key
from scoi.core.methods import REGISTRY
from scoi.embedding.embedder import Embedder
from scoi.embedding.embeddings import embed_missing
from scoi.selection.selector import Selector
from tests import reference
from tests.helpers.database import scratch_database
from tests.helpers.ingest import ingest_inprocess, write_tsv
from tests.tiny_model import build_tiny_sentence_transformer

DOG = "Un chien noir court dans l'herbe."
PAIRS = [
    (DOG, "A black dog runs in the grass."),
    (DOG, "A black dog is running through the grass."),
    ("Un chien noir  court dans l'herbe.", "A black dog runs on the grass."),  # the same, to a reader
    ("Un chien blanc court dans le parc.", "A white dog runs in the park."),
    ("Un chien blanc court dans le parc.", "A white dog is running in the park."),
    ("Le chien noir dort.", "The black dog sleeps."),
    ("Un chat noir court sur le mur.", "A black cat runs on the wall."),
    ("Le chien court vite.", "The dog runs fast."),
    ("Le chien court vite.", "The dog is running fast."),
    ("Deux chiens jouent dans la neige.", "Two dogs play in the snow."),
    ("Un homme court dans la rue.", "A man runs in the street."),
    ("Il pleut sur la ville.", "It is raining on the city."),
    ("Il pleut sur la ville.", "Rain falls on the town."),
    ("La femme lit un livre.", "The woman reads a book."),
    ("La femme lit un livre.", "The woman is reading a book."),
    ("Les enfants mangent une pomme.", "The children eat an apple."),
]
# ctq needs a trained model; it ranks the same distinct pool (tests/e2e/test_ctq.py).
POOL_METHODS = [m for m, entry in REGISTRY.items() if entry.examples and m != "ctq"]


@pytest.fixture(scope="module")
def dup_db(server_url, template_url, tmp_path_factory):
    d = tmp_path_factory.mktemp("dups")
    with scratch_database(server_url) as url:
        ingest_inprocess(url, [write_tsv(d / "dups.tsv", PAIRS)])
        st = str(build_tiny_sentence_transformer(d / "st"))
        embed_missing(url, Embedder(st), langs=["fr"])
        yield url, st


def _keys(rows) -> list[str]:
    return [source_key(r.src) for r in rows]


def _dog_pairs(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT e.pair_id FROM example e JOIN sentence s ON s.id = e.src_id "
            "WHERE e.src_lang = 'fr' AND e.tgt_lang = 'en' AND s.text LIKE 'Un chien noir%%' ORDER BY e.pair_id")]


@pytest.mark.parametrize("method", POOL_METHODS)
def test_a_source_sentence_fills_one_slot_of_a_selection(dup_db, method):
    url, st = dup_db
    dogs = _dog_pairs(url)
    assert len(dogs) == 3  # two targets of DOG, and the variant with two spaces
    with Selector("fr", "en", url=url, pool=5, embedder=st) as sel:
        res = sel.select(DOG, k=4, method=method)
        picked = _keys(res.selected)
        assert len(picked) == len(set(picked)) == 4, (method, picked)
        if REGISTRY[method].bm25_pool:
            keys = _keys(res.candidates)
            assert len(keys) == len(set(keys)) == 5  # filled up to its size past the duplicates
            ranked = sel.fetch(sel.preselect(sel.analyzer.tokenize(DOG), n=len(PAIRS)))
            assert [c.pair_id for c in res.candidates] == [c.pair_id for c in reference.distinct_pool(ranked, 5)]
            assert [c.pair_id for c in res.candidates if c.pair_id in dogs] == [min(dogs)]  # its best-ranked pair


def test_the_random_fill_never_repeats_a_picked_source(dup_db):
    url, _ = dup_db
    for seed in range(12):
        with Selector("fr", "en", url=url, pool=5, fill="random", seed=seed) as sel:
            res = sel.select("herbe", k=6, method="bm25")  # one matching sentence: five fills
            assert [p.criterion for p in res.selected] == ["bm25"] + ["fill"] * 5
            keys = _keys(res.selected)
            assert len(keys) == len(set(keys)), (seed, keys)


def test_reference_pool_rule_reads_spaces_and_composition_as_one_sentence():
    class Row:
        def __init__(self, src: str) -> None:
            self.src = src

    ranked = [Row("Un café."), Row("Un cafe\u0301."), Row(" Un  café. "), Row("Un thé."), Row("Un café !")]
    assert [r.src for r in reference.distinct_pool(ranked, 5)] == ["Un café.", "Un thé.", "Un café !"]
    assert [r.src for r in reference.distinct_pool(ranked, 2)] == ["Un café.", "Un thé."]
    from scoi.core.pool import distinct_sources

    assert distinct_sources([r.src for r in ranked]) == [0, 3, 4]
