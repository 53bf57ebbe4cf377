"""Fresh databases copied from the session's migrated template, and one-value queries."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

TEMPLATE = "scoi_test_template"


@contextmanager
def fresh_database(server_url: str, template: str = TEMPLATE) -> Iterator[str]:
    """A new database copied from ``template``, dropped afterwards."""
    from scoi.db.engine import create_database, dispose_engines, drop_database

    name = f"scoi_test_{uuid.uuid4().hex[:10]}"
    url = create_database(server_url, name, template=template, drop=False)
    try:
        yield url
    finally:
        dispose_engines()
        drop_database(server_url, name)


def scratch_database(server_url: str):
    """A fresh migrated database (copy of the session template) for a module or a block."""
    return fresh_database(server_url)


def view_columns(db_url: str, views: tuple[str, ...] = ("selection_pick_text", "job_item_trace")
                 ) -> dict[str, list[str]]:
    """Each view's column names, in order (what a person reading the view sees)."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                            "WHERE table_name = ANY(%s) ORDER BY table_name, ordinal_position", (list(views),))
        out: dict[str, list[str]] = {}
        for table, column in rows:
            out.setdefault(table, []).append(column)
        return out


def scalar(db_url: str, sql: str, params=None):
    with psycopg.connect(db_url) as conn:
        return conn.execute(sql, params).fetchone()[0]
