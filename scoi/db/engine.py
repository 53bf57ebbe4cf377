"""Connecting to PostgreSQL: the configured database (the user's server, or the embedded
one of :mod:`scoi.db.embedded`), SQLAlchemy engines migrated on first use, URLs, and
scratch databases for tests and benchmarks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scoi.config import database_url_from_env, debug_sql_from_env, read_database_url_from_env
from scoi.db.embedded import ddl, embedded_data_dir, start_embedded

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# SQLAlchemy (and Alembic) are imported where an engine is built, not here: a one-off
# ``scoi select`` needs neither (importing them costs ~0.3 s + ~0.3 s of CPU), only psycopg.
_engines: dict[str, Engine] = {}


@dataclass(frozen=True)
class DatabaseInfo:
    """Where the database is, for ``scoi db status``."""

    url: str  # libpq URI a person can paste into psql
    embedded: bool
    data_dir: Path | None


def resolve_database() -> DatabaseInfo:
    """The database scoi uses: ``SCOI_DATABASE_URL`` if set, else the embedded one."""
    url = database_url_from_env()
    if url:
        return DatabaseInfo(url=_libpq_url(url), embedded=False, data_dir=None)
    return DatabaseInfo(url=start_embedded(), embedded=True, data_dir=embedded_data_dir())


def resolve_read_url() -> str | None:
    """Where selection reads, when not from the configured database itself:
    ``SCOI_READ_DATABASE_URL`` (a streaming replica of it, see scoi.db.reads), or None."""
    url = read_database_url_from_env()
    return _libpq_url(url) if url else None


_SCHEME = re.compile(r"^postgres(?:ql)?(?:\+[A-Za-z0-9_]+)?://")


def _libpq_url(url: str) -> str:
    """Drop an SQLAlchemy driver suffix (``postgresql+psycopg://``) so psql accepts it.

    A plain ``postgres[ql][+driver]://`` URL only has its scheme rewritten (no SQLAlchemy
    import); anything else goes through SQLAlchemy's parser, as before.
    """
    if _SCHEME.match(url):
        return _SCHEME.sub("postgresql://", url, count=1)
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def sqlalchemy_url(libpq_url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(libpq_url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def get_engine(url: str | None = None, *, migrate: bool = True) -> Engine:
    """An engine on ``url`` (default: the configured database), migrated to head on first use."""
    if url is None:
        url = resolve_database().url
    key = sqlalchemy_url(url)
    engine = _engines.get(key)
    if engine is None:
        import sqlalchemy as sa

        if debug_sql_from_env():  # SCOI_DEBUG_SQL: log statements (set here, not at import)
            logging.getLogger("sqlalchemy.engine").setLevel(logging.INFO)
        engine = sa.create_engine(key, pool_pre_ping=True, future=True)
        if migrate:
            from scoi.db.migrate import upgrade

            upgrade(engine)
        _engines[key] = engine
    return engine


def ensure_migrated(url: str) -> None:
    """Migrate the database at ``url`` to head unless it is there already.

    What commands that only need a psycopg connection call instead of :func:`get_engine`:
    when the database's revision is the head (read from the migration files' text), the
    check is one query, and neither SQLAlchemy nor Alembic is imported (~0.6 s of CPU).
    """
    from scoi.db.migrate import at_head, upgrade

    if not at_head(url):
        upgrade(get_engine(url, migrate=False))  # also when this process has an engine already


def dispose_engines() -> None:
    """Close pooled connections (before fork, and in tests)."""
    for engine in _engines.values():
        engine.dispose()
    _engines.clear()


def redact(url: str) -> str:
    """The URL without its password, for printing (kept as typed when it has none)."""
    from sqlalchemy.engine import make_url

    if make_url(url).password is None:
        return url
    return make_url(url).render_as_string(hide_password=True)




def server_url(url: str, database: str) -> str:
    """The same server as ``url``, another database."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


def create_database(url: str, name: str, *, template: str | None = None, drop: bool = True) -> str:
    """Create database ``name`` on the server of ``url`` (for tests and benchmarks)."""
    from scoi.db import connect

    with connect(url, autocommit=True) as conn:
        if drop:
            conn.execute(ddl("drop_database", name=name))
        if template:
            conn.execute(ddl("create_database_from", name=name, template=template))
        else:
            conn.execute(ddl("create_database", name=name))
    return server_url(url, name)


def drop_database(url: str, name: str) -> None:
    from scoi.db import connect

    with connect(url, autocommit=True) as conn:
        conn.execute(ddl("drop_database", name=name))


__all__ = ["DatabaseInfo", "create_database", "dispose_engines", "drop_database", "ensure_migrated", "get_engine", "redact",
           "resolve_database", "resolve_read_url", "server_url", "sqlalchemy_url"]
