"""The selection method names, apart from their code: the CLI builds its choices and help
from them without importing numpy (a one-off ``scoi`` command stays fast)."""

from __future__ import annotations

METHODS = ("scoi", "scoi-word-first", "syntax", "word", "poly-topk", "bm25", "rbm25", "dpp", "fuzzy", "fuzzy-ann",
           "random", "zero")
#: The methods that rank by sentence embeddings (they need ``scoi embed`` first).
EMBEDDING_METHODS = ("fuzzy", "fuzzy-ann")
#: The methods that never read a dependency tree: a source language stored without trees
#: (no parser installed) serves them; the others need the source sentences' trees.
TREELESS_METHODS = ("bm25", "rbm25", "random", "zero", *EMBEDDING_METHODS)


def method_help() -> str:
    """One line for ``--method``: every method, and which need embeddings."""
    return (" | ".join(METHODS) + f" ({', '.join(EMBEDDING_METHODS)}: need `scoi embed` first; "
            "README, Methods, says when each is worth trying).")
