"""Sentence embedders for the fuzzy methods: a sentence-transformers model by hub name or
local directory, encoding batches into unit-length float32 vectors.

    from scoi.embedding.embedder import Embedder
    emb = Embedder("/models/paraphrase-multilingual-MiniLM-L12-v2")
    vectors = emb.encode(["Le chat dort.", "Il pleut."])   # (2, 384) float32, norm 1

Unit length: cosine is then a dot product, and pgvector's cosine distance (``<=>``) and
the re-ranking of :mod:`scoi.core.fuzzy` agree on the order. sentence-transformers (and
torch) are imported when an embedder is built, never by ``import scoi``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scoi.core.defaults import EMBEDDER as DEFAULT_MODEL
from scoi.hub import from_disk_or_hub, model_name

DEFAULT_BATCH = 64

HOW_TO_PROVIDE = ("Pass a local directory holding a sentence-transformers model instead "
                  "(--model /path/to/model: the folder SentenceTransformer.save() writes).")


class EmbedderError(RuntimeError):
    """An embedder that cannot be loaded (not on disk offline, not a sentence-transformers model)."""


class Embedder:
    """A loaded sentence-transformers model: :attr:`name`, :attr:`dim`, :meth:`encode`."""

    def __init__(self, model: str = DEFAULT_MODEL, *, batch_size: int = DEFAULT_BATCH, device: str = "cpu") -> None:
        self.name = model_name(model)
        self.batch_size = batch_size
        self.model = _load(self.name, device)
        dim = self.model.get_sentence_embedding_dimension()
        if not dim:
            raise EmbedderError(f"model {self.name!r} does not report its embedding dimension; "
                                "is it a sentence-transformers model (with a Pooling module)?")
        self.dim = int(dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 vectors of length 1 (a zero vector stays zero)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)


def _load(name: str, device: str) -> Any:
    """The SentenceTransformer for a directory or hub name (scoi.hub's policy: from disk
    first, failing at once with what to do when it is not there and cannot be fetched)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # the optional "llm" extra
        raise EmbedderError(f"embedding needs sentence-transformers ({exc}); install it with: "
                            "pip install 'scoi[llm]'") from None
    local = Path(name).is_dir()

    def attempt(local_files_only: bool) -> Any:
        try:
            return SentenceTransformer(name, device=device, local_files_only=local_files_only)
        except Exception as exc:  # noqa: BLE001 - OSError, ValueError, ... from transformers
            what = f"the sentence-transformers model in {name}" if local else f"the embedding model {name!r}"
            raise EmbedderError(f"cannot load {what}: {exc}") from exc

    return from_disk_or_hub(attempt, what=f"embedding model {name!r}", local=local,
                            how_to_provide=HOW_TO_PROVIDE, error=EmbedderError)


__all__ = ["DEFAULT_MODEL", "Embedder", "EmbedderError", "model_name"]
