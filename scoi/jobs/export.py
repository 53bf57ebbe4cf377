"""A job's items out of the database: rows streamed in input order, written as JSON lines
or TSV, or its translations as a TMX memory (``scoi ingest`` takes them back), to a file
atomically (through ``PATH.part``) or to a stream; or, for a job submitted from an XLIFF or
PO file, that file with its targets filled (scoi.jobs.documents).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import IO, Any, Iterator

import psycopg

from scoi.core import inline
from scoi.formats.tmx import TmxWriteError, tmx_date, tmx_document
from scoi.jobs.documents import DOCUMENT_FORMATS, export_document
from scoi.jobs.spec import Job, JobError
from scoi.jobs.store import SQL, get_job
from scoi.outfile import OutputError, output_target, replacing


EXPORT_FORMATS = ("jsonl", "tsv")
TMX_FORMAT = "tmx"  # the job's translations as a memory (write_tmx), not its rows


#: ``origin``: llm (the model wrote the output) or tm (an exact match's stored translation,
#: the pair ``origin_pair_id``); empty until the item is done.
EXPORT_COLUMNS = ("index", "source", "output", "reference", "status", "attempts", "error", "warning",
                  "selection_id", "select_ms", "generate_ms", "overhead_ms", "examples_used", "qa", "match",
                  "origin", "origin_pair_id")


def export_rows(conn: psycopg.Connection, job_id: int, *, with_prompt: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per item, in input order (streamed with a server-side cursor). ``match``: the
    best match % among the item's examples (docs/method.md), as a CAT tool reports a segment's."""
    with conn.transaction(), conn.cursor(name=f"export_{job_id}") as cur:
        cur.itersize = 2000
        cur.execute(SQL["export_items"], {"id": job_id})
        for (idx, source, output, reference, st, attempts, error, warning, selection_id,
             select_ms, generate_ms, overhead_ms, raw_output, prompt, examples_used, qa, match, origin,
             origin_pair_id) in cur:
            row = {"index": idx, "source": source, "output": output, "reference": reference, "status": st,
                   "attempts": attempts, "error": error, "warning": warning, "selection_id": selection_id,
                   "select_ms": select_ms, "generate_ms": generate_ms, "overhead_ms": overhead_ms,
                   "examples_used": examples_used, "qa": qa, "match": None if match is None else round(match, 2),
                   "origin": origin, "origin_pair_id": origin_pair_id}
            if with_prompt:
                row["prompt"] = prompt
                row["raw_output"] = raw_output
            yield row


_JSON_UNSAFE = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def _json_line(row: dict[str, Any]) -> str:
    """One JSON line; the characters some readers take as line breaks (U+2028, U+2029,
    U+0085 — models emit them) are escaped, so each row stays on one physical line."""
    text = json.dumps(row, ensure_ascii=False)
    for ch, esc in _JSON_UNSAFE.items():
        text = text.replace(ch, esc)
    return text + "\n"


def write_export(rows: Iterator[dict[str, Any]], fmt: str, out: Any) -> int:
    """Write rows as JSON lines or TSV (csv module, tab-delimited, a header line; a field
    holding a tab, a newline or a quote is quoted, so any TSV reader gets it back)."""
    if fmt not in EXPORT_FORMATS:
        raise JobError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "jsonl":
        n = 0
        for row in rows:
            out.write(_json_line(row))
            n += 1
        return n
    writer: csv.DictWriter | None = None
    n = 0
    for row in rows:
        if writer is None:  # the header follows the rows' keys (with_prompt adds two)
            writer = csv.DictWriter(out, fieldnames=list(row), delimiter="\t", lineterminator="\n")
            writer.writeheader()
        if row.get("qa") is not None:  # QA flags of a CAT-file item: one cell
            row = {**row, "qa": "; ".join(row["qa"])}
        writer.writerow(row)
        n += 1
    if writer is None:
        csv.writer(out, delimiter="\t", lineterminator="\n").writerow(EXPORT_COLUMNS)
    return n


def write_tmx(conn: psycopg.Connection, job: Job, out: IO[bytes]) -> int:
    """The job's translations as TMX 1.4b on the binary stream ``out``: one ``<tu>`` per
    done item with a non-blank source and output (source -> output, the job's languages;
    a CAT file's item as plain text, its output's code placeholders dropped as its source's are),
    dated by when it finished, with props ``scoi:job`` (name, else id), ``scoi:model``,
    ``scoi:method``, ``scoi:origin`` (llm or tm; absent for items stored before origins
    were recorded) and ``scoi:qa`` (the item's QA flags, a list, when it has any), which
    ``scoi ingest`` keeps as the pairs' metadata; the number of units."""
    base = {"scoi:job": job.name or str(job.id), "scoi:model": job.model, "scoi:method": job.method}
    n = 0
    try:
        with conn.transaction(), conn.cursor(name=f"export_tmx_{job.id}") as cur, \
                tmx_document(out, job.src_lang, job.tgt_lang) as tmx:
            cur.itersize = 2000
            cur.execute(SQL["export_tmx_items"], {"id": job.id})
            for idx, source, output, origin, qa, finished_at, has_codes in cur:
                target = (inline.plain(output) if has_codes else output).strip()
                if not target:  # only placeholders: no text to remember
                    continue
                meta: dict[str, Any] = dict(base)
                if finished_at is not None:
                    meta["creationdate"] = tmx_date(finished_at)
                if origin is not None:
                    meta["scoi:origin"] = origin
                if qa:
                    meta["scoi:qa"] = list(qa)
                tmx.write(source.strip(), target, meta, what=f"item {idx}")
                n += 1
    except TmxWriteError as e:
        raise JobError(str(e)) from None
    return n


def export_target(path: Path) -> Path:
    """Where an export to ``path`` is written (scoi.outfile.output_target), or a JobError."""
    try:
        return output_target(path)
    except OutputError as e:
        raise JobError(str(e)) from None


def export_to_file(conn: psycopg.Connection, job_id: int, fmt: str, path: Path, *,
                   with_prompt: bool = False) -> int:
    """Write the export to ``path``, whole or not at all (scoi.outfile.replacing); the number
    of rows (``xliff``/``po``: of targets filled)."""
    try:
        with replacing(path) as bfh:
            if fmt in DOCUMENT_FORMATS:
                data, n = export_document(conn, job_id, fmt)
                bfh.write(data)
            elif fmt == TMX_FORMAT:
                n = write_tmx(conn, get_job(conn, job_id), bfh)
            else:
                fh = io.TextIOWrapper(bfh, encoding="utf-8", newline="", write_through=True)
                n = write_export(export_rows(conn, job_id, with_prompt=with_prompt), fmt, fh)
                fh.flush()
                fh.detach()  # the binary file stays open: replacing() closes it
    except OutputError as e:
        raise JobError(str(e)) from None
    return n


__all__ = ["EXPORT_COLUMNS", "EXPORT_FORMATS", "TMX_FORMAT", "export_rows", "export_target", "export_to_file", "write_export",
           "write_tmx"]
