"""Translation-memory reuse: the stored translation of a sentence's exact match (a CAT
tool's 100% match, scoi.core.exact), so jobs, schedules and ``/api/translate`` insert it
instead of asking the model. The one reader of scoi/db/sql/reuse.sql.

When several stored pairs match (the same source ingested twice, or with two
translations), the newest wins: the largest pair id, i.e. the last one ingested.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from scoi.core.exact import exact_sha
from scoi.db.queries import load

_SQL = load("reuse")


class Match(NamedTuple):
    """The pair whose translation is reused, and that translation."""

    pair_id: int
    target: str


def exact_matches(conn: psycopg.Connection, src: str, tgt: str, texts: Sequence[str], *,
                  corpora: Sequence[str] | None = None, where: dict[str, str] | None = None) -> dict[str, Match]:
    """Each of ``texts`` that has an exact match among the ``src``-``tgt`` pairs (of
    ``corpora``, whose metadata holds every ``where`` key with that value), with the newest
    matching pair: one round trip for the lot. Blank texts never match."""
    keys = {t: exact_sha(t) for t in dict.fromkeys(texts) if t.strip()}
    if not keys:
        return {}
    found = {bytes(sha): Match(pair_id, target) for sha, pair_id, target in conn.execute(_SQL["exact_matches"], {
        "shas": list(keys.values()), "lang": src.lower(), "tgt": tgt.lower(),
        "corpora": list(corpora) if corpora else None, "meta": Jsonb(where) if where else None})}
    return {t: found[k] for t, k in keys.items() if k in found}


__all__ = ["Match", "exact_matches"]
