"""Integrity checks of the stored corpus: ``scoi db check`` and the tests' assert_consistent.

Since migration 0005 ingest keeps several references without foreign keys (docs/schema.md,
"Writes"), and the counters (df, N, total length, the token bounds of 0008) are maintained
by the writer; these checks are what verifies them. Statements: ``scoi/db/sql/check.sql``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scoi.db.queries import load

_COMMENT = re.compile(r"^--\s?(.*)$")


@dataclass(frozen=True)
class CheckResult:
    """One invariant: its name in check.sql, what it means, and the rows that break it."""

    name: str
    description: str
    violations: int

    @property
    def ok(self) -> bool:
        return self.violations == 0


def checks() -> dict[str, tuple[str, str]]:
    """name -> (description, statement), in the order of check.sql."""
    out = {}
    for name, body in load("check").items():
        first = body.splitlines()[0]
        match = _COMMENT.match(first)
        out[name] = (match.group(1).strip() if match else name, body)
    return out


def run_checks(url: str, names: list[str] | None = None) -> list[CheckResult]:
    """Run the checks (all, or ``names``) in one read-only REPEATABLE READ transaction, so
    a concurrent ingest's commit between two checks cannot show as a violation."""
    import psycopg

    selected = checks()
    if names is not None:
        unknown = sorted(set(names) - set(selected))
        if unknown:
            raise KeyError(f"no check {', '.join(unknown)} in scoi/db/sql/check.sql")
        selected = {n: selected[n] for n in selected if n in names}
    from scoi.db import connect

    with connect(url) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            return [CheckResult(name, description, int(conn.execute(sql).fetchone()[0]))
                    for name, (description, sql) in selected.items()]


__all__ = ["CheckResult", "checks", "run_checks"]
