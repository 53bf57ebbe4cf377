"""Where a job's outputs go besides the job: a *destination*, a table upserted by key
(``INSERT ... ON CONFLICT (key) DO UPDATE``; the key column needs a unique constraint), or a
file, written whole once the job has no unfinished item.

A table destination is checked when the job is made: the columns exist, the column takes
text, the key is another column, and every source key casts to the key column's type, with
no two keys equal once cast. Delivery runs after the items are stored, row by row when a
batch fails (an output the table refuses keeps its error in ``job_item.delivery_error`` and
reads ``undelivered``; the others go in), and is idempotent: ``job_item.delivered_at`` marks
what a destination has received, so an item is delivered again only if a delivery failed or
was cut short (in scoi's database the upsert and the mark commit together).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg import sql

from scoi.config import dest_dir_from_env
from scoi.db.queries import load
from scoi.jobs.documents import DOCUMENT_FORMATS, document_format
from scoi.jobs.export import EXPORT_FORMATS, export_to_file
from scoi.jobs.source_checks import SourceError, check_url, connect_source, dest_file_path, first_line, resolve_url
from scoi.jobs.sources import Source

SQL = load("sources")
DELIVERY_BATCH = 1000


# --------------------------------------------------------------------------- destinations
def table_identifier(name: str) -> sql.Identifier:
    """``table`` or ``schema.table`` as a quoted identifier (a name is never formatted in)."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 2 or not all(p.strip() for p in parts):
        raise SourceError(f"--dest-table {name!r}: expected TABLE or SCHEMA.TABLE")
    return sql.Identifier(*parts)


@dataclass
class Destination:
    """Where a job's outputs go: ``table`` (upsert by key) or ``file`` (tsv/jsonl)."""

    kind: str
    path: str | None = None
    format: str | None = None
    table: str | None = None
    key: str | None = None
    column: str | None = None
    url: str | None = None

    def label(self) -> str:
        if self.kind == "file":
            return f"file {self.path} ({self.format})"
        return f"table {self.table} ({self.key} -> {self.column}) on {self.url or 'the scoi database'}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self, default_url: str, source: Source, keys: list[str] | None = None) -> None:
        """Refuse a destination that could never receive an output: a missing table or
        column, a column that does not take text, the key as the column, no unique
        constraint on the key, no INSERT/UPDATE right, a password; and, given the source
        ``keys``, one the key column's type does not take or two that are one value once
        cast (1.0 and 1.00 in a numeric key)."""
        if self.kind == "file":
            document = document_format(source.path or "") if source.kind == "file" else None
            if self.format in DOCUMENT_FORMATS and self.format != document:
                raise SourceError(f"--dest-format {self.format} writes back the CAT file a schedule reads; the source "
                                  f"is not a{'n XLIFF' if self.format == 'xliff' else ' PO'} file (--input "
                                  f"{'FILE.xlf' if self.format == 'xliff' else 'FILE.po'})")
            if self.format not in EXPORT_FORMATS + DOCUMENT_FORMATS:
                raise SourceError(f"unknown --dest-format {self.format!r}; expected "
                                  f"{' or '.join(EXPORT_FORMATS + DOCUMENT_FORMATS)}")
            parent = Path(self.path or "").expanduser().resolve().parent
            if not parent.is_dir():
                raise SourceError(f"--dest-file {self.path}: directory {parent} does not exist")
            dest_file_path(self.path or "", dest_dir_from_env())  # the workers check it again at delivery
            return
        if self.kind != "table":
            raise SourceError(f"unknown destination kind {self.kind!r}; expected file or table")
        if not (self.key and self.column):
            raise SourceError("--dest-table needs --dest-key (the unique key column) and --dest-column "
                              "(the column the translation goes to)")
        if self.key == self.column:
            raise SourceError(f"--dest-key and --dest-column are both {self.key!r}; expected the key column and "
                              "another column to take the translation")
        if source.kind != "sql":
            raise SourceError("--dest-table needs a keyed source (--source-sql \"SELECT key, text ...\"): each output "
                              "is written to the row with its source key")
        check_url(self.url, "--dest-url")
        ident = table_identifier(self.table or "")
        with connect_source(resolve_url(self.url, default_url)) as conn:
            found, writable, columns, unique_key = conn.execute(SQL["destination_table"], {
                "table": ident.as_string(conn), "columns": [self.key, self.column], "key": self.key}).fetchone()
            if not found:
                raise SourceError(f"--dest-table {self.table}: no such table (create it first, with a unique key "
                                  "column)")
            columns = columns or {}
            missing = [c for c in (self.key, self.column) if c not in columns]
            if missing:
                raise SourceError(f"--dest-table {self.table} has no column {missing[0]!r}")
            if columns[self.column]["category"] != "S":
                raise SourceError(f"--dest-column {self.column}: {self.table}.{self.column} is "
                                  f"{columns[self.column]['type']}; expected a text column (text, varchar, ...) to "
                                  "take the translation")
            if not unique_key:
                raise SourceError(f"--dest-key {self.key}: {self.table}.{self.key} has no unique constraint of its "
                                  f"own, which the upsert (ON CONFLICT ({self.key})) needs: ALTER TABLE {self.table} "
                                  f"ADD UNIQUE ({self.key})")
            if not writable:
                raise SourceError(f"--dest-table {self.table}: this role may not INSERT and UPDATE it "
                                  "(GRANT INSERT, UPDATE ON the table to the workers' role)")
            if keys:
                self._check_keys(conn, ident, columns[self.key]["type"], keys)

    def _check_keys(self, conn: psycopg.Connection, ident: sql.Identifier, key_type: str, keys: list[str]) -> None:
        """Every source key casts to the key column's type, and no two are equal once cast."""
        where = f"--dest-key {self.key}: the source key"
        try:
            if conn.info.server_version >= 160000:  # pg_input_is_valid names the bad value itself
                bad = conn.execute(SQL["destination_bad_key"], {"keys": keys, "type": key_type}).fetchone()
                if bad is not None:
                    raise SourceError(f"{where} {bad[0]!r} is not a valid {key_type} ({self.table}.{self.key} is "
                                      f"{key_type}); fix the row or cast the key in the query")
            equal_keys = sql.SQL(SQL["destination_equal_keys"]).format(table=ident, key=sql.Identifier(self.key or ""))
            equal = conn.execute(equal_keys, {"keys": keys, "key": self.key}).fetchone()
        except psycopg.DataError as e:  # before PostgreSQL 16: the cast's own message names the value
            raise SourceError(f"{where}s do not all cast to {key_type}: {first_line(e)}") from None
        if equal is not None:
            a, b = equal[0][:2]
            raise SourceError(f"{where}s {a!r} and {b!r} are the same {key_type} value in {self.table}.{self.key}; "
                              "one translation would overwrite the other: make the keys distinct")


def save_destination(conn: psycopg.Connection, job_id: int, dest: Destination) -> None:
    conn.execute(SQL["insert_destination"], {"job_id": job_id, "kind": dest.kind, "path": dest.path,
                                             "format": dest.format, "table": dest.table, "key": dest.key,
                                             "column": dest.column, "url": dest.url, "url_env": None})


def destinations(conn: psycopg.Connection, job_ids: list[int]) -> dict[int, tuple[Destination, dict[str, Any]]]:
    """job id -> (destination, its delivery state: last_error, last_delivered_at, pending)."""
    out: dict[int, tuple[Destination, dict[str, Any]]] = {}
    for (job_id, kind, path, fmt, table, key, column, url, _url_env, last_error,
         last_delivered_at) in conn.execute(SQL["destinations_of_jobs"], {"job_ids": job_ids}).fetchall():
        pending = conn.execute(SQL["pending_deliveries"], {"job_id": job_id}).fetchone()[0]
        out[job_id] = (Destination(kind, path, fmt, table, key, column, url),
                       {"last_error": last_error, "last_delivered_at": last_delivered_at, "pending": pending})
    return out


def deliver(conn: psycopg.Connection, job_ids: list[int], default_url: str,
            log: Callable[[str], None] | None = None) -> int:
    """Write the new outputs of these jobs to their destinations; the items delivered.

    Never raises for a destination's fault: the error is kept in ``job_destination.last_error``
    (``scoi schedule show``) and logged, an output the table refuses keeps its own in
    ``job_item.delivery_error`` (``scoi job status``), and the items stay undelivered for the
    next try."""
    total = 0
    for job_id, (dest, _) in destinations(conn, sorted(set(job_ids))).items():
        try:
            n, error = _deliver_table(conn, job_id, dest, default_url) if dest.kind == "table" else \
                _deliver_file(conn, job_id, dest)
        except (SourceError, psycopg.Error, OSError) as e:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            n, error = 0, f"delivery to {dest.label()} failed: {first_line(e)}"
        if error is not None and log is not None:
            log(f"job {job_id}: {error}")
        if n or error:
            conn.execute(SQL["delivery_result"], {"job_id": job_id, "error": error})
        total += n
    return total


def _deliver_table(conn: psycopg.Connection, job_id: int, dest: Destination,
                   default_url: str) -> tuple[int, str | None]:
    """Upsert the job's undelivered outputs in batches; a batch the table refuses goes row by
    row, each in a savepoint, so one bad row (a key the column does not take) keeps its error
    (``job_item.delivery_error``) and blocks none of the others."""
    ident = table_identifier(dest.table or "")
    upsert = sql.SQL(SQL["upsert_destination"]).format(table=ident, key=sql.Identifier(dest.key or ""),
                                                       column=sql.Identifier(dest.column or ""))
    other = None if dest.url is None else connect_source(resolve_url(dest.url, default_url))
    target = conn if other is None else other  # scoi's database: the upsert and the mark commit together
    total = 0
    refused: list[int] = []
    first_error: str | None = None
    try:
        while True:
            with conn.transaction():
                rows = conn.execute(SQL["undelivered_items"], {"job_id": job_id, "n": DELIVERY_BATCH,
                                                               "skip": refused}).fetchall()
                if not rows:
                    break
                errors = _upsert(target, upsert, dest, rows)
                good = [idx for idx, _, _ in rows if idx not in errors]
                if good:
                    conn.execute(SQL["mark_delivered"], {"job_id": job_id, "idxs": good})
                for idx, error in errors.items():
                    conn.execute(SQL["mark_undelivered"], {"job_id": job_id, "idx": idx, "error": error})
            total += len(good)
            refused += list(errors)
            first_error = first_error or next(iter(errors.values()), None)
    finally:
        if other is not None:
            other.close()
    if refused:
        return total, (f"{len(refused)} of the outputs were not delivered (`scoi job status` lists them); the "
                       f"first: {first_error}")
    return total, None


def _upsert(target: psycopg.Connection, upsert: sql.Composed, dest: Destination,
            rows: list[tuple[int, str, str]]) -> dict[int, str]:
    """Upsert ``rows`` (idx, key, output) into the destination: the whole batch, else row by
    row; the error of each refused row, by item index. Each try is a savepoint (in scoi's
    database) or a transaction of its own (in another one: a retry rewrites the same values).
    Only a row's own faults (its values: DataError, IntegrityError) are kept per row; a fault
    of the destination (no such table or column, no right) raises, for the whole job."""
    def attempt(batch: list[tuple[int, str, str]]) -> str | None:
        payload = json.dumps([{dest.key: key, dest.column: output} for _, key, output in batch])
        try:
            with target.transaction():
                target.execute(upsert, {"rows": payload})
        except (psycopg.DataError, psycopg.IntegrityError) as e:
            return f"delivery to {dest.label()} failed: {first_line(e)}"
        return None

    first = attempt(rows)
    if first is None:
        return {}
    if len(rows) == 1:
        return {rows[0][0]: first}
    errors: dict[int, str] = {}
    for row in rows:
        error = attempt([row])
        if error is not None:
            errors[row[0]] = error
    return errors


def _deliver_file(conn: psycopg.Connection, job_id: int, dest: Destination) -> tuple[int, str | None]:
    with conn.transaction():
        if conn.execute(SQL["lock_destination"], {"job_id": job_id}).fetchone() is None:
            return 0, None  # another worker is writing it
        unfinished, undelivered = conn.execute(SQL["file_delivery_state"], {"job_id": job_id}).fetchone()
        if unfinished or not undelivered:
            return 0, None
        export_to_file(conn, job_id, dest.format or "tsv", dest_file_path(dest.path or "", dest_dir_from_env()))
        conn.execute(SQL["mark_all_delivered"], {"job_id": job_id})
    return undelivered, None


__all__ = ["DELIVERY_BATCH", "Destination", "deliver", "destinations", "save_destination", "table_identifier"]
