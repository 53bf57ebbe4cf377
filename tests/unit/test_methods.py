"""The method registry (scoi.core.methods) against what the selection code does, and the
one signature builder (scoi.core.signature): the registry is what the selector, the jobs
layer and the CLI ask, so each of its answers is checked against the pure selection."""

from __future__ import annotations

import sys
import subprocess

import numpy as np
import pytest

from scoi import __version__
from scoi.core import defaults
from scoi.core.greedy import select
from scoi.core.methods import EMBEDDING_METHODS, METHODS, REGISTRY, TREELESS_METHODS, Method, method, method_settings
from scoi.core.pool import Choice, Features, PoolTexts, Ranking
from scoi.core.rbm25 import ctq_tokens, tokens_13a
from scoi.core.signature import PARTS, corpora_part, method_parts, signature

TERM = np.array([[1, 0]])


def _pool(n: int, tokens: list[list[str]] | None = None) -> list[Features]:
    """n candidates, each one term, with distinct tokens (or ``tokens``)."""
    tokens = tokens or [[f"w{i}", "x"] for i in range(n)]
    return [Features(TERM + i, toks) for i, toks in enumerate(tokens)]


#: The methods that rank without a trained model: all but the learned ones (ctq, whose
#: model ranks its pool: tests/unit/test_ctq_core.py).
GREEDY_METHODS = [m for m in METHODS if not REGISTRY[m].learned]


def _embeddings(n: int) -> tuple[np.ndarray, np.ndarray]:
    vecs = np.eye(n + 1, dtype=np.float32)[1:] + 0.1
    return np.ones(n + 1, dtype=np.float32) / np.sqrt(n + 1), vecs


@pytest.mark.parametrize("name", GREEDY_METHODS)
def test_a_short_pool_is_given_whole_by_every_method_that_picks(name: str) -> None:
    """k above the pool: every method that picks returns the whole pool (its own ranking or
    its picks then pool order); zero returns nothing."""
    n = 3
    picks = select(TERM, ["w0", "x"], _pool(n), k=5, method=name, embeddings=_embeddings(n))
    assert len(picks) == (n if method(name).examples else 0)
    assert sorted(p.index for p in picks) == list(range(len(picks)))


@pytest.mark.parametrize("name", ["rbm25", "dpp"])
def test_pool_order_padding_fills_with_bm25_picks(name: str) -> None:
    """A criterion that stops short (no candidate shares a token, or identical candidates)
    is padded with the pool's next candidates in BM25 order."""
    cands = [Features(TERM, ["a"]) for _ in range(4)]
    picks = select(TERM, ["zzz"], cands, k=3, method=name)
    assert len(picks) == 3 and picks[-1].criterion == "bm25"
    assert [p.index for p in picks if p.criterion == "bm25"] == sorted(p.index for p in picks if p.criterion == "bm25")


def test_the_embedding_methods_need_embeddings_and_only_they() -> None:
    for name in GREEDY_METHODS:
        if REGISTRY[name].embeddings:
            with pytest.raises(ValueError, match="embeddings"):
                select(TERM, ["w0"], _pool(3), k=2, method=name)
        else:
            select(TERM, ["w0"], _pool(3), k=2, method=name)
    assert EMBEDDING_METHODS == ("fuzzy", "fuzzy-ann")


def test_treeless_methods_select_without_terms() -> None:
    """A source stored without trees gives empty term arrays: the treeless methods still pick."""
    empty = np.zeros((0, 2))
    cands = [Features(empty, [f"w{i}", "x"]) for i in range(4)]
    for name in TREELESS_METHODS:
        if name == "ctq":  # its model ranks (scoi.ctq): the coverage code refuses it rather than guess
            with pytest.raises(ValueError, match="trained CTQ Scorer model"):  # no model given
                select(empty, ["w1", "x"], cands, k=2, method=name)
            continue
        picks = select(empty, ["w1", "x"], cands, k=2, method=name, embeddings=_embeddings(4))
        assert len(picks) == (0 if name == "zero" else 2)
    assert set(TREELESS_METHODS) == {"bm25", "rbm25", "ctq", "random", "zero", "fuzzy", "fuzzy-ann"}


def test_method_settings_name_only_what_the_method_reads() -> None:
    assert method_settings("scoi", rbm25_variant="ctq", embedder="e", ef_search=9) == {}
    assert method_settings("rbm25", rbm25_variant="ctq", embedder="e") == {"rbm25_variant": "ctq"}
    assert method_settings("fuzzy", embedder="e", ef_search=9) == {"embedder": "e"}
    assert method_settings("fuzzy-ann", embedder="e", ef_search=9) == {"embedder": "e", "ef_search": 9}
    assert method_settings("fuzzy-ann") == {"embedder": defaults.EMBEDDER}  # a job: no ef_search
    with pytest.raises(ValueError, match="unknown method 'nope'; expected one of scoi, "):
        method("nope")


def test_the_seeded_and_exampleless_methods() -> None:
    assert [m for m in METHODS if REGISTRY[m].seeded] == ["random"]
    assert [m for m in METHODS if not REGISTRY[m].examples] == ["zero"]
    assert [m for m in METHODS if not REGISTRY[m].bm25_pool] == ["fuzzy-ann", "zero"]


def first_two(r: Ranking, k: int) -> list[Choice]:
    """A method for the registry test: the pool's first min(k, 2) candidates."""
    return [Choice(i, "first", None) for i in range(min(k, 2, len(r.candidates)))]


def test_a_method_is_one_registry_entry_naming_its_ranking_function() -> None:
    """An entry's ranker is imported on first use and called with the Ranking and k; the
    registry's own entries all resolve to functions that rank a pool."""
    entry = Method("first", "tests.unit.test_methods:first_two", trees=False)
    ranking = Ranking("first", TERM, ["w0"], _pool(4))
    assert [p.index for p in entry.rank(ranking, 3)] == [0, 1] and entry.tokenizer() is None
    texts = PoolTexts("q", ["a", "b", "c"], ["A", "B", "C"], [3.0, 2.0, 1.0])
    for name in METHODS:
        learned = REGISTRY[name].learned
        picks = REGISTRY[name].rank(Ranking(name, TERM, ["w0", "x"], _pool(3), embeddings=_embeddings(3),
                                            model=Ascending() if learned else None, texts=texts), 2)
        assert len(picks) == (2 if REGISTRY[name].examples else 0), name
        if learned:  # the top 2 by the model's predictions, best first
            assert [p.index for p in picks] == [2, 1], name


class Ascending:
    """A learned method's model interface (scoi.ctq.CtqRanker.predict), predicting each
    candidate's quality as its pool position: the ranking must follow the predictions."""

    def predict(self, query: str, srcs: list[str], tgts: list[str], bm25: list[float]) -> np.ndarray:
        return np.arange(len(srcs), dtype=float)


def test_rbm25_prepares_the_tokens_of_its_variant_and_the_others_read_moses_tokens() -> None:
    rbm25 = REGISTRY["rbm25"]
    assert rbm25.tokenizer(rbm25_variant="moses") is None
    assert rbm25.tokenizer(rbm25_variant="ctq") is ctq_tokens
    assert rbm25.tokenizer(rbm25_variant="agrawal") is tokens_13a
    assert tokens_13a("Un chat, qui dort.  ") == ["Un", "chat", ",", "qui", "dort", "."]
    with pytest.raises(ValueError, match="unknown R-BM25 variant"):
        rbm25.tokenizer(rbm25_variant="nope")
    assert [m for m in METHODS if REGISTRY[m].tokens is not None] == ["rbm25"]


def test_signature_spelling_and_order_are_fixed() -> None:
    """Stored signatures are compared as text: this is the format (a job's, a selection's)."""
    job = signature("fr", "en", {"method": "rbm25", **method_parts({"rbm25_variant": "agrawal"}), "parsers": None,
                                 "k": 4, "pool": 100, "fill": "none", "seed": 0, "corpora": corpora_part(None),
                                 "model": "openai:m", "template": "xglm", "order": "reverse",
                                 "max_new_tokens": 128})
    assert job == ("fr-en|method:rbm25|rbm25:agrawal|k:4|pool:100|fill:none|seed:0|corpora:all|model:openai:m|"
                   f"template:xglm|order:reverse|max_new_tokens:128|scoi:{__version__}")
    sel = signature("fr", "en", {"corpora": corpora_part(["a", "b"]), "parser": "p==1/spacy-tokens", "k": 3,
                                 "method": "fuzzy-ann", **method_parts({"embedder": "E", "ef_search": 40}),
                                 "pool": 20, "sim": "distance", "words": "set", "fill": "random", "seed": 3,
                                 "bm25": "k1=1.5,b=0.75,exact"})
    assert sel == ("fr-en|method:fuzzy-ann|embedder:E|hnsw:cosine,ef_search=40|k:3|pool:20|sim:distance|words:set|"
                   f"fill:random|seed:3|bm25:k1=1.5,b=0.75,exact|corpora:a,b|parser:p==1/spacy-tokens|scoi:{__version__}")
    with pytest.raises(ValueError, match="unknown signature part"):
        signature("fr", "en", {"modle": "x"})
    assert PARTS.index("parsers") < PARTS.index("k") < PARTS.index("model")


def test_the_registry_and_defaults_import_without_numpy() -> None:
    """The CLI builds its choices, help and defaults from them: a one-off command stays fast."""
    code = ("import sys, scoi.core.methods, scoi.core.defaults, scoi.core.signature, scoi.cli.job_options; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
