"""The selection methods, apart from their code: one registry that says, per method, what
it reads (dependency trees, a BM25 pool, sentence embeddings), the settings only it takes,
and how it pads a short selection. The selector, the jobs layer, the CLI and the service
ask it instead of testing method names; the ranking itself is scoi.core.greedy's.

Importable without numpy: the CLI builds its choices and help from it (a one-off
``scoi`` command stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass

from scoi.core import defaults

#: Where a method's candidates come from: the BM25 preselected pool, the HNSW index of the
#: sentence embeddings over the whole database, or nowhere (no examples).
POOL, INDEX, NOTHING = "pool", "index", "nothing"
#: How a method pads when its own criterion stops short of k: ``EVERY`` it ranks the whole
#: pool, so it gives min(k, pool) picks; ``POOL_ORDER`` its picks, then the rest of the
#: pool in BM25 order up to k (criterion ``bm25``; rbm25's agrawal variant excepted, which
#: stops at its threshold); ``NONE`` it picks nothing. ``--fill random`` then tops any
#: short selection up with random pairs.
EVERY, POOL_ORDER, NONE = "every", "pool-order", "none"
#: The R-BM25 variants (scoi.core.rbm25): scoi's, CTQ Scorer's as released, Agrawal et al.'s.
RBM25_VARIANTS = ("moses", "ctq", "agrawal")


@dataclass(frozen=True)
class Method:
    """What a selection method needs and does (the registry's entries)."""

    name: str
    #: reads the dependency trees of the query and the candidates: a source language
    #: stored without trees (no parser installed) cannot serve it
    trees: bool = True
    candidates: str = POOL
    #: ranks by sentence embeddings: ``scoi embed`` first; the embedder is named in its
    #: params and signature
    embeddings: bool = False
    #: the settings only this method reads, in the order params and signatures name them
    #: (``rbm25_variant``, ``embedder``, ``ef_search``, ``ctq_model``); the other methods' omit them
    settings: tuple[str, ...] = ()
    pads: str = EVERY
    #: its picks depend on the seed: an experiment runs it with several and averages
    seeded: bool = False

    @property
    def examples(self) -> bool:
        """Whether it picks examples at all (``zero`` does not: no corpus needed)."""
        return self.candidates != NOTHING

    @property
    def bm25_pool(self) -> bool:
        """Whether it ranks a BM25 preselected pool (which the worker prepares per batch)."""
        return self.candidates == POOL


_EMBEDDED = dict(trees=False, embeddings=True)
REGISTRY: dict[str, Method] = {m.name: m for m in (
    Method("scoi"),
    Method("scoi-word-first"),
    Method("syntax"),
    Method("word"),
    Method("poly-topk"),
    Method("bm25", trees=False),
    Method("rbm25", trees=False, settings=("rbm25_variant",), pads=POOL_ORDER),
    Method("dpp", pads=POOL_ORDER),
    Method("fuzzy", settings=("embedder",), **_EMBEDDED),
    Method("fuzzy-ann", candidates=INDEX, settings=("embedder", "ef_search"), **_EMBEDDED),
    # CTQ Scorer (scoi.ctq, scoi.core.ctq_rank): the pool's top k by a trained model's predicted quality
    Method("ctq", trees=False, settings=("ctq_model",)),
    Method("random", trees=False, seeded=True),
    Method("zero", trees=False, candidates=NOTHING, pads=NONE),
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
