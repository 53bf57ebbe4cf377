"""Jobs over table rows: a job's source (file, or SQL query) and destination (file, or table).

A *source* says where new items come from: the lines of a file (matched by content, as
``scoi job sync``), or the ``(key, text)`` rows of a SQL query, in scoi's database or in
another one. A query is one statement (sent with the extended protocol, which refuses
several), run on a connection of its own in a READ ONLY transaction with a
``statement_timeout`` and a ``lock_timeout``, by a role that is no superuser and may not
read or write server files, run programs or signal other sessions: in scoi's database the
role ``scoi_reader`` (migration 0017), which reads only the tables granted to it. It must
return exactly two columns, text in the second, and keys that are non-null and unique;
anything else is a clear error raised before a single item is added. Only keys the job does
not hold yet become items.

A *destination* says where outputs go besides the job: a table, upserted by key
(``INSERT ... ON CONFLICT (key) DO UPDATE``; the key column needs a unique constraint), or a
file, written whole once the job has no unfinished item. A table destination is checked
when the job is made: the columns exist, the column takes text, the key is another column,
and every source key casts to the key column's type, with no two keys equal once cast.
Delivery runs after the items are stored, row by row when a batch fails (an output the table
refuses keeps its error in ``job_item.delivery_error`` and reads ``undelivered``; the others
go in), and is idempotent: ``job_item.delivered_at`` marks what a destination has received,
so an item is delivered again only if a delivery failed or was cut short (in scoi's own
database the upsert and the mark commit together).

Secrets are never stored: a URL with a password is refused, as backend options are
(scoi.jobs.spec.check_backend_options); the password comes from the environment
(PGPASSWORD, ~/.pgpass, a libpq service), or the whole URL from a variable (``env:NAME``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg import sql

from scoi.core import defaults, inline
from scoi.config import ENV_DEST_DIR, ENV_SOURCE_DIR, dest_dir_from_env, source_dir_from_env
from scoi.db.queries import load
from scoi.jobs.create import new_job
from scoi.jobs.documents import DOCUMENT_FORMATS, append_document, document_format, read_segments
from scoi.jobs.export import EXPORT_FORMATS, export_to_file
from scoi.jobs.spec import JobError, JobSpec, read_lines
from scoi.jobs.store import append_new
from scoi.jobs.validate import validate

SQL = load("sources")
#: Column types a source query's text column may have (text, varchar, bpchar, name).
TEXT_TYPES = {25: "text", 1043: "varchar", 1042: "bpchar", 19: "name"}
DELIVERY_BATCH = 1000
ENV_PREFIX = "env:"
#: The source query's statement_timeout when none is given (seconds); lock_timeout is capped.
DEFAULT_SOURCE_TIMEOUT = defaults.SOURCE_TIMEOUT
MAX_LOCK_TIMEOUT = 5.0


class SourceError(JobError):
    """A source or destination that cannot be used (bad query, missing table, ...)."""


class SourceInterrupted(SourceError):
    """The source query was cancelled because this process is stopping (not the source's fault)."""


#: Set while a worker runs schedules: a source query running when it is set is cancelled.
_STOP: ContextVar[threading.Event | None] = ContextVar("scoi_source_stop", default=None)


@contextmanager
def cancelled_on(stop: threading.Event) -> Iterator[None]:
    """Source queries read within this block are cancelled as soon as ``stop`` is set (a
    worker's SIGTERM), instead of running on to their timeout."""
    token = _STOP.set(stop)
    try:
        yield
    finally:
        _STOP.reset(token)


@contextmanager
def _cancel_when_stopped(conn: psycopg.Connection) -> Iterator[None]:
    stop, done = _STOP.get(), threading.Event()
    if stop is None:
        yield
        return

    def watch() -> None:
        while not done.is_set():
            if stop.wait(0.2) and not done.is_set():
                conn.cancel_safe()
                return

    watcher = threading.Thread(target=watch, name="scoi-source-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


# --------------------------------------------------------------------------- database URLs
def check_url(url: str | None, option: str) -> None:
    """Refuse a URL or conninfo that holds a password, sslpassword or passfile (it would be
    stored in plain text): scoi.secrets, the one secret check, says which without echoing it."""
    from scoi.secrets import SecretError, check_database_url

    if url is None:
        return
    if url.startswith(ENV_PREFIX):
        env_url_name(url, option)
        return
    try:
        check_database_url(url, option)
    except SecretError as e:
        raise SourceError(str(e)) from None


def env_url_name(url: str, option: str = "--source-url") -> str:
    """The variable an ``env:VAR`` URL names, which must end in ``_URL``: a stored job picks
    the variable, so it may pick only a database URL, never the worker's other secrets
    (``env:SCOI_OPENAI_API_KEY``, ``env:PGPASSWORD``); a SourceError otherwise."""
    name = url[len(ENV_PREFIX):]
    if not (name.endswith("_URL") and name.replace("_", "").isalnum() and name.isascii()):
        raise SourceError(f"{option} {url[:80]!r}: an env: URL names an environment variable whose name ends in _URL "
                          "(e.g. env:DOCS_URL), holding the database URL")
    return name


def resolve_url(url: str | None, default_url: str) -> str:
    """The URL to connect to: scoi's own database when None, ``env:VAR`` read from the
    environment (only a variable named ``*_URL``: :func:`env_url_name`)."""
    from scoi.config import url_from_env

    if url is None:
        return default_url
    if url.startswith(ENV_PREFIX):
        name = env_url_name(url)
        value = url_from_env(name)
        if value is None:
            raise SourceError(f"environment variable {name} (from {url!r}) is not set in this process; "
                              f"set it to the database URL for every worker")
        return value
    return url


def reader_url(default_url: str) -> str:
    """Where a source query on scoi's own database runs: ``SCOI_SOURCE_DATABASE_URL`` if set,
    else scoi's URL with the user ``scoi_reader`` (and no password: the embedded server lets
    scoi's OS user in as scoi_reader by its pg_ident map; a server of your own needs a rule,
    a ~/.pgpass line or SCOI_SOURCE_DATABASE_URL)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from scoi.config import source_database_url_from_env
    from scoi.db.embedded import READER_ROLE

    own = source_database_url_from_env()
    if own is not None:
        return own
    params = {k: v for k, v in conninfo_to_dict(default_url).items() if k != "password"}
    params["user"] = READER_ROLE
    return make_conninfo("", **params)


def _connect(url: str) -> psycopg.Connection:
    from scoi.db import connect

    try:
        return connect(url, connect_timeout=10)
    except psycopg.ProgrammingError:  # libpq's parse error quotes the text, which may be a secret
        raise SourceError(f"cannot connect to {_safe(url)}: not a PostgreSQL URL or conninfo string") from None
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
    timeout: float = DEFAULT_SOURCE_TIMEOUT  # seconds: the query's statement_timeout

    def check(self) -> None:
        if self.kind == "sql":
            if not (self.query or "").strip():
                raise SourceError("--source-sql is empty; expected a query such as "
                                  "\"SELECT id, body FROM documents WHERE body_en IS NULL\"")
            if not 0 < self.timeout <= 86400:
                raise SourceError(f"--source-timeout {self.timeout:g}: expected seconds, more than 0 and at most "
                                  "86400 (a day)")
            check_url(self.url, "--source-url")
        elif self.kind == "file":
            if self.url is not None:
                raise SourceError("--source-url goes with --source-sql, not with --input")
            source_file_path(self.path or "", source_dir_from_env())  # checked again at every run
        else:
            raise SourceError(f"unknown source kind {self.kind!r}; expected file or sql")

    def label(self) -> str:
        if self.kind == "file":
            return f"file {self.path}"
        return f"query on {self.url or 'the scoi database'}: {' '.join((self.query or '').split())}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_source(source: Source, default_url: str) -> list[tuple[str | None, str]]:
    """The source's (key, text) rows: keys for a query, None for the lines of a file, the
    segment keys and texts (without codes) of a CAT file (XLIFF, PO: scoi.jobs.documents)."""
    if source.kind == "file" and document_format(source.path or "") is not None:
        path = source_file_path(source.path or "", source_dir_from_env())
        return [(s.key, inline.plain(s.masked)) for s in read_segments(path)[2]]
    if source.kind == "file":
        return [(None, line) for line in read_lines(source_file_path(source.path or "", source_dir_from_env()))]
    if source.url is not None:
        return read_query(source.query or "", resolve_url(source.url, default_url), source.timeout)
    try:
        return read_query(source.query or "", reader_url(default_url), source.timeout)
    except SourceError as e:
        if str(e).startswith("cannot connect"):  # docs/security.md, Table sources
            raise SourceError(f"{e} (source queries on scoi's database run as scoi_reader: let it connect, or set "
                              "SCOI_SOURCE_DATABASE_URL to a read-only role's URL)") from None
        raise


def _seconds(value: float) -> str:
    return f"{value:g} s"


def read_query(query: str, url: str, timeout: float = DEFAULT_SOURCE_TIMEOUT) -> list[tuple[str, str]]:
    """Run a source query and check its shape: exactly two columns, text in the second, keys
    non-null and unique. Keys are kept as text (the job's ``source_key``).

    The query gets a connection of its own, whose role :func:`check_reader` accepts, and runs
    as one prepared statement (several are refused by the server) in a READ ONLY
    transaction, under ``statement_timeout`` = ``timeout`` and a ``lock_timeout``; the
    connection is closed after it, so nothing it set outlives it."""
    lock_timeout = min(timeout, MAX_LOCK_TIMEOUT)
    with _connect(url) as conn:
        role = conn.info.user
        try:
            check_reader(conn)
            conn.execute(SQL["source_timeouts"], {"statement": f"{max(1, int(timeout * 1000))}ms",
                                                  "lock": f"{max(1, int(lock_timeout * 1000))}ms"})
            conn.commit()
            with _cancel_when_stopped(conn), conn.transaction():
                conn.execute(SQL["read_only"])
                # prepare=True: the extended protocol, one statement; no parameters, so a % in
                # the query is the query's own.
                cur = conn.execute(query.strip().rstrip(";"), prepare=True)
                desc = cur.description
                if desc is None:
                    raise SourceError("the source query returned no rows at all (is it a SELECT?); expected "
                                      "SELECT key, text FROM ...")
                rows = cur.fetchall()
        except psycopg.Error as e:
            stop = _STOP.get()
            if isinstance(e, psycopg.errors.QueryCanceled) and stop is not None and stop.is_set():
                raise SourceInterrupted("source query cancelled: the worker is stopping") from None
            raise SourceError(_query_error(e, conn, role, timeout, lock_timeout)) from None
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


def check_reader(conn: psycopg.Connection) -> None:
    """Refuse to run a source query as a role that could do more than read: a superuser (or a
    member of one), a role that may create roles, or a member of the roles that read or
    write server files, run server programs or signal other sessions' backends."""
    user, powers = conn.execute(SQL["reader_powers"]).fetchone()
    conn.rollback()
    if powers:
        raise SourceError(f"source queries must run as a role that can only read, and {user!r} is "
                          f"{' and '.join(powers)}: connect as scoi_reader (docs/security.md, Table sources)")


def _query_error(e: psycopg.Error, conn: psycopg.Connection, role: str, timeout: float, lock_timeout: float) -> str:
    """One line for a source query that failed, saying why in the user's terms."""
    if isinstance(e, psycopg.errors.QueryCanceled):
        if "statement timeout" in str(e):
            return f"source query cancelled after {_seconds(timeout)} (statement_timeout; see --source-timeout)"
        return "source query cancelled by another session (pg_cancel_backend)"
    if isinstance(e, psycopg.errors.LockNotAvailable):
        return (f"source query gave up waiting for a lock after {_seconds(lock_timeout)} (lock_timeout): "
                f"{_first_line(e)}")
    if isinstance(e, (psycopg.errors.AdminShutdown, psycopg.OperationalError)) or conn.closed:
        return f"source query's connection was closed by the server: {_first_line(e)}"
    if isinstance(e, psycopg.errors.SyntaxError) and "multiple commands" in str(e):
        return "the source query holds more than one statement; expected exactly one: SELECT key, text FROM ..."
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        grant = (f": GRANT SELECT ON the_table TO {role}" if "permission denied for" in str(e)
                 and any(w in str(e) for w in ("table", "view", "schema", "sequence")) else "")
        return (f"the source query failed: {_first_line(e)} (source queries run as the role {role!r}, which may "
                f"only read what is granted to it{grant})")
    return f"the source query failed: {_first_line(e)}"


def save_source(conn: psycopg.Connection, job_id: int, source: Source) -> None:
    conn.execute(SQL["insert_source"], {"job_id": job_id, "kind": source.kind, "path": source.path,
                                        "query": source.query, "url": source.url, "url_env": None,
                                        "timeout_s": source.timeout})


def source_of_job(conn: psycopg.Connection, job_id: int) -> Source | None:
    row = conn.execute(SQL["source_of_job"], {"job_id": job_id}).fetchone()
    if row is None:
        return None
    kind, path, query, url, _url_env, timeout = row
    return Source(kind=kind, path=path, query=query, url=url, timeout=timeout)


@dataclass
class Appended:
    added: int
    skipped: int  # rows already in the job, or blank


def append_from_source(conn: psycopg.Connection, job_id: int, max_attempts: int, source: Source,
                       default_url: str, rows: list[tuple[str | None, str]] | None = None) -> Appended:
    """Add to the job the source rows it does not hold yet (by key; by content hash for a
    file), inside the caller's transaction. The source is read (unless the caller read it
    already: ``rows``), and checked, before anything is written or locked."""
    if source.kind == "file" and document_format(source.path or "") is not None:
        added, skipped = append_document(conn, job_id, max_attempts,
                                         source_file_path(source.path or "", source_dir_from_env()))
        return Appended(added=added, skipped=skipped)
    if rows is None:
        rows = read_source(source, default_url)
    keys = [key for key, _ in rows] if source.kind == "sql" else None
    _, added = append_new(conn, job_id, max_attempts, [text or "" for _, text in rows], keys=keys)
    return Appended(added=added, skipped=len(rows) - added)


def submit_from_source(conn: psycopg.Connection, spec: JobSpec, source: Source, destination: Destination | None,
                       default_url: str) -> tuple[int, Appended]:
    """``scoi job submit --source-sql``: a job over the rows of a query (or a file's lines),
    with an optional destination, checked as a schedule's are (job settings, the
    destination table; the query is read read-only and its shape checked before any item
    is written). One transaction stores the job, its source, its destination and its
    items, so a query that fails leaves nothing. Returns (job id, what was added)."""
    validate(conn, spec)
    source.check()
    rows = read_source(source, default_url)  # on a connection of its own, before any write
    if destination is not None:
        destination.check(default_url, source, [k for k, text in rows if text and k is not None])
    with new_job(conn, spec, input_path=source.path if source.kind == "file" else None) as job_id:
        save_source(conn, job_id, source)
        if destination is not None:
            save_destination(conn, job_id, destination)
        appended = append_from_source(conn, job_id, spec.max_attempts, source, default_url, rows)
        if not appended.added:
            raise SourceError("the source has no rows with text to translate; nothing was stored")
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
        with _connect(resolve_url(self.url, default_url)) as conn:
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
            raise SourceError(f"{where}s do not all cast to {key_type}: {_first_line(e)}") from None
        if equal is not None:
            a, b = equal[0][:2]
            raise SourceError(f"{where}s {a!r} and {b!r} are the same {key_type} value in {self.table}.{self.key}; "
                              "one translation would overwrite the other: make the keys distinct")


def source_file_path(path: str, source_dir: Path | None) -> Path:
    """The file a schedule's file source may be read from: ``path`` if, every symbolic link
    resolved, it lies in ``source_dir`` (SCOI_SOURCE_DIR or ``scoi worker --source-dir``);
    otherwise a SourceError. A stored schedule names the file and its lines become prompts
    sent to the server the schedule names, so it must never choose a file outside the
    directory the worker's owner gave (docs/security.md, Workers)."""
    if source_dir is None:
        raise SourceError(f"--input {path}: no source directory is configured; schedules read their file sources "
                          f"only inside {ENV_SOURCE_DIR} (workers: `scoi worker --source-dir DIR` or "
                          f"{ENV_SOURCE_DIR}=DIR; `scoi schedule add` checks against {ENV_SOURCE_DIR} too)")
    given = Path(path)
    if not given.is_absolute():
        raise SourceError(f"--input {path}: expected the absolute path of a file")
    target = Path(os.path.realpath(given))
    if not target.is_relative_to(Path(os.path.realpath(source_dir))):
        raise SourceError(f"--input {path}: outside the source directory {source_dir} ({ENV_SOURCE_DIR} / "
                          "`scoi worker --source-dir`), symbolic links resolved")
    return target


def dest_file_path(path: str, dest_dir: Path | None) -> Path:
    """Where a file destination may be written: ``path`` if it lies in ``dest_dir`` (the
    worker's SCOI_DEST_DIR or ``--dest-dir``) once every symbolic link of its folder is
    resolved, and is not itself a link; otherwise a SourceError. A stored job or schedule
    names the file, so it must never choose a file outside the directory the worker's
    owner gave (docs/security.md, Workers)."""
    if dest_dir is None:
        raise SourceError(f"--dest-file {path}: no destination directory is configured; file destinations are "
                          f"written only inside {ENV_DEST_DIR} (workers: `scoi worker --dest-dir DIR` or "
                          f"{ENV_DEST_DIR}=DIR; `scoi schedule add` checks against {ENV_DEST_DIR} too)")
    given = Path(path)
    if not given.is_absolute() or given.name in ("", ".", ".."):
        raise SourceError(f"--dest-file {path}: expected the absolute path of a file")
    root = Path(os.path.realpath(dest_dir))
    parent = Path(os.path.realpath(given.parent))
    if not parent.is_relative_to(root):
        raise SourceError(f"--dest-file {path}: outside the destination directory {dest_dir} "
                          f"({ENV_DEST_DIR} / `scoi worker --dest-dir`), symbolic links resolved")
    target = parent / given.name
    if target.is_symlink():
        raise SourceError(f"--dest-file {path}: is a symbolic link; a destination is a regular file of "
                          f"{dest_dir}")
    return target


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
            n, error = 0, f"delivery to {dest.label()} failed: {_first_line(e)}"
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
    other = None if dest.url is None else _connect(resolve_url(dest.url, default_url))
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
            return f"delivery to {dest.label()} failed: {_first_line(e)}"
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


__all__ = ["Appended", "Destination", "Source", "SourceError", "SourceInterrupted", "append_from_source",
           "cancelled_on", "check_url", "deliver", "dest_file_path", "env_url_name", "source_file_path",
           "destinations", "read_query", "read_source", "resolve_url", "save_destination", "save_source",
           "source_of_job", "table_identifier"]
