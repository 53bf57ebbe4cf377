"""A migration's module-level constants, read without running it (no Alembic context)."""

from __future__ import annotations

import ast
from pathlib import Path

VERSIONS = Path(__file__).resolve().parents[2] / "migrations/versions"


def migration_constant(filename: str, name: str) -> object:
    """The literal value of ``name = ...`` in migrations/versions/``filename``."""
    tree = ast.parse((VERSIONS / filename).read_text(encoding="utf-8"))
    (value,) = (node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets))
    return ast.literal_eval(value)
