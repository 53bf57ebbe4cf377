"""Named SQL queries, kept as SQL in ``scoi/db/sql/*.sql`` (procrastinate style).

Each file holds blocks introduced by ``-- name: some_name`` followed by an optional
comment and the statement. Placeholders are psycopg's ``%(name)s``; values are always
passed as parameters, never formatted into the text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@lru_cache(maxsize=None)
def load(file: str) -> dict[str, str]:
    """All queries of ``sql/<file>.sql`` by name."""
    text = resources.files("scoi.db").joinpath("sql", f"{file}.sql").read_text(encoding="utf-8")
    parts = _NAME.split(text)
    queries = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        queries[name] = body.strip()
    return queries


def query(file: str, name: str) -> str:
    try:
        return load(file)[name]
    except KeyError:
        raise KeyError(f"no query {name!r} in scoi/db/sql/{file}.sql") from None
