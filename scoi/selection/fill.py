"""The method's step and what happens around it: each candidate's match % against the
query (and the ``--min-match`` cut), the method run on the pool as its registry entry
says (its tokens, its ranking), and ``--fill random``'s top-up of a short selection."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from scoi.core import methods
from scoi.core.greedy import select as rank
from scoi.core.match import match_all
from scoi.core.pool import PoolTexts, distinct_sources, source_key
from scoi.db.queries import load
from scoi.selection.options import Options
from scoi.selection.preselect import pair_filter
from scoi.selection.preselector import BlockPreselector, fetch
from scoi.selection.query import QueryAnalysis
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


def run_method(query: QueryAnalysis, options: Options, method: str, k: int, text: str, tokens: list[str],
               terms: dict[str, int], offered: list[Candidate], embeddings: tuple[np.ndarray, np.ndarray] | None,
               model: Any = None) -> list[Pick]:
    """``method``'s picks among the ``offered`` candidates: the query and pool in one term
    table, the tokens the method reads (its registry entry's preparation, else Moses'),
    its ranking function (scoi.core.greedy.select); ``model``: a learned method's (ctq)."""
    q, q_ids, cands, table = query.coverage_inputs(terms, offered)
    pick_tokens = tokens
    if (tokenize := methods.method(method).tokenizer(rbm25_variant=options.rbm25_variant)) is not None:
        pick_tokens, cands = tokenize(text), cands.with_tokens([tokenize(r.src) for r in offered])
    picks = rank(q, pick_tokens, cands, k=k, method=method, similarity=options.similarity,
                 word_overlap=options.word_overlap, seed=options.seed, term_table=table, query_term_ids=q_ids,
                 rbm25_variant=options.rbm25_variant, embeddings=embeddings, model=model,
                 texts=None if model is None else PoolTexts(text, [r.src for r in offered], [r.tgt for r in offered],
                                                            [r.score for r in offered]))
    return [offered[p.index].pick(p.criterion, p.coverage) for p in picks]


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


__all__ = ["keep_matching", "random_fill", "run_method"]
