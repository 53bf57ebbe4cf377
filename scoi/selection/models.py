"""The models a method brings into a selection: the stored embedder (the fuzzy methods)
and the CTQ Scorer ranker (``--method ctq``), each named in the selection's params and
signature so that a result says which model made it. Looked up through the primary:
models are stored there, and a replica may not have the newest one yet."""

from __future__ import annotations

import psycopg

from scoi.core import methods
from scoi.ctq import CtqError, CtqRanker, find_model
from scoi.selection.embedding import Embeddings
from scoi.selection.types import SelectionError


class Models:
    """One direction's models: ``embeddings`` (the selector's, shared) and the CTQ model
    named ``ctq_model`` (None: the direction's newest fitted one), loaded on first use."""

    def __init__(self, primary: psycopg.Connection, src: str, tgt: str, embeddings: Embeddings,
                 ctq_model: str | None) -> None:
        self.primary, self.src, self.tgt = primary, src, tgt
        self.embeddings, self.ctq_model = embeddings, ctq_model
        self._ctq: CtqRanker | None = None

    def ctq_ranker(self) -> CtqRanker:
        """The CTQ Scorer ranker of ``ctq_model``; SelectionError when none is fitted."""
        if self._ctq is None:
            try:
                self._ctq = CtqRanker(find_model(self.primary, self.ctq_model, self.src, self.tgt))
            except CtqError as e:
                raise SelectionError(str(e)) from None
        return self._ctq

    def embedder_name(self, method: str) -> str | None:
        """The stored embedder's name when ``method`` uses embeddings, else None."""
        return self.embeddings.row(self.primary).name if methods.method(method).embeddings else None

    def model_signature(self, method: str) -> str | None:
        """The CTQ model's signature when ``method`` is learned, else None."""
        return self.ctq_ranker().model.signature if methods.method(method).learned else None


__all__ = ["Models"]
