"""Deleting pairs and corpora: ``scoi corpora rm`` and ``scoi pairs rm``.

Each call is one transaction under the ingest lock (ingest.writer.lock_writes), so a
delete never interleaves with an ingest batch, ``kill -9`` leaves all of it or none, and
the next query sees it whole. The work is ingest.drops.drop_pairs: the pairs, the
sentences no other pair (of any corpus or direction) uses, and their BM25 entries, with
df, token bounds, N, total length, blocks and directories kept exact. Recorded
selections keep their rows; their link to a deleted pair becomes NULL (migration 0030).
Deleting what is already gone deletes nothing: every call can be rerun.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import psycopg

from ingest.drops import drop_pairs
from ingest.writer import lock_writes
from scoi.db.queries import load

_SQL = load("delete")


class DeleteError(RuntimeError):
    """A delete that cannot run as asked (an unknown corpus, a running ingest), for the user."""


@dataclass
class DeleteSummary:
    """What a delete removed (and, for a delete by id, the ids that named no pair)."""

    pairs: int = 0
    sentences: int = 0
    corpus: str | None = None
    missing_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def remove_corpus(conn: psycopg.Connection, name: str, *, dry_run: bool = False) -> DeleteSummary:
    """Delete corpus ``name``: its pairs (and the sentences only they used), its ingest runs
    and their rejected rows, and the corpus row. Refused while an ingest into it runs.
    ``dry_run``: the same work, rolled back (what would go)."""
    with conn.transaction() as tx:
        cur = conn.cursor()
        lock_writes(cur)
        row = cur.execute(_SQL["corpus_row"], {"name": name}).fetchone()
        if row is None:
            raise DeleteError(f"no corpus {name!r} (see `scoi corpora`)")
        corpus_id = row[0]
        running = [r[0] for r in cur.execute(_SQL["running_runs"], {"corpus_id": corpus_id})]
        if running:
            raise DeleteError(f"corpus {name!r} has a running ingest (run {', '.join(map(str, running))}); "
                              "wait for it to finish, or stop it, then delete")
        ids = [r[0] for r in cur.execute(_SQL["corpus_pairs"], {"corpus_id": corpus_id})]
        dropped = drop_pairs(cur, ids)
        cur.execute(_SQL["delete_runs"], {"corpus_id": corpus_id})
        cur.execute(_SQL["delete_corpus"], {"corpus_id": corpus_id})
        if dry_run:
            raise psycopg.Rollback(tx)
    return DeleteSummary(dropped.pairs, dropped.sentences, corpus=name)


def remove_pairs(conn: psycopg.Connection, *, ids: list[int] | None = None, file: str | None = None,
                 where: dict[str, str] | None = None, corpus: str | None = None,
                 dry_run: bool = False) -> DeleteSummary:
    """Delete the pairs named by ``ids``, or ingested from ``file`` (the runs that read it,
    by absolute path), or whose metadata hold every ``where`` key = value (a value or an
    element of a list); ``file`` and ``where`` only in ``corpus`` when given.
    ``dry_run``: the same work, rolled back (what would go)."""
    if sum(x is not None for x in (ids, file, where)) != 1:
        raise DeleteError("name the pairs one way: by id, by file or by metadata")
    with conn.transaction() as tx:
        cur = conn.cursor()
        lock_writes(cur)
        if corpus is not None and cur.execute(_SQL["corpus_row"], {"name": corpus}).fetchone() is None:
            raise DeleteError(f"no corpus {corpus!r} (see `scoi corpora`)")
        missing: list[int] = []
        if ids is not None:
            found = [r[0] for r in cur.execute(_SQL["pairs_by_id"], {"ids": ids})]
            missing = sorted(set(ids) - set(found))
        elif file is not None:
            found = [r[0] for r in cur.execute(_SQL["pairs_by_file"], {"path": os.path.abspath(file),
                                                                     "corpus": corpus})]
        else:
            found = [r[0] for r in cur.execute(_SQL["pairs_by_meta"], {"where": json.dumps(where),
                                                                     "corpus": corpus})]
        dropped = drop_pairs(cur, found)
        if dry_run:
            raise psycopg.Rollback(tx)
    return DeleteSummary(dropped.pairs, dropped.sentences, corpus=corpus, missing_ids=missing)


__all__ = ["DeleteError", "DeleteSummary", "remove_corpus", "remove_pairs"]
