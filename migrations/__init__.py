"""Alembic migrations; installed as the ``scoi.migrations`` package (see pyproject)."""
