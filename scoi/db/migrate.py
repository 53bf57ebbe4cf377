"""Apply Alembic migrations from Python (``scoi db upgrade``/``downgrade``, first use).

Alembic and SQLAlchemy are imported only when something is to be migrated or inspected:
the check every command makes on start-up (:func:`at_head`) reads the head revision from
the migration files' text and the database's revision with one psycopg query.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config

# Serialises concurrent first-use upgrades (two workers starting at once).
_MIGRATION_LOCK_ID = 0x5C01

# ``revision = "0007"`` / ``down_revision = "0006"`` (or None, or a tuple for a merge) as
# Alembic's templates write them, at the start of a line of a revision file.
_REVISION_LINE = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+)$", re.MULTILINE)
_QUOTED = re.compile(r"""["']([^"']+)["']""")


def _sql() -> dict[str, str]:
    from scoi.db.queries import load

    return load("migrate")


def _versions_dir() -> Path:
    import scoi.migrations as migrations_pkg

    return Path(migrations_pkg.__file__).parent / "versions"


def known_heads() -> frozenset[str] | None:
    """Head revisions read from the revision files' text, without importing them (what
    Alembic's ScriptDirectory does, with Alembic itself: ~0.3 s of CPU per process).
    None when a file does not state its revisions in the plain form, so the caller
    asks Alembic instead."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted(_versions_dir().glob("*.py")):
        if path.name.startswith("__"):
            continue
        found = dict((k, v.strip()) for k, v in _REVISION_LINE.findall(path.read_text(encoding="utf-8")))
        rev = _QUOTED.fullmatch(found.get("revision", ""))
        down = found.get("down_revision")
        if rev is None or down is None:
            return None
        revisions.add(rev.group(1))
        parents.update(_QUOTED.findall(down))
    heads = revisions - parents
    return frozenset(heads) if heads else None


def at_head(url: str) -> bool:
    """Whether the database at ``url`` is at the head revision: one query, no Alembic.
    False when in doubt (no ``alembic_version`` table, files not in the plain form), so
    the caller runs the full upgrade, which is a no-op when nothing is to do."""
    import psycopg

    from scoi.db import connect

    heads = known_heads()
    if heads is None:
        return False
    try:
        with connect(url, autocommit=True) as conn:
            stored = {r[0] for r in conn.execute(_sql()["stored_revisions"]).fetchall()}
    except psycopg.errors.UndefinedTable:
        return False
    return stored == set(heads)


def _config(connection: sa.Connection | None = None) -> Config:
    import scoi.migrations as migrations_pkg
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrations_pkg.__file__).parent))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()


def current_revision(engine: sa.Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Upgrade to ``revision``; cheap no-op when already there."""
    from alembic import command

    check_revision(revision, allowed=("head", "heads"), step="+")
    if revision == "head" and current_revision(engine) == head_revision():
        return
    with engine.begin() as conn:
        conn.exec_driver_sql(_sql()["migration_lock"], {"lock_id": _MIGRATION_LOCK_ID})
        command.upgrade(_config(conn), revision)
    _vacuum(engine)


def _vacuum(engine: sa.Engine) -> None:
    """VACUUM ANALYZE after a schema change: migrations may rebuild tables (0034 rewrites
    ``bm25_doc``), which then have no planner statistics and no visibility map until
    autovacuum comes. VACUUM cannot run inside the migration's transaction, hence here."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(_sql()["vacuum_analyze"])


class RevisionError(ValueError):
    """A target revision that no migration file names."""


def known_revisions() -> list[str]:
    """The revision ids of the migration files, in file order (read as text, no Alembic)."""
    out = []
    for path in sorted(_versions_dir().glob("*.py")):
        if not path.name.startswith("__"):
            found = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
            rev = _QUOTED.fullmatch(found.get("revision", "").strip())
            if rev:
                out.append(rev.group(1))
    return out


def check_revision(revision: str, *, allowed: tuple[str, ...] = ("base", "head", "heads"), step: str = "-+") -> str:
    """``revision`` if a migration can go there: a known id, one of ``allowed``, or a
    relative step (``-1`` down, ``+2`` up: signs in ``step``); else RevisionError naming the known ones, before Alembic
    (whose error is a traceback) is imported."""
    known = known_revisions()
    if revision in known or revision in allowed or re.fullmatch(rf"[{re.escape(step)}][1-9][0-9]{{0,3}}", revision):
        return revision
    raise RevisionError(f"unknown revision {revision!r} (known: {', '.join([*allowed, *known])})")


def downgrade(engine: sa.Engine, revision: str) -> None:
    from alembic import command

    check_revision(revision, allowed=("base",), step="-")
    with engine.begin() as conn:
        conn.exec_driver_sql(_sql()["migration_lock"], {"lock_id": _MIGRATION_LOCK_ID})
        command.downgrade(_config(conn), revision)
