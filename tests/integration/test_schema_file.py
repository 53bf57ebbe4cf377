"""scoi/db/schema.sql is the schema the migrations build (regenerate: python -m scoi.db.dump_schema)."""

from __future__ import annotations

from scoi.db.dump_schema import SCHEMA_FILE, diff, schema_sql


def test_schema_file_matches_a_migrated_database(db_url: str) -> None:
    # db_url is a copy of the session's template, migrated from scratch to head.
    expected = SCHEMA_FILE.read_text(encoding="utf-8")
    actual = schema_sql(db_url)
    assert actual == expected, (
        "scoi/db/schema.sql is stale (a migration was added or changed?); regenerate it with "
        "`python -m scoi.db.dump_schema`. Diff:\n" + diff(expected, actual))
