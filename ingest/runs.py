"""Run and catalogue rows of an ingest: corpus, parser, ingest_run, rejected_row.

The only reader of scoi/db/sql/ingest_runs.sql; the pipeline, the writer, ``scoi
reanalyze`` and ``scoi corpora`` call these functions. Each runs in the caller's
transaction (or cursor), so callers keep deciding what commits together.
"""

from __future__ import annotations

from typing import Any

import psycopg

from scoi.core import defaults
from scoi.db.queries import load

_SQL = load("ingest_runs")


def get_or_create_corpus(conn: psycopg.Connection, name: str, src: str, tgt: str) -> tuple[int, str, str]:
    """(id, src_lang, tgt_lang) of corpus ``name``, created for src-tgt if new: an
    existing corpus keeps its languages, for the caller to check. Call under the ingest lock."""
    return conn.execute(_SQL["get_or_create_corpus"], {"name": name, "src": src, "tgt": tgt}).fetchone()


def get_or_create_parser(conn: psycopg.Connection, lang: str, name: str, version: str, tree_tokens: str) -> int:
    """Id of the parser row of an analysis scheme, created if new. Call under the ingest lock."""
    return conn.execute(_SQL["get_or_create_parser"], {"lang": lang, "name": name, "version": version,
                                                      "tree_tokens": tree_tokens}).fetchone()[0]


def start_run(conn: psycopg.Connection, *, corpus_id: int, files: list[str], fmt: str, workers: int,
              parsers: str, host: str, pid: int) -> int:
    """Id of a new ingest_run row (``parsers``: JSON text, lang -> scheme).

    ``conn`` then holds the run's session lock until it closes, so a process killed
    mid-run leaves a row that ``ingest_run_status`` reads as dead instead of running."""
    run_id = conn.execute(_SQL["start_run"], {"corpus_id": corpus_id, "files": files, "format": fmt,
                                              "workers": workers, "parsers": parsers, "host": host,
                                              "pid": pid}).fetchone()[0]
    conn.execute(_SQL["hold_run_lock"], {"run_id": run_id})
    return run_id


def record_rejected(conn: psycopg.Connection, run_id: int, file: str, line: int, reason: str,
                    content: str | None = None) -> None:
    """List a skipped input row under its run (idempotent)."""
    conn.execute(_SQL["insert_rejected"], {"run_id": run_id, "file": file, "line": line, "reason": reason,
                                          "content": content})


def add_run_counts(conn: psycopg.Connection | psycopg.Cursor, run_id: int, *, read: int, inserted: int,
                   duplicates: int, rejected: int) -> None:
    """Add to the run's counters; takes the batch's cursor so the counts commit with the batch."""
    conn.execute(_SQL["add_run_counts"], {"run_id": run_id, "read": read, "inserted": inserted,
                                         "duplicates": duplicates, "rejected": rejected})


def finish_run(conn: psycopg.Connection, run_id: int, status: str, error: str | None = None) -> None:
    """Mark the run done or failed (``status``), with its error text."""
    conn.execute(_SQL["finish_run"], {"run_id": run_id, "status": status, "error": error})


def vacuum_analyze(conn: psycopg.Connection) -> None:
    """Fresh planner statistics after a bulk load; ``conn`` must be in autocommit (VACUUM)."""
    conn.execute(_SQL["vacuum_after_ingest"])
    conn.execute(_SQL["analyze_after_ingest"])


def list_runs(conn: psycopg.Connection, corpus: str | None = None,
              limit: int = defaults.INGEST_RUNS_SHOWN) -> list[dict[str, Any]]:
    """The newest ingest runs (of ``corpus``), state included (dead = its process is gone)."""
    return _rows(conn.execute(_SQL["list_runs"], {"corpus": corpus, "limit": limit}))


def _rows(cur: psycopg.Cursor) -> list[dict[str, Any]]:
    cols = [d.name for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]
