"""What the database holds, for people and tools: corpora with their pair counts, and the
sentences of each language by analysis scheme. Read only; the one reader of
scoi/db/sql/corpora.sql (``scoi corpora``, ``scoi serve``'s /api/corpora)."""

from __future__ import annotations

from typing import Any

import psycopg

from scoi.db.queries import load

_SQL = load("corpora")


def list_corpora(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Corpora with their pair and run counts, by name, as column -> value."""
    return _rows(conn.execute(_SQL["list_corpora"]))


def language_trees(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Per language and analysis scheme, how many stored sentences it holds (with or
    without trees): what ``scoi corpora`` shows under the corpora."""
    return _rows(conn.execute(_SQL["language_trees"]))


def _rows(cur: psycopg.Cursor) -> list[dict[str, Any]]:
    cols = [d.name for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]
