"""Coverage gaps: the words and tree terms of sentences that no selected example covers and
that no example of the BM25 pool contains, ranked by how many sentences lack them.

Over recorded selections (view ``selection_gap``, migration 0021): a job's items, a
schedule's jobs, or a file of sentences selected here and recorded in a transaction that
is rolled back (nothing of them stays in the database).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from scoi.core import defaults
from scoi.db.queries import load
from scoi.jobs.store import get_job
from scoi.selection.recording import record_selections
from scoi.selection.selector import Selector

SQL = load("gaps")
KINDS = ("word", "term")


class GapError(ValueError):
    """Gaps that cannot be computed (unknown schedule, no recorded selection)."""


@dataclass
class GapReport:
    """Ranked gaps of ``selections`` recorded selections (``scope`` says of what)."""

    scope: str
    selections: int
    words: list[dict[str, Any]] = field(default_factory=list)
    terms: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rank(conn: psycopg.Connection, selection_ids: Sequence[int], scope: str, limit: int = defaults.GAPS_LIMIT) -> GapReport:
    """The ranked gaps of these recorded selections (``limit`` per kind)."""
    report = GapReport(scope=scope, selections=len(selection_ids))
    with conn.cursor(row_factory=dict_row) as cur:
        for kind in KINDS:
            rows = cur.execute(SQL["rank_gaps"], {"ids": list(selection_ids), "kind": kind, "limit": limit}).fetchall()
            setattr(report, f"{kind}s", rows)
    return report


def job_gaps(conn: psycopg.Connection, refs: Sequence[str | int], limit: int = defaults.GAPS_LIMIT) -> GapReport:
    """Gaps of the recorded selections of jobs given by id or name."""
    jobs = [get_job(conn, r) for r in refs]
    ids = [r[0] for r in conn.execute(SQL["job_selection_ids"], {"job_ids": [j.id for j in jobs]})]
    scope = ", ".join(j.label for j in jobs)
    if not ids:
        raise GapError(f"{scope}: no recorded selection yet (a zero-shot job, or no item prepared by a worker)")
    return rank(conn, ids, scope, limit)


def schedule_gaps(conn: psycopg.Connection, name: str, limit: int = defaults.GAPS_LIMIT) -> GapReport:
    """Gaps over every job a schedule's runs grew."""
    if not conn.execute(SQL["schedule_exists"], {"name": name}).fetchone()[0]:
        raise GapError(f"no schedule {name!r}; see `scoi schedule list`")
    job_ids = [r[0] for r in conn.execute(SQL["schedule_job_ids"], {"name": name})]
    if not job_ids:
        raise GapError(f"schedule {name!r} has not run yet")
    report = job_gaps(conn, job_ids, limit)
    report.scope = f"schedule {name} ({report.scope})"
    return report


def sentence_gaps(sel: Selector, sentences: Sequence[str], *, scope: str, k: int | None = None,
                  method: str | None = None, limit: int = defaults.GAPS_LIMIT,
                  progress: Callable[[int], None] | None = None) -> GapReport:
    """Gaps of sentences selected now with ``sel``: their selections are recorded inside a
    transaction that is rolled back, so the same view ranks them and nothing is kept.
    ``progress`` gets 1 per sentence selected (a file of thousands takes minutes)."""
    texts = [s.strip() for s in sentences if s.strip()]
    if not texts:
        raise GapError(f"{scope}: no sentence")
    results = []
    for result in sel.select_many(texts, k=k, method=method):
        results.append(result)
        if progress is not None:
            progress(1)
    # On the primary, never the replica the selections read: recording writes.
    with sel.primary.transaction(force_rollback=True):
        ids = record_selections(sel.primary, [(r, sel.query.labels) for r in results])
        return rank(sel.primary, ids, scope, limit)
