"""Ingest and selection run only the pipeline components the trees need (``tok2vec`` and
``parser``: scoi.parsers.load_pipeline excludes the tagger, morphologizer, lemmatizer,
NER, ...). The polynomial terms read nothing but the parser's heads and relation labels,
so they must be byte for byte those of the whole pipeline, checked here on real
sentences: the demo corpus, and the first Europarl lines of the development data where
it is (``$SCOI_DEV_DATA``, as for benchmarks/shared_data.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scoi.analysis import doc_trees, made_tree
from scoi.core.polynomial import tree_terms
from scoi.parsers import NEEDED_COMPONENTS, import_spacy, load_pipeline, pipeline_meta
from tests.helpers.ingest import PIPELINES, demo_pairs

# SCOI_DEV_DATA, else shared/data beside the repository's folder (benchmarks/shared_data.py)
SHARED = Path(os.environ.get("SCOI_DEV_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
EUROPARL_LINES = 400
RUSSIAN = ["Мальчик читает интересную книгу.", "Кошка спит на тёплом диване.",
           "Мы поедем в Москву завтра утром.", "Правительство объявило о новых мерах поддержки малого бизнеса.",
           "Да.", "Вчера вечером в парке, несмотря на дождь, играли дети, а их родители сидели в кафе.",
           "Учёные опубликовали исследование о том, как меняется климат на севере страны."]


def real_sentences(lang: str) -> list[str]:
    """The demo corpus's sentences of ``lang``, then the first Europarl lines if present."""
    side = 0 if lang == "fr" else 1
    texts = [p[side] for p in demo_pairs()]
    europarl = SHARED / "europarl-sample" / f"europarl-v7.fr-en.{lang}"
    if europarl.is_file():
        with europarl.open(encoding="utf-8") as f:
            texts += [line.strip() for _, line in zip(range(EUROPARL_LINES), f) if line.strip()]
    return texts


def terms_of(nlp, texts: list[str], batch_size: int) -> list[str]:
    """Each text's terms as scoi stores them (keys with multiplicities), as text to compare bytes."""
    return [repr(sorted(tree_terms(*made_tree(t)[:2]))) for t in doc_trees(nlp, texts, batch_size)]


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_terms_of_the_trimmed_pipeline_are_the_whole_pipelines(lang):
    name = PIPELINES[lang]
    trimmed = load_pipeline(name)
    assert trimmed.pipe_names == list(NEEDED_COMPONENTS)
    whole = import_spacy(with_torch=False).load(name)  # every component the package enables
    left_out = set(whole.pipe_names) - set(trimmed.pipe_names)
    assert {"ner", "lemmatizer", "attribute_ruler"} <= left_out, whole.pipe_names
    assert set(pipeline_meta(name)["pipeline"]) - set(NEEDED_COMPONENTS) == left_out

    texts = real_sentences(lang)
    assert len(texts) >= 300
    want = terms_of(whole, texts, 256)
    assert terms_of(trimmed, texts, 256) == want
    # nor does the batch size change a parse (ingest's tasks and a one-off select batch differently)
    assert terms_of(trimmed, texts, 7) == want


def test_natasha_parses_the_same_in_ingests_batches_as_one_at_a_time():
    """natasha's batches are padded to their longest sentence; ingest's batch size
    (NATASHA_BATCH, not slovnet's 8) must not change a parse, nor may the neighbours."""
    from scoi.analysis import NATASHA_BATCH, load_trees
    from scoi.parsers import NATASHA

    trees = load_trees(NATASHA)
    assert trees.syntax.infer.encoder.batch_size == NATASHA_BATCH > 8
    texts = list(RUSSIAN)
    texts += [" ".join(t.split()[: len(t.split()) // 2]) for t in texts]  # shorter neighbours
    texts *= 1 + 2 * NATASHA_BATCH // len(texts)  # several full batches of mixed lengths
    alone = {t: trees.parse([t])[0] for t in texts}
    assert trees.parse(texts) == [alone[t] for t in texts]
