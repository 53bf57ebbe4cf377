"""Apply Alembic migrations from Python (``scoi db upgrade``/``downgrade``, first use)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

# Serialises concurrent first-use upgrades (two workers starting at once).
_MIGRATION_LOCK_ID = 0x5C01


def _config(connection: sa.Connection | None = None) -> Config:
    import scoi.migrations as migrations_pkg

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations_pkg.__file__).parent))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Upgrade to ``revision``; cheap no-op when already there."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    with engine.begin() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_ID})")
        command.upgrade(_config(conn), revision)
    _vacuum(engine)


def _vacuum(engine: sa.Engine) -> None:
    """VACUUM ANALYZE after a schema change: migrations may rebuild tables (0004 rebuilds
    ``posting``), and until the visibility map is set the preselection's index-only
    scans visit the heap (measured at 1M pairs: p95 60 ms before, 42 ms after). VACUUM
    cannot run inside the migration's transaction, hence here."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM (ANALYZE)")


def downgrade(engine: sa.Engine, revision: str) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_ID})")
        command.downgrade(_config(conn), revision)
