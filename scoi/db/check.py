"""Integrity checks of the stored corpus: ``scoi db check`` and the tests' assert_consistent.

Since migration 0005 ingest keeps several references without foreign keys (docs/schema.md,
"Writes"), and the counters (df, N, total length, the token bounds of 0008) are maintained
by the writer; these checks are what verifies them. Statements: ``scoi/db/sql/check.sql``.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from scoi.db import connect
from scoi.db.queries import load

_COMMENT = re.compile(r"^--\s?(.*)$")
#: ``application_name`` of the checks' session: what to look for in pg_stat_activity.
APPLICATION_NAME = "scoi db check"


@dataclass(frozen=True)
class CheckResult:
    """One invariant: its name in check.sql, what it means, the rows that break it, and how
    long its statement took."""

    name: str
    description: str
    violations: int
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3), "ok": self.ok}


def checks() -> dict[str, tuple[str, str]]:
    """name -> (description, statement), in the order of check.sql."""
    out = {}
    for name, body in load("check").items():
        first = body.splitlines()[0]
        match = _COMMENT.match(first)
        out[name] = (match.group(1).strip() if match else name, body)
    return out


def run_checks(url: str, names: list[str] | None = None,
               progress: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run the checks (all, or ``names``) in one read-only REPEATABLE READ transaction, so
    a concurrent ingest's commit between two checks cannot show as a violation; ``progress``
    gets each result as its check ends (a long check is one line at a time, not silence).

    Interrupted (Ctrl-C, or SIGTERM while this runs on the main thread), the running
    statement is cancelled on the server before the error propagates (psycopg cancels on
    KeyboardInterrupt and SystemExit): no check keeps a backend busy after scoi is gone."""
    import psycopg

    selected = checks()
    if names is not None:
        unknown = sorted(set(names) - set(selected))
        if unknown:
            raise KeyError(f"no check {', '.join(unknown)} in scoi/db/sql/check.sql")
        selected = {n: selected[n] for n in selected if n in names}
    results = []
    with _sigterm_exits(), connect(url, application_name=APPLICATION_NAME) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            for name, (description, sql) in selected.items():
                t0 = time.perf_counter()
                violations = int(conn.execute(sql).fetchone()[0])
                results.append(CheckResult(name, description, violations, time.perf_counter() - t0))
                if progress is not None:
                    progress(results[-1])
    return results


class Terminated(SystemExit):
    """SIGTERM during the checks (a SystemExit, so that psycopg cancels the statement)."""


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM raises SystemExit meanwhile (on the main thread), so psycopg cancels the
    statement as on Ctrl-C instead of the process dying with the backend still at work."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["APPLICATION_NAME", "CheckResult", "Terminated", "checks", "run_checks"]
