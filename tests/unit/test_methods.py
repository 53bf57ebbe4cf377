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
from scoi.core.greedy import Candidate, select
from scoi.core.methods import (EMBEDDING_METHODS, EVERY, METHODS, NONE, POOL_ORDER, REGISTRY, TREELESS_METHODS,
                               method, method_settings)
from scoi.core.signature import PARTS, corpora_part, method_parts, signature

TERM = np.array([[1, 0]])


def _pool(n: int, tokens: list[list[str]] | None = None) -> list[Candidate]:
    """n candidates, each one term, with distinct tokens (or ``tokens``)."""
    tokens = tokens or [[f"w{i}", "x"] for i in range(n)]
    return [Candidate(TERM + i, toks) for i, toks in enumerate(tokens)]


#: The methods scoi.core.greedy ranks: all but ctq, whose trained model ranks its pool
#: (scoi.ctq; its padding: tests/unit/test_ctq_core.py).
GREEDY_METHODS = [m for m in METHODS if m != "ctq"]


def _embeddings(n: int) -> tuple[np.ndarray, np.ndarray]:
    vecs = np.eye(n + 1, dtype=np.float32)[1:] + 0.1
    return np.ones(n + 1, dtype=np.float32) / np.sqrt(n + 1), vecs


@pytest.mark.parametrize("name", GREEDY_METHODS)
def test_a_short_pool_is_padded_as_the_registry_says(name: str) -> None:
    """k above the pool: every method that picks returns the whole pool (its own ranking or
    its picks then pool order); zero returns nothing."""
    n = 3
    picks = select(TERM, ["w0", "x"], _pool(n), k=5, method=name, embeddings=_embeddings(n))
    assert len(picks) == {EVERY: n, POOL_ORDER: n, NONE: 0}[method(name).pads]


@pytest.mark.parametrize("name", [m for m in METHODS if REGISTRY[m].pads == POOL_ORDER])
def test_pool_order_padding_fills_with_bm25_picks(name: str) -> None:
    """A criterion that stops short (no candidate shares a token, or identical candidates)
    is padded with the pool's next candidates in BM25 order."""
    cands = [Candidate(TERM, ["a"]) for _ in range(4)]
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
    cands = [Candidate(empty, [f"w{i}", "x"]) for i in range(4)]
    for name in TREELESS_METHODS:
        if name == "ctq":  # its model ranks (scoi.ctq): the coverage code refuses it rather than guess
            with pytest.raises(ValueError, match="trained CTQ Scorer model"):
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
