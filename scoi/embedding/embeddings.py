"""Sentence embeddings in PostgreSQL (migration 0011): register an embedder, embed the
sentences that have no embedding yet, read a pool's embeddings, search the nearest
neighbours by the embedder's HNSW index. The only reader of ``scoi/db/sql/embed.sql``.

Embedding is incremental and kill-safe: sentences are embedded in batches of
``batch_size`` in id order, each batch one transaction (``ON CONFLICT DO NOTHING``), so an
interrupted run keeps its committed batches and a rerun embeds only what is missing. The
HNSW index is built once, after the first run's batches (a bulk build is faster than
growing the index row by row); later runs add to it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb

from scoi.core import defaults
from scoi.db import connect
from scoi.db.queries import load
from scoi.periodic import every

if TYPE_CHECKING:
    import psycopg

    from scoi.embedding.embedder import Embedder

SQL = load("embed")
DEFAULT_BATCH = defaults.EMBED_BATCH
DEFAULT_EF_SEARCH = defaults.EF_SEARCH  # pgvector's default hnsw.ef_search

Progress = Callable[[int], None]


class EmbeddingError(RuntimeError):
    """Embeddings that are missing or do not fit (another dimension under the same name)."""


@dataclass(frozen=True)
class EmbedderRow:
    """An ``embedder`` row: the model's stored name, its id and dimension."""

    id: int
    name: str
    dim: int

    @property
    def index_name(self) -> str:
        """Name of its HNSW index (one partial index per embedder: docs/schema.md)."""
        return f"sentence_embedding_hnsw_{self.id}"


@dataclass
class EmbedSummary:
    """What ``scoi embed`` did (its ``--json`` object)."""

    model: str
    embedder_id: int
    dim: int
    langs: list[str] | None
    todo: int
    embedded: int
    seconds: float
    index: str
    index_seconds: float  # of ``seconds``: building the HNSW index (0 when it existed)

    @property
    def sentences_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "sentences_per_second": round(self.sentences_per_second, 1)})


def find_embedder(conn: psycopg.Connection, name: str) -> EmbedderRow | None:
    """The stored embedder of this name (see :func:`scoi.embedding.embedder.model_name`), if any."""
    row = conn.execute(SQL["embedder_get"], {"name": name}).fetchone()
    return EmbedderRow(row[0], name, row[1]) if row else None


def register_embedder(conn: psycopg.Connection, name: str, dim: int) -> EmbedderRow:
    """The embedder row for a model, created if new; refuses a model whose dimension
    changed (a different model saved under the same directory)."""
    row = conn.execute(SQL["embedder_add"], {"name": name, "dim": dim}).fetchone()
    if row[1] != dim:
        raise EmbeddingError(f"embedder {name!r} is stored with dimension {row[1]}, but the model now gives {dim}; "
                             f"embeddings of different models cannot be mixed: delete the old ones first "
                             f"(DELETE FROM embedder WHERE id = {row[0]}) or give the model another path")
    return EmbedderRow(row[0], name, dim)


def ensure_index(conn: psycopg.Connection, emb: EmbedderRow) -> None:
    """Build the embedder's HNSW index if it does not exist yet."""
    conn.execute(_compose("create_hnsw", emb, index=sql.Identifier(emb.index_name)))


def count_missing(conn: psycopg.Connection, emb: EmbedderRow, langs: Sequence[str] | None) -> int:
    """Sentences (of ``langs``; None: all) without an embedding by ``emb``."""
    return conn.execute(SQL["count_missing"], {"langs": _langs(langs), "embedder_id": emb.id}).fetchone()[0]


IndexProgress = Callable[[str, int, int], None]  # (phase, tuples done, tuples in all)


def embed_missing(url: str, embedder: Embedder, *, langs: Sequence[str] | None = None,
                  batch_size: int = DEFAULT_BATCH, progress: Progress | None = None,
                  on_start: Progress | None = None, index_progress: IndexProgress | None = None,
                  index_poll: float = 1.0) -> EmbedSummary:
    """Embed every sentence (of ``langs``) that has no embedding by ``embedder``, one
    committed batch at a time, then make sure the HNSW index exists. ``on_start`` gets the
    number to do, ``progress`` each batch's size, ``index_progress`` the index build's
    phase and tuples every ``index_poll`` seconds (a build over a large corpus takes minutes)."""
    t0 = time.perf_counter()
    done = 0
    with connect(url, autocommit=True) as conn:
        emb = register_embedder(conn, embedder.name, embedder.dim)
        todo = count_missing(conn, emb, langs)
        if on_start:
            on_start(todo)
        after = 0
        while True:
            rows = conn.execute(SQL["next_missing"], {"after": after, "langs": _langs(langs),
                                                      "embedder_id": emb.id, "n": batch_size}).fetchall()
            if not rows:
                break
            vectors = embedder.encode([text for _, text in rows])
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(SQL["insert_embedding"], [
                    {"sentence_id": sid, "embedder_id": emb.id, "embedding": vec}
                    for (sid, _), vec in zip(rows, vectors)])
            after = rows[-1][0]
            done += len(rows)
            if progress:
                progress(len(rows))
        t1 = time.perf_counter()
        with _watch_index_build(url, conn.info.backend_pid, index_progress, index_poll):
            ensure_index(conn, emb)
        t2 = time.perf_counter()
    return EmbedSummary(embedder.name, emb.id, emb.dim, list(langs) if langs else None, todo, done,
                        round(t2 - t0, 3), emb.index_name, round(t2 - t1, 3))


@contextmanager
def _watch_index_build(url: str, pid: int, report: IndexProgress | None, interval: float = 1.0) -> Iterator[None]:
    """Meanwhile, read backend ``pid``'s CREATE INDEX progress on a connection of its own
    every ``interval`` seconds and hand it to ``report`` (nothing when it is None)."""
    if report is None:
        yield
        return
    # Connected before the build starts: a short build must not end while the watcher is
    # still opening its connection (it then reported nothing).
    with connect(url, autocommit=True) as conn:
        def watch(stop: threading.Event) -> None:
            while not stop.wait(interval):
                row = conn.execute(SQL["index_build_progress"], {"pid": pid}).fetchone()
                if row is not None:
                    report(row[0], int(row[1] or 0), int(row[2] or 0))

        with every(interval, watch, "scoi-index-progress"):
            yield


def pool_embeddings(conn: psycopg.Connection, emb: EmbedderRow, pair_ids: Sequence[int], lang: str) -> np.ndarray:
    """(len(pair_ids), dim) source-side embeddings of a pool, in pool order; raises when
    some source sentence has none (run ``scoi embed``)."""
    if not pair_ids:
        return np.zeros((0, emb.dim), dtype=np.float32)
    rows = conn.execute(SQL["pool_embeddings"], {"pair_ids": list(pair_ids), "lang": lang,
                                                 "embedder_id": emb.id}).fetchall()
    missing = sum(1 for (v,) in rows if v is None)
    if missing:
        raise EmbeddingError(f"{missing} of the {len(rows)} candidate {lang} sentences have no embedding by "
                             f"{emb.name}; embed them first: scoi embed --model {emb.name}")
    return np.stack([_array(v) for (v,) in rows]) if rows else np.zeros((0, emb.dim), dtype=np.float32)


def nearest(conn: psycopg.Connection, emb: EmbedderRow, query: np.ndarray, *, lang: str, tgt: str,
            corpora: list[int] | None, n: int, ef_search: int = DEFAULT_EF_SEARCH,
            exact: bool = False, where: dict[str, str] | None = None) -> list[tuple[int, float, np.ndarray]]:
    """(pair_id, cosine distance, source embedding) of the ``n`` eligible ``lang`` sentences
    with a ``tgt`` translation nearest to ``query``: by the HNSW index (approximate), or
    ``exact`` (the same statement with index scans off: a scan and a sort). ``where``: only
    pairs whose metadata holds it (scoi.core.exact.parse_where)."""
    params = {"query": np.asarray(query, dtype=np.float32), "lang": lang, "tgt": tgt, "corpora": corpora, "n": n,
              "meta": Jsonb(where) if where else None}
    statement = _compose("ann", emb)
    if exact:
        with conn.transaction():
            conn.execute(SQL["exact_settings"])
            rows = conn.execute(statement, params).fetchall()
    else:
        conn.execute(SQL["ann_settings"], {"ef_search": str(ef_search)})
        rows = conn.execute(statement, params).fetchall()
    return [(r[0], float(r[1]), _array(r[2])) for r in rows]


def ann_plan(conn: psycopg.Connection, emb: EmbedderRow, query: np.ndarray, *, lang: str, tgt: str,
             n: int) -> str:
    """EXPLAIN of the fuzzy-ann statement (does it read the embedder's HNSW index?)."""
    params = {"query": np.asarray(query, dtype=np.float32), "lang": lang, "tgt": tgt, "corpora": None, "n": n,
              "meta": None}
    statement = sql.SQL(SQL["explain"].rstrip(";")).format(statement=_compose("ann", emb))
    return "\n".join(r[0] for r in conn.execute(statement, params).fetchall())


def ann_sql(conn: psycopg.Connection, emb: EmbedderRow) -> str:
    """The fuzzy-ann statement for this embedder, as text (``scoi select --sql``)."""
    return _compose("ann", emb).as_string(conn)


def _compose(name: str, emb: EmbedderRow, **extra: Any) -> sql.Composed:
    """A statement with the embedder's id and dimension as literals (see embed.sql)."""
    return sql.SQL(SQL[name]).format(dim=sql.Literal(emb.dim), embedder_id=sql.Literal(emb.id), **extra)


def _langs(langs: Sequence[str] | None) -> list[str] | None:
    return [lg.lower() for lg in langs] if langs else None


def _array(value: Any) -> np.ndarray:
    """A loaded ``vector`` as float32 (pgvector loads numpy arrays; text if unregistered)."""
    if isinstance(value, str):
        return np.array(json.loads(value), dtype=np.float32)
    return np.asarray(getattr(value, "to_numpy", lambda: value)(), dtype=np.float32)


__all__ = ["EmbedderRow", "EmbedSummary", "EmbeddingError", "embed_missing", "find_embedder", "nearest",
           "pool_embeddings", "register_embedder", "ensure_index", "count_missing", "ann_sql", "ann_plan"]
