"""scoi: SCOI in-context example selection backed by PostgreSQL.

The public API, importable from here (``from scoi import Selector``):

- :class:`Selector`, :class:`SelectionResult`, :class:`Bm25Params`, :class:`SelectionError`
  — pick in-context examples for a sentence (scoi.selection.selector);
- :class:`Analyzer`, :class:`Scheme` — Moses tokens and dependency-tree terms of a
  sentence, and the analysis scheme they follow (scoi.analysis);
- :func:`render_prompt`, :class:`Example`, :func:`extract_answer` — prompts and answers
  (scoi.core.prompt, scoi.core.answer); :func:`select_examples` — the pure greedy
  selection over a pool (scoi.core.greedy);
- :class:`Embedder` — a sentence-transformers model for the fuzzy methods (scoi.embedding.embedder;
  its vectors are stored by ``scoi embed``, scoi.embedding.embeddings);
- batch jobs: :mod:`scoi.jobs`. Loading corpora is the ingest layer's job
  (``ingest.pipeline.ingest_files``), which builds on this package.

The names are resolved on first use, so ``import scoi`` stays cheap (a one-off ``scoi``
command pays only for what it uses).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Selector": ("scoi.selection.selector", "Selector"),
    "SelectionResult": ("scoi.selection.selector", "SelectionResult"),
    "SelectionError": ("scoi.selection.selector", "SelectionError"),
    "Bm25Params": ("scoi.selection.selector", "Bm25Params"),
    "Analyzer": ("scoi.analysis", "Analyzer"),
    "Scheme": ("scoi.parsers", "Scheme"),
    "render_prompt": ("scoi.core.prompt", "render_prompt"),
    "extract_answer": ("scoi.core.answer", "extract_answer"),
    "Example": ("scoi.core.prompt", "Example"),
    "select_examples": ("scoi.core.greedy", "select"),
    "Embedder": ("scoi.embedding.embedder", "Embedder"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'scoi' has no attribute {name!r}") from None
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value
