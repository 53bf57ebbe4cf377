"""Deleting pairs and the sentences no pair uses any more, keeping the BM25 index exact
(statements in scoi/db/sql/delete.sql), in the caller's transaction under the ingest lock.
Used by ``scoi delete`` (ingest/delete.py) and by an ingest that replaces pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import psycopg

from ingest.blocks import rewrite_blocks
from scoi.db.queries import load

_DELETE = load("delete")


@dataclass
class Dropped:
    """What a delete removed: pairs, and the sentences no pair used any more (``kept``:
    such sentences left in place because a later batch of the run relies on them)."""

    pairs: int = 0
    sentences: int = 0
    kept: list[int] = field(default_factory=list)

    def __iadd__(self, other: "Dropped") -> "Dropped":
        self.pairs += other.pairs
        self.sentences += other.sentences
        return self


def drop_pairs(cur: psycopg.Cursor, ids: list[int], protect: set[tuple[str, bytes]] | None = None) -> Dropped:
    """Delete the pairs ``ids`` in the cursor's transaction (which holds ``lock_writes``),
    and every sentence of theirs that no other pair uses, keeping the BM25 index exact:
    forward rows deleted, df and N/total length reduced, and each affected token's blocks
    rewritten from the first one that held a deleted posting (the later ones shift: a
    block is 128 consecutive postings).
    Sentences in ``protect`` (lang, sha) are left in place (see :func:`drop_unused`)."""
    if not ids:
        return Dropped()
    gone = cur.execute(_DELETE["delete_pairs"], {"ids": ids}).fetchall()
    n, kept = drop_unused(cur, sorted({sid for _, a, b in gone for sid in (a, b)}), protect)
    return Dropped(len(gone), n, kept)


def drop_unused(cur: psycopg.Cursor, candidates: list[int], protect: set[tuple[str, bytes]] | None = None
                ) -> tuple[int, list[int]]:
    """Delete those of the sentences ``candidates`` that no pair uses, with their terms,
    embeddings and BM25 entries (as :func:`drop_pairs` says): how many, and the ids of
    those left in place because ``protect`` names them (an ingest's later batches were
    told they are stored, and do not parse them again: they recheck them when they run)."""
    if not candidates:
        return 0, []
    found = cur.execute(_DELETE["orphans"], {"ids": candidates}).fetchall()
    kept = [sid for sid, lang, h in found if protect and (lang, bytes(h)) in protect]
    orphans = [sid for sid, lang, h in found if not (protect and (lang, bytes(h)) in protect)]
    if orphans:
        docs = cur.execute(_DELETE["delete_docs"], {"ids": orphans}).fetchall()
        tids = np.array([t for _, toks in docs for t in toks], dtype=np.int64)
        sids = np.array([sid for sid, toks in docs for _ in toks], dtype=np.int64)
        cur.execute(_DELETE["delete_sentence_terms"], {"ids": orphans})
        stats: dict[str, list[int]] = {}
        for lang, eligible, n in cur.execute(_DELETE["delete_sentences"], {"ids": orphans}).fetchall():
            if eligible:
                lang_stats = stats.setdefault(lang, [0, 0])
                lang_stats[0] += 1
                lang_stats[1] += n
        if stats:
            cur.execute(_DELETE["sub_bm25_stats"], {"langs": list(stats), "ns": [v[0] for v in stats.values()],
                                                    "lens": [v[1] for v in stats.values()]})
            cur.execute(_DELETE["drop_empty_stats"], {"langs": list(stats)})
        if len(tids):
            rewrite_blocks(cur, tids, sids)
    return len(orphans), kept

