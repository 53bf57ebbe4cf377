"""What the database holds, for people and tools: corpora with their pair counts, and the
sentences of each language by analysis scheme. Read only; the one reader of
scoi/db/sql/corpora.sql (``scoi corpora``, ``scoi serve``'s /api/corpora, and the pairs
``scoi corpora export`` streams out)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg

from scoi.db.queries import load

_SQL = load("corpora")


def list_corpora(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Corpora with their pair and run counts, by name, as column -> value."""
    return _rows(conn.execute(_SQL["list_corpora"]))


def language_trees(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Per language and analysis scheme, how many stored sentences it holds (with or
    without trees): what ``scoi corpora`` shows under the corpora."""
    return _rows(conn.execute(_SQL["language_trees"]))


def _rows(cur: psycopg.Cursor) -> list[dict[str, Any]]:
    cols = [d.name for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


class ExportError(ValueError):
    """A corpus that cannot be exported as asked (unknown name, languages it does not hold)."""


def corpus_for_export(conn: psycopg.Connection, name: str, src: str | None = None,
                      tgt: str | None = None) -> dict[str, Any]:
    """The corpus ``name`` with the direction to write (``src``/``tgt``: its own by default,
    or reversed; a pair holds both): id, src_lang, tgt_lang, pairs."""
    row = conn.execute(_SQL["corpus_for_export"], {"name": name}).fetchone()
    if row is None:
        raise ExportError(f"no corpus {name!r} (`scoi corpora` lists them)")
    cid, c_src, c_tgt, pairs = row
    langs = {c_src, c_tgt}
    src = src.lower() if src else (c_tgt if tgt and tgt.lower() == c_src else c_src)
    tgt = tgt.lower() if tgt else next(iter(langs - {src}), c_tgt)
    if {src, tgt} != langs:
        raise ExportError(f"corpus {name!r} holds {c_src} and {c_tgt}; --src/--tgt must name these two "
                          f"(given {src} and {tgt})")
    return {"id": cid, "src_lang": src, "tgt_lang": tgt, "pairs": pairs}


def export_meta_keys(conn: psycopg.Connection, corpus_id: int) -> list[str]:
    """The metadata keys used by a corpus's pairs, sorted (a TSV export's extra columns)."""
    return [k for (k,) in conn.execute(_SQL["export_meta_keys"], {"corpus_id": corpus_id})]


def export_pairs(conn: psycopg.Connection, corpus_id: int, src_lang: str) -> Iterator[tuple[int, str, str, dict]]:
    """(pair id, source, target, meta) of a corpus in id order, ``src_lang`` as the source,
    streamed through a server-side cursor (a million pairs never sit in memory)."""
    with conn.transaction(), conn.cursor(name=f"export_corpus_{corpus_id}") as cur:
        cur.itersize = 2000
        cur.execute(_SQL["export_pairs"], {"corpus_id": corpus_id, "src": src_lang})
        yield from cur
