"""``scoi corpora export``: a corpus's pairs with their metadata, as TMX 1.4b, JSON lines or TSV,
in the shape ``scoi ingest`` reads back (same pairs, same ``pair.meta``). Streamed from a
server-side cursor to the output, so a corpus of any size stays out of memory; a file is
written through ``PATH.part`` and renamed at the end (never seen half-written)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import psycopg

from scoi.corpora import ExportError, corpus_for_export, export_meta_keys, export_pairs
from scoi.formats.tmx import TmxWriteError, tmx_document
from scoi.outfile import OutputError, replacing

CORPUS_EXPORT_FORMATS = ("tmx", "jsonl", "tsv")
_JSON_UNSAFE = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def write_corpus(conn: psycopg.Connection, corpus: dict[str, Any], fmt: str, out: IO[bytes],
                 advance: Callable[[int], None] | None = None) -> int:
    """Write the pairs of ``corpus`` (as :func:`scoi.corpora.corpus_for_export` gives it) to
    the binary stream ``out``; the number written. A pair the format cannot hold is an
    ExportError naming it."""
    src, tgt = corpus["src_lang"], corpus["tgt_lang"]
    rows = export_pairs(conn, corpus["id"], src)
    n = 0
    if fmt == "tmx":
        try:
            with tmx_document(out, src, tgt) as tmx:
                for pair_id, s, t, meta in rows:
                    tmx.write(s, t, meta, what=f"pair {pair_id}")
                    n += 1
                    if advance and n % 1000 == 0:
                        advance(1000)
        except TmxWriteError as e:
            raise ExportError(str(e)) from None
    elif fmt == "jsonl":
        for pair_id, s, t, meta in rows:
            if "src" in meta or "tgt" in meta:
                raise ExportError(f"pair {pair_id}: its metadata has a key src or tgt, which JSON lines use for the "
                                  "texts; use --format tmx")
            line = json.dumps({"src": s, "tgt": t, **meta}, ensure_ascii=False)
            for ch, esc in _JSON_UNSAFE.items():  # one pair per physical line for every reader
                line = line.replace(ch, esc)
            out.write(line.encode("utf-8") + b"\n")
            n += 1
            if advance and n % 1000 == 0:
                advance(1000)
    elif fmt == "tsv":
        keys = export_meta_keys(conn, corpus["id"])
        for key in keys:
            if _tsv_problem(key) or key.strip() != key or not key:
                raise ExportError(f"metadata key {key!r} cannot name a TSV column (empty, blanks around it, a tab "
                                  "or a line break); use --format tmx or jsonl")
        out.write(("\t".join([src, tgt, *keys]) + "\n").encode("utf-8"))
        for pair_id, s, t, meta in rows:
            cells = [s, t]
            for key in keys:
                value = meta.get(key, "")  # an empty cell: the key is absent (the reader's rule)
                if key in meta and not (isinstance(value, str) and value and value.strip() == value):
                    raise ExportError(f"pair {pair_id}: metadata {key} = {json.dumps(value, ensure_ascii=False)} "
                                      "is not a TSV cell (a non-empty text without blanks around it); "
                                      "use --format tmx or jsonl")
                cells.append(value)
            for cell in cells:
                if problem := _tsv_problem(cell):
                    raise ExportError(f"pair {pair_id}: {problem}; use --format tmx or jsonl")
            out.write(("\t".join(cells) + "\n").encode("utf-8"))
            n += 1
            if advance and n % 1000 == 0:
                advance(1000)
    else:
        raise ExportError(f"unknown format {fmt!r}; expected one of {', '.join(CORPUS_EXPORT_FORMATS)}")
    if advance:
        advance(n % 1000)
    return n


def _tsv_problem(text: str) -> str | None:
    """Why ``text`` cannot be one TSV cell the reader splits back out, or None."""
    for ch, name in (("\t", "a tab"), ("\n", "a line break"), ("\r", "a carriage return")):
        if ch in text:
            return f"{text[:30]!r} holds {name}, which a TSV cell cannot"
    return None


def export_to_path(conn: psycopg.Connection, corpus: dict[str, Any], fmt: str, path: Path,
                   advance: Callable[[int], None] | None = None) -> int:
    """:func:`write_corpus` into ``path``, whole or not at all (scoi.outfile.replacing)."""
    try:
        with replacing(path) as fh:
            return write_corpus(conn, corpus, fmt, fh, advance)
    except OutputError as e:
        raise ExportError(str(e)) from None


__all__ = ["CORPUS_EXPORT_FORMATS", "ExportError", "corpus_for_export", "export_to_path", "write_corpus"]
