"""What happens around the method: each candidate's match % against the query (and the
``--min-match`` cut), and ``--fill random``'s top-up of a short selection."""

from __future__ import annotations

import numpy as np
import psycopg

from scoi.core.pool import distinct_sources, source_key
from scoi.core.match import match_all
from scoi.db.queries import load
from scoi.selection.preselect import pair_filter
from scoi.selection.preselector import BlockPreselector, fetch
from scoi.selection.types import Candidate, Pick

SQL = load("select")


def keep_matching(tokens: list[str], rows: list[Candidate], embeddings: tuple[np.ndarray, np.ndarray] | None,
                  min_match: float | None) -> tuple[list[Candidate], tuple[np.ndarray, np.ndarray] | None]:
    """Set each candidate's match % against the query's tokens; with ``min_match``, keep
    only those at or above it (and their embeddings' rows), in pool order."""
    for row, m in zip(rows, match_all(tokens, [r.tokens for r in rows])):
        row.match = m
    if min_match is None:
        return rows, embeddings
    keep = [i for i, r in enumerate(rows) if r.match is not None and r.match >= min_match]
    if embeddings is not None:
        embeddings = (embeddings[0], embeddings[1][keep])
    return [rows[i] for i in keep], embeddings


def random_fill(conn: psycopg.Connection, engine: BlockPreselector, n: int, picked: list[Pick], tokens: list[str],
                seed: int, min_match: float | None) -> list[Pick]:
    """``n`` random pairs (seeded) of ``engine``'s pairs whose source sentences are neither
    picked already nor each other's (one slot per source sentence, docs/method.md §5), at or
    above ``min_match`` when one is set."""
    ids = [r[0] for r in conn.execute(SQL["random_examples"], {
        **pair_filter(engine.src, engine.tgt, engine.corpus_ids, engine.where),
        "exclude": [p.pair_id for p in picked],
        "seed": seed, "n": 2 * n}).fetchall()]  # spare ones: variants equal after source_key
    rows, _ = keep_matching(tokens, fetch(conn, engine.src, engine.tgt, [(i, 0.0) for i in ids]), None, min_match)
    taken = {source_key(p.src) for p in picked}
    fill = [r for r in (rows[i] for i in distinct_sources([r.src for r in rows])) if source_key(r.src) not in taken]
    return [Pick(r.pair_id, r.src, r.tgt, "fill", None, r.match) for r in fill[:n]]


__all__ = ["keep_matching", "random_fill"]
