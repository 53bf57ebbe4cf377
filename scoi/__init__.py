"""scoi: SCOI in-context example selection backed by PostgreSQL.

Public API (kept small and importable without side effects):

- :func:`scoi.db.engine.get_engine` — an SQLAlchemy engine on the configured database
- :func:`ingest.pipeline.ingest_files` — load a parallel corpus
- :class:`scoi.selector.Selector` — pick in-context examples for a sentence
"""

__version__ = "0.1.0"
