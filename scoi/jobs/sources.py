"""Where a job's items come from: a *source*, the lines of a file (matched by content, as
``scoi job sync``) or the ``(key, text)`` rows of a SQL query, in scoi's database or in
another one. Destinations are scoi.jobs.destinations's; the URL and path checks both
pass are scoi.jobs.source_checks's.

A query is one statement (sent with the extended protocol, which refuses
several), run on a connection of its own in a READ ONLY transaction with a
``statement_timeout`` and a ``lock_timeout``, by a role that is no superuser and may not
read or write server files, run programs or signal other sessions: in scoi's database the
role ``scoi_reader`` (migration 0017), which reads only the tables granted to it. It must
return exactly two columns, text in the second, and keys that are non-null and unique;
anything else is a clear error raised before a single item is added. Only keys the job does
not hold yet become items.

Secrets are never stored: a URL with a password is refused, as backend options are
(scoi.jobs.spec.check_backend_options); the password comes from the environment
(PGPASSWORD, ~/.pgpass, a libpq service), or the whole URL from a variable (``env:NAME``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from scoi.config import source_dir_from_env
from scoi.core import defaults, inline
from scoi.db.queries import load
from scoi.jobs.documents import document_format, read_segments
from scoi.jobs.source_checks import (SourceError, SourceInterrupted, check_url, connect_source, first_line,
                                     reader_url, resolve_url, source_file_path)
from scoi.jobs.spec import read_lines

SQL = load("sources")
#: Column types a source query's text column may have (text, varchar, bpchar, name).
TEXT_TYPES = {25: "text", 1043: "varchar", 1042: "bpchar", 19: "name"}
#: The source query's statement_timeout when none is given (seconds); lock_timeout is capped.
DEFAULT_SOURCE_TIMEOUT = defaults.SOURCE_TIMEOUT
MAX_LOCK_TIMEOUT = 5.0


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
    with connect_source(url) as conn:
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
                f"{first_line(e)}")
    if isinstance(e, (psycopg.errors.AdminShutdown, psycopg.OperationalError)) or conn.closed:
        return f"source query's connection was closed by the server: {first_line(e)}"
    if isinstance(e, psycopg.errors.SyntaxError) and "multiple commands" in str(e):
        return "the source query holds more than one statement; expected exactly one: SELECT key, text FROM ..."
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        grant = (f": GRANT SELECT ON the_table TO {role}" if "permission denied for" in str(e)
                 and any(w in str(e) for w in ("table", "view", "schema", "sequence")) else "")
        return (f"the source query failed: {first_line(e)} (source queries run as the role {role!r}, which may "
                f"only read what is granted to it{grant})")
    return f"the source query failed: {first_line(e)}"


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


__all__ = ["DEFAULT_SOURCE_TIMEOUT", "Source", "cancelled_on", "check_reader", "read_query", "read_source",
           "save_source", "source_of_job"]
