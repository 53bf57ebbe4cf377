"""Helpers shared by the CLI commands: errors, JSON output, the database URL."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console

console = Console(stderr=False)
err_console = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print an actionable error and exit non-zero."""
    from rich.text import Text

    err_console.print(Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    """One JSON object on one line of stdout (the last line, for scripts)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def database_url() -> str:
    """The libpq URL of the configured database, migrated to head (checked without
    SQLAlchemy or Alembic when there is nothing to migrate: see ``ensure_migrated``)."""
    from scoi.db.engine import ensure_migrated, resolve_database

    try:
        info = resolve_database()
        ensure_migrated(info.url)
    except Exception as e:  # noqa: BLE001 - shown to the user with the reason
        fail(f"cannot open the database: {e}")
    return info.url
