"""Jobs over table rows: a job's source (file, or SQL query) and destination (file, or table).

A *source* says where new items come from: the lines of a file (matched by content, as
``scoi job sync``), or the ``(key, text)`` rows of a SQL query, in scoi's database or in
another one. A query runs in a READ ONLY transaction, must return exactly two columns, text
in the second, and keys that are non-null and unique; anything else is a clear error raised
before a single item is added. Only keys the job does not hold yet become items.

A *destination* says where outputs go besides the job: a table, upserted by key
(``INSERT ... ON CONFLICT (key) DO UPDATE``; the key column needs a unique constraint), or a
file, written whole once the job has no unfinished item. Delivery runs after the items are
stored and is idempotent: ``job_item.delivered_at`` marks what a destination has received,
so an item is delivered again only if a delivery failed or was cut short (in scoi's own
database the upsert and the mark commit together).

Secrets are never stored: a URL with a password is refused, as backend options are
(scoi.jobs.store.check_backend_options); the password comes from the environment
(PGPASSWORD, ~/.pgpass, a libpq service), or the whole URL from a variable (``env:NAME``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg import sql

from scoi.db.queries import load
from scoi.jobs.store import (EXPORT_FORMATS, JobError, JobSpec, add_items, export_to_file, insert_job,
                             lock_for_append, notify_workers, read_lines, source_hash, validate)

SQL = load("sources")
#: Column types a source query's text column may have (text, varchar, bpchar, name).
TEXT_TYPES = {25: "text", 1043: "varchar", 1042: "bpchar", 19: "name"}
DELIVERY_BATCH = 1000
ENV_PREFIX = "env:"


class SourceError(JobError):
    """A source or destination that cannot be used (bad query, missing table, ...)."""


# --------------------------------------------------------------------------- database URLs
def check_url(url: str | None, option: str) -> None:
    """Refuse a URL or conninfo that holds a password, sslpassword or passfile (it would be
    stored in plain text): scoi.secrets, the one secret check, says which without echoing it."""
    from scoi.secrets import SecretError, check_database_url

    if url is None or url.startswith(ENV_PREFIX):
        return
    try:
        check_database_url(url, option)
    except SecretError as e:
        raise SourceError(str(e)) from None


def resolve_url(url: str | None, default_url: str) -> str:
    """The URL to connect to: scoi's own database when None, ``env:VAR`` read from the environment."""
    from scoi.config import url_from_env

    if url is None:
        return default_url
    if url.startswith(ENV_PREFIX):
        name = url[len(ENV_PREFIX):]
        value = url_from_env(name)
        if value is None:
            raise SourceError(f"environment variable {name} (from {url!r}) is not set in this process; "
                              f"set it to the database URL for every worker")
        return value
    return url


def _connect(url: str) -> psycopg.Connection:
    from scoi.db import connect

    try:
        return connect(url, connect_timeout=10)
    except psycopg.Error as e:
        raise SourceError(f"cannot connect to {_safe(url)}: {_first_line(e)}") from None


def _safe(url: str) -> str:
    """A database for messages: host, port, dbname and user only (an ``env:`` URL, or
    scoi's own, may hold a password that must not be echoed)."""
    from scoi.secrets import describe_database_url

    return describe_database_url(url)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


# --------------------------------------------------------------------------- sources
@dataclass
class Source:
    """Where a job's items come from: ``file`` (``path``) or ``sql`` (``query``, ``url``)."""

    kind: str
    path: str | None = None
    query: str | None = None
    url: str | None = None  # None: scoi's database; "env:VAR": the URL in $VAR

    def check(self) -> None:
        if self.kind == "sql":
            if not (self.query or "").strip():
                raise SourceError("--source-sql is empty; expected a query such as "
                                  "\"SELECT id, body FROM documents WHERE body_en IS NULL\"")
            check_url(self.url, "--source-url")
        elif self.kind == "file":
            if self.url is not None:
                raise SourceError("--source-url goes with --source-sql, not with --input")
        else:
            raise SourceError(f"unknown source kind {self.kind!r}; expected file or sql")

    def label(self) -> str:
        if self.kind == "file":
            return f"file {self.path}"
        return f"query on {self.url or 'the scoi database'}: {' '.join((self.query or '').split())}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_source(source: Source, default_url: str) -> list[tuple[str | None, str]]:
    """The source's (key, text) rows: keys for a query, None for the lines of a file."""
    if source.kind == "file":
        return [(None, line) for line in read_lines(source.path or "")]
    return read_query(source.query or "", resolve_url(source.url, default_url))


def read_query(query: str, url: str) -> list[tuple[str, str]]:
    """Run a source query read-only and check its shape: exactly two columns, text in the
    second, keys non-null and unique. Keys are kept as text (the job's ``source_key``)."""
    with _connect(url) as conn:
        try:
            with conn.transaction():
                conn.execute(SQL["read_only"])
                cur = conn.execute(query.strip().rstrip(";"))
                desc = cur.description
                if desc is None:
                    raise SourceError("the source query returned no rows at all (is it a SELECT?); expected "
                                      "SELECT key, text FROM ...")
                rows = cur.fetchall()
        except psycopg.Error as e:
            raise SourceError(f"the source query failed: {_first_line(e)}") from None
    if len(desc) != 2:
        raise SourceError(f"the source query returns {len(desc)} columns ({', '.join(d.name for d in desc)}); "
                          "expected exactly two: a key and the text to translate")
    if desc[1].type_code not in TEXT_TYPES:
        raise SourceError(f"the source query's second column {desc[1].name!r} is not text; expected the text to "
                          f"translate (cast it: {desc[1].name}::text)")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key, text in rows:
        if key is None:
            raise SourceError(f"the source query returned a row with a NULL key (column {desc[0].name!r}); every "
                              "row needs a key")
        k = str(key)
        if k in seen:
            raise SourceError(f"the source query returned the key {k!r} twice (column {desc[0].name!r}); keys must "
                              "be unique (each becomes one item and one destination row)")
        seen.add(k)
        out.append((k, (text or "").strip()))
    return out


def save_source(conn: psycopg.Connection, job_id: int, source: Source) -> None:
    conn.execute(SQL["insert_source"], {"job_id": job_id, "kind": source.kind, "path": source.path,
                                        "query": source.query, "url": source.url, "url_env": None})


def source_of_job(conn: psycopg.Connection, job_id: int) -> Source | None:
    row = conn.execute(SQL["source_of_job"], {"job_id": job_id}).fetchone()
    if row is None:
        return None
    kind, path, query, url, _url_env = row
    return Source(kind=kind, path=path, query=query, url=url)


@dataclass
class Appended:
    added: int
    skipped: int  # rows already in the job, or blank


def append_from_source(conn: psycopg.Connection, job_id: int, max_attempts: int, source: Source,
                       default_url: str) -> Appended:
    """Add to the job the source rows it does not hold yet (by key; by content hash for a
    file), inside the caller's transaction. The source is read, and checked, before
    anything is written."""
    rows = read_source(source, default_url)
    next_idx, hashes = lock_for_append(conn, job_id)
    keyed = source.kind == "sql"
    known = {r[0] for r in conn.execute(SQL["known_keys"], {"job_id": job_id})} if keyed else hashes
    texts: list[str] = []
    keys: list[str] = []
    for key, text in rows:
        if not text:
            continue  # a blank (or NULL) text: added once it has one
        mark = key if keyed else source_hash(text)
        if mark in known:
            continue
        known.add(mark)
        texts.append(text)
        keys.append(key)
    if texts:
        add_items(conn, job_id, next_idx, texts, None, max_attempts, keys=keys if keyed else None)
    return Appended(added=len(texts), skipped=len(rows) - len(texts))


def submit_from_source(conn: psycopg.Connection, spec: JobSpec, source: Source, destination: Destination | None,
                       default_url: str) -> tuple[int, Appended]:
    """``scoi job submit --source-sql``: a job over the rows of a query (or a file's lines),
    with an optional destination, checked as a schedule's are (job settings, the
    destination table; the query is read read-only and its shape checked before any item
    is written). One transaction stores the job, its source, its destination and its
    items, so a query that fails leaves nothing. Returns (job id, what was added)."""
    validate(conn, spec)
    source.check()
    if destination is not None:
        destination.check(default_url, source)
    with conn.transaction():
        job_id = insert_job(conn, spec, source.path if source.kind == "file" else None, None)
        save_source(conn, job_id, source)
        if destination is not None:
            save_destination(conn, job_id, destination)
        appended = append_from_source(conn, job_id, spec.max_attempts, source, default_url)
        if not appended.added:
            raise SourceError("the source has no rows with text to translate; nothing was stored")
        notify_workers(conn)
    return job_id, appended


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

    def check(self, default_url: str, source: Source) -> None:
        """Refuse a destination that could never receive an output: a missing table or
        column, no unique constraint on the key, no INSERT/UPDATE right, a password."""
        if self.kind == "file":
            if self.format not in EXPORT_FORMATS:
                raise SourceError(f"unknown --dest-format {self.format!r}; expected {' or '.join(EXPORT_FORMATS)}")
            parent = Path(self.path or "").expanduser().resolve().parent
            if not parent.is_dir():
                raise SourceError(f"--dest-file {self.path}: directory {parent} does not exist")
            return
        if self.kind != "table":
            raise SourceError(f"unknown destination kind {self.kind!r}; expected file or table")
        if not (self.key and self.column):
            raise SourceError("--dest-table needs --dest-key (the unique key column) and --dest-column "
                              "(the column the translation goes to)")
        if source.kind != "sql":
            raise SourceError("--dest-table needs a keyed source (--source-sql \"SELECT key, text ...\"): each output "
                              "is written to the row with its source key")
        check_url(self.url, "--dest-url")
        ident = table_identifier(self.table or "")
        with _connect(resolve_url(self.url, default_url)) as conn:
            found, writable, columns, unique_key = conn.execute(SQL["destination_table"], {
                "table": ident.as_string(conn), "columns": [self.key, self.column], "key": self.key}).fetchone()
        if not found:
            raise SourceError(f"--dest-table {self.table}: no such table (create it first, with a unique key column)")
        missing = [c for c in (self.key, self.column) if c not in (columns or [])]
        if missing:
            raise SourceError(f"--dest-table {self.table} has no column {missing[0]!r}")
        if not unique_key:
            raise SourceError(f"--dest-key {self.key}: {self.table}.{self.key} has no unique constraint of its own, "
                              f"which the upsert (ON CONFLICT ({self.key})) needs: ALTER TABLE {self.table} "
                              f"ADD UNIQUE ({self.key})")
        if not writable:
            raise SourceError(f"--dest-table {self.table}: this role may not INSERT and UPDATE it "
                              "(GRANT INSERT, UPDATE ON the table to the workers' role)")


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
    (``scoi schedule show``) and logged, and the items stay undelivered for the next try."""
    total = 0
    for job_id, (dest, _) in destinations(conn, sorted(set(job_ids))).items():
        try:
            n = _deliver_table(conn, job_id, dest, default_url) if dest.kind == "table" else \
                _deliver_file(conn, job_id, dest)
            error = None
        except (SourceError, psycopg.Error, OSError) as e:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            n, error = 0, f"delivery to {dest.label()} failed: {_first_line(e)}"
            if log is not None:
                log(f"job {job_id}: {error}")
        if n or error:
            conn.execute(SQL["delivery_result"], {"job_id": job_id, "error": error})
        total += n
    return total


def _deliver_table(conn: psycopg.Connection, job_id: int, dest: Destination, default_url: str) -> int:
    ident = table_identifier(dest.table or "")
    upsert = sql.SQL(SQL["upsert_destination"]).format(table=ident, key=sql.Identifier(dest.key or ""),
                                                       column=sql.Identifier(dest.column or ""))
    other = None if dest.url is None else _connect(resolve_url(dest.url, default_url))
    total = 0
    try:
        while True:
            with conn.transaction():
                rows = conn.execute(SQL["undelivered_items"], {"job_id": job_id, "n": DELIVERY_BATCH}).fetchall()
                if not rows:
                    return total
                payload = json.dumps([{dest.key: key, dest.column: output} for _, key, output in rows])
                if other is None:  # scoi's database: the upsert and the mark commit together
                    conn.execute(upsert, {"rows": payload})
                else:  # another database: upsert, commit there, then mark (a retry rewrites the same values)
                    with other.transaction():
                        other.execute(upsert, {"rows": payload})
                conn.execute(SQL["mark_delivered"], {"job_id": job_id, "idxs": [r[0] for r in rows]})
            total += len(rows)
    finally:
        if other is not None:
            other.close()


def _deliver_file(conn: psycopg.Connection, job_id: int, dest: Destination) -> int:
    with conn.transaction():
        if conn.execute(SQL["lock_destination"], {"job_id": job_id}).fetchone() is None:
            return 0  # another worker is writing it
        unfinished, undelivered = conn.execute(SQL["file_delivery_state"], {"job_id": job_id}).fetchone()
        if unfinished or not undelivered:
            return 0
        export_to_file(conn, job_id, dest.format or "tsv", Path(dest.path or "").expanduser())
        conn.execute(SQL["mark_all_delivered"], {"job_id": job_id})
    return undelivered


__all__ = ["Appended", "Destination", "Source", "SourceError", "append_from_source", "check_url", "deliver",
           "destinations", "read_query", "read_source", "resolve_url", "save_destination", "save_source",
           "source_of_job", "table_identifier"]
