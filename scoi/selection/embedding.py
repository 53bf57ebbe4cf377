"""The fuzzy methods' inputs: the stored embedder (refused when nothing is embedded with
it), its model, the query's vector and the candidates' vectors (the pool's, or the k
nearest pairs of the whole database by the HNSW index)."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from scoi.core import defaults
from scoi.core.pool import distinct_sources
from scoi.embedding.embedder import Embedder
from scoi.embedding.embeddings import EmbedderRow, find_embedder, nearest, pool_embeddings
from scoi.hub import model_name
from scoi.selection.preselector import BlockPreselector, fetch
from scoi.selection.types import Candidate, SelectionError


class Embeddings:
    """The stored embedder named ``model`` (default the paper's) and its model, each loaded
    on first use; ``ef_search``: the HNSW search's breadth for fuzzy-ann."""

    def __init__(self, model: str | None, ef_search: int) -> None:
        self.model, self.ef_search = model, ef_search
        self._row: EmbedderRow | None = None
        self._embedder: Embedder | None = None

    def row(self, conn: psycopg.Connection) -> EmbedderRow:
        """The stored embedder: refused when no sentence was embedded with it."""
        if self._row is None:
            name = model_name(self.model or defaults.EMBEDDER)
            row = find_embedder(conn, name)
            if row is None:
                raise SelectionError(f"no sentence is embedded with {name}; the fuzzy methods need embeddings: "
                                     f"scoi embed --model {name} (or pass --embedder with the model you embedded with)")
            self._row = row
        return self._row

    def embedder(self, conn: psycopg.Connection) -> Embedder:
        """The stored embedder's model, loaded on first use."""
        if self._embedder is None:
            self._embedder = Embedder(self.row(conn).name)
        return self._embedder

    def embed(self, conn: psycopg.Connection, text: str) -> np.ndarray:
        """The query's embedding by the stored embedder's model."""
        return self.embedder(conn).encode([text])[0]

    def inputs(self, conn: psycopg.Connection, engine: BlockPreselector, query: np.ndarray,
               rows: list[Candidate] | None, k: int) -> tuple[list[Candidate], tuple[np.ndarray, np.ndarray]]:
        """``rows`` given (fuzzy): the pool and its embeddings; None (fuzzy-ann): the k nearest
        pairs over the whole database by the HNSW index, one per source sentence, and theirs."""
        row: Any = self.row(conn)
        if rows is not None:
            return rows, (query, pool_embeddings(conn, row, [r.pair_id for r in rows], engine.src))
        n = k
        while True:  # the k nearest pairs, one per source sentence (as a pool holds them)
            found = nearest(conn, row, query, lang=engine.src, tgt=engine.tgt, corpora=engine.corpus_ids, n=n,
                            ef_search=self.ef_search, where=engine.where)
            rows = fetch(conn, engine.src, engine.tgt, [(pair_id, 1.0 - dist) for pair_id, dist, _ in found])
            keep = distinct_sources([r.src for r in rows])[:k]
            if len(keep) >= k or len(found) < n:
                break
            n *= 2
        rows, found = [rows[i] for i in keep], [found[i] for i in keep]
        vectors = np.stack([v for _, _, v in found]) if found else np.zeros((0, row.dim))
        return rows, (query, vectors)


__all__ = ["Embeddings"]
