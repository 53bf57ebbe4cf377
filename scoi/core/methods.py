"""The selection methods: one registry that says, per method, what it reads (dependency
trees, a BM25 pool, sentence embeddings), the settings only it takes, its ranking function
and how its tokens are prepared. The selector, the jobs layer, the CLI and the service ask
it instead of testing method names.

Adding a method: one :class:`Method` entry in :data:`REGISTRY` naming its ranking function
(``module:function``, a function of a scoi.core.pool.Ranking and k returning picks, e.g.
in scoi.core.baselines) and, when it reads other tokens than Moses', its token preparation.

Importable without numpy: the CLI builds its choices and help from it (a one-off
``scoi`` command stays fast), so the functions are named here and imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Any

from scoi.core import defaults

#: Where a method's candidates come from: the BM25 preselected pool, the HNSW index of the
#: sentence embeddings over the whole database, or nowhere (no examples).
PRESELECTED, INDEX, NOTHING = "pool", "index", "nothing"
#: The R-BM25 variants (scoi.core.rbm25): scoi's, CTQ Scorer's as released, Agrawal et al.'s.
RBM25_VARIANTS = ("moses", "ctq", "agrawal")


@dataclass(frozen=True)
class Method:
    """What a selection method needs and does (the registry's entries)."""

    name: str
    #: its ranking function, ``module:function``: (scoi.core.pool.Ranking, k) -> picks
    ranker: str
    #: reads the dependency trees of the query and the candidates: a source language
    #: stored without trees (no parser installed) cannot serve it
    trees: bool = True
    candidates: str = PRESELECTED
    #: ranks by sentence embeddings: ``scoi embed`` first; the embedder is named in its
    #: params and signature
    embeddings: bool = False
    #: the settings only this method reads, in the order params and signatures name them
    #: (``rbm25_variant``, ``embedder``, ``ef_search``, ``ctq_model``); the other methods' omit them
    settings: tuple[str, ...] = ()
    #: its token preparation, ``module:function``: the method's settings -> a tokenizer of
    #: the query and candidates (None: the Moses tokens as stored)
    tokens: str | None = None
    #: its picks depend on the seed: an experiment runs it with several and averages
    seeded: bool = False
    #: ranks with a model trained in scoi (``scoi ctq train``), which the selector loads and
    #: hands to the ranking function (scoi.core.pool.Ranking.model)
    learned: bool = False

    @property
    def examples(self) -> bool:
        """Whether it picks examples at all (``zero`` does not: no corpus needed)."""
        return self.candidates != NOTHING

    @property
    def bm25_pool(self) -> bool:
        """Whether it ranks a BM25 preselected pool (which the worker prepares per batch)."""
        return self.candidates == PRESELECTED

    def rank(self, ranking: Any, k: int) -> list[Any]:
        """Up to ``k`` picks of ``ranking``'s pool (scoi.core.pool.Ranking -> Choice list)."""
        return _function(self.ranker)(ranking, k)

    def tokenizer(self, **settings: Any) -> Callable[[str], list[str]] | None:
        """How this method tokenizes the query and candidates with these settings, or None
        when it reads the stored Moses tokens."""
        return None if self.tokens is None else _function(self.tokens)(**settings)


@cache
def _function(ref: str) -> Callable[..., Any]:
    """The function a registry entry names (``module:function``), imported on first use."""
    module, name = ref.split(":")
    return getattr(import_module(module), name)


_COVER = "scoi.core.greedy:cover"
_BASE = "scoi.core.baselines:"
_EMBEDDED: dict[str, Any] = dict(trees=False, embeddings=True, ranker=_BASE + "fuzzy_picks")
REGISTRY: dict[str, Method] = {m.name: m for m in (
    Method("scoi", _COVER),
    Method("scoi-word-first", _COVER),
    Method("syntax", _COVER),
    Method("word", _COVER),
    Method("poly-topk", _BASE + "poly_topk"),
    Method("bm25", _BASE + "bm25_order", trees=False),
    Method("rbm25", _BASE + "rbm25_picks", trees=False, settings=("rbm25_variant",),
           tokens="scoi.core.rbm25:tokenizer"),
    Method("dpp", _BASE + "dpp_picks"),
    Method("fuzzy", settings=("embedder",), **_EMBEDDED),
    Method("fuzzy-ann", candidates=INDEX, settings=("embedder", "ef_search"), **_EMBEDDED),
    # CTQ Scorer (scoi.ctq): the pool's top k by a trained model's predicted one-shot quality
    Method("ctq", "scoi.core.ctq_rank:ctq_picks", trees=False, settings=("ctq_model",), learned=True),
    Method("random", _BASE + "random_picks", trees=False, seeded=True),
    Method("zero", _BASE + "nothing", trees=False, candidates=NOTHING),
)}

METHODS = tuple(REGISTRY)
#: The methods that rank by sentence embeddings (they need ``scoi embed`` first).
EMBEDDING_METHODS = tuple(m.name for m in REGISTRY.values() if m.embeddings)
#: The methods that never read a dependency tree: a source language stored without trees
#: (no parser installed) serves them; the others need the source sentences' trees.
TREELESS_METHODS = tuple(m.name for m in REGISTRY.values() if not m.trees)


def method(name: str) -> Method:
    """The registry's entry for ``name``; ValueError (with the choices) for an unknown one."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}") from None


def method_settings(name: str, *, rbm25_variant: str = defaults.RBM25_VARIANT, embedder: str | None = None,
                    ef_search: int | None = None, ctq_model: str | None = None) -> dict[str, str | int]:
    """The settings only method ``name`` reads, as its params store them (in signature
    order). ``embedder``: the stored name (defaults.EMBEDDER when None); ``ef_search``:
    None leaves it out (a job's selections search with the default, and their own
    signatures name it); ``ctq_model``: the CTQ Scorer model's signature (``NAME@...``,
    scoi.ctq), None leaves it out."""
    given: dict[str, str | int | None] = {"rbm25_variant": rbm25_variant,
                                          "embedder": embedder or defaults.EMBEDDER, "ef_search": ef_search,
                                          "ctq_model": ctq_model}
    return {s: v for s in method(name).settings if (v := given[s]) is not None}


def method_help() -> str:
    """One line for ``--method``: every method, and which need embeddings."""
    return (" | ".join(METHODS) + f" ({', '.join(EMBEDDING_METHODS)}: need `scoi embed` first; "
            "README, Methods, says when each is worth trying).")


__all__ = ["EMBEDDING_METHODS", "METHODS", "Method", "RBM25_VARIANTS", "REGISTRY", "TREELESS_METHODS", "method",
           "method_help", "method_settings"]
