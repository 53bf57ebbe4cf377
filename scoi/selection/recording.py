"""Store a selection so a person can inspect it in SQL (tables and views of migration 0002;
the match % of candidates and picks since 0023)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import psycopg

from scoi.core.polynomial import LabelSpace, parse_key
from scoi.db.literals import sparsevec
from scoi.db.queries import load
from scoi.selection.types import SelectionResult

SQL = load("record")


def record_selection(conn: psycopg.Connection, result: SelectionResult, labels: LabelSpace) -> int:
    """Write the selection, its query terms, pool and picks in one transaction; return its id."""
    return record_selections(conn, [(result, labels)])[0]


def record_selections(conn: psycopg.Connection,
                      selections: Sequence[tuple[SelectionResult, LabelSpace]]) -> list[int]:
    """Write several selections in one transaction and five round trips (ids drawn first,
    then one COPY per table): a worker records a whole batch's this way. Their ids, in order."""
    if not selections:
        return []
    with conn.transaction():
        ids = [r[0] for r in conn.execute(SQL["next_selection_ids"], {"n": len(selections)})]
        cur = conn.cursor()
        with cur.copy(SQL["copy_selections"]) as cp:
            for sel_id, (result, _) in zip(ids, selections):
                cp.write_row((sel_id, result.query, result.src_lang, result.tgt_lang, result.method, result.k,
                              json.dumps(result.params), result.signature, result.query_tokens))
        with cur.copy(SQL["copy_query_terms"]) as cp:
            for sel_id, (result, labels) in zip(ids, selections):
                for key, mult in result.query_terms.items():
                    exps = {labels.add(name): power for name, power in parse_key(key).items()}
                    cp.write_row((sel_id, key, mult, sparsevec(exps)))
        with cur.copy(SQL["copy_candidates"]) as cp:
            for sel_id, (result, _) in zip(ids, selections):
                for rank, c in enumerate(result.candidates, 1):
                    cp.write_row((sel_id, rank, c.pair_id, c.score, c.match))
        with cur.copy(SQL["copy_picks"]) as cp:
            for sel_id, (result, _) in zip(ids, selections):
                for pos, p in enumerate(result.selected, 1):
                    cp.write_row((sel_id, pos, p.pair_id, p.criterion, p.coverage, p.match))
    return ids
