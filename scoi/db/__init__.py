"""Storage: connection handling, migrations and the SQL scoi runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


def connect(url: str, *, autocommit: bool = False, **kwargs: Any) -> psycopg.Connection:
    """Open a psycopg connection: the one place scoi and ingest connect (extra ``kwargs``
    go to :func:`psycopg.connect`, e.g. ``connect_timeout``).

    pgvector's types are registered when the database has the ``vector`` extension (a
    database before migration 0001, or the server's maintenance database, has not), so
    ``vector``/``sparsevec`` values load as pgvector objects wherever they are read.

    Array parameters, one convention: pass a Python ``list`` (psycopg binds it as an
    array) and cast it in the statement to the element type it must have
    (``%(ids)s::bigint[]``), so the type never depends on the values (an empty list, ints
    that fit int2); vectors go as pgvector's ``Vector``/``SparseVector`` or their text with
    an explicit ``::sparsevec`` cast. Never format values into the SQL text.
    """
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(url, autocommit=autocommit, **kwargs)
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:  # no vector extension in this database
        pass
    return conn


__all__ = ["connect"]
