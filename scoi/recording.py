"""Store a selection so a person can inspect it in SQL (tables and views of migration 0002)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import psycopg

from scoi.core.polynomial import LabelSpace, parse_key
from scoi.db.literals import sparsevec
from scoi.db.queries import load

if TYPE_CHECKING:
    from scoi.selector import SelectionResult

SQL = load("record")


def record_selection(conn: psycopg.Connection, result: SelectionResult, labels: LabelSpace) -> int:
    """Write the selection, its query terms, pool and picks in one transaction; return its id."""
    with conn.transaction():
        sel_id = conn.execute(SQL["insert_selection"], {
            "query": result.query, "src": result.src_lang, "tgt": result.tgt_lang, "method": result.method,
            "k": result.k, "params": json.dumps(result.params), "signature": result.signature,
            "tokens": result.query_tokens}).fetchone()[0]
        cur = conn.cursor()
        with cur.copy(SQL["copy_query_terms"]) as cp:
            for key, mult in result.query_terms.items():
                exps = {labels.add(name): power for name, power in parse_key(key).items()}
                cp.write_row((sel_id, key, mult, sparsevec(exps)))
        with cur.copy(SQL["copy_candidates"]) as cp:
            for rank, c in enumerate(result.candidates, 1):
                cp.write_row((sel_id, rank, c.pair_id, c.score))
        with cur.copy(SQL["copy_picks"]) as cp:
            for pos, p in enumerate(result.selected, 1):
                cp.write_row((sel_id, pos, p.pair_id, p.criterion, p.coverage))
    return sel_id
