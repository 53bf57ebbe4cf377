"""The checks a job's source and destination pass before anything is stored or read:
database URLs (no stored password; ``env:VAR`` names only a ``*_URL`` variable), file
paths (only inside the worker's source and destination directories), and the one error
type for both (SourceError), with connection helpers that never echo a secret."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from scoi.config import ENV_DEST_DIR, ENV_SOURCE_DIR, source_database_url_from_env, url_from_env
from scoi.db import connect
from scoi.db.embedded import READER_ROLE
from scoi.jobs.spec import JobError
from scoi.secrets import SecretError, check_database_url, describe_database_url

ENV_PREFIX = "env:"


class SourceError(JobError):
    """A source or destination that cannot be used (bad query, missing table, ...)."""


class SourceInterrupted(SourceError):
    """The source query was cancelled because this process is stopping (not the source's fault)."""


# --------------------------------------------------------------------------- database URLs
def check_url(url: str | None, option: str) -> None:
    """Refuse a URL or conninfo that holds a password, sslpassword or passfile (it would be
    stored in plain text): scoi.secrets, the one secret check, says which without echoing it."""
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
    own = source_database_url_from_env()
    if own is not None:
        return own
    params = {k: v for k, v in conninfo_to_dict(default_url).items() if k != "password"}
    params["user"] = READER_ROLE
    return make_conninfo("", **params)


def connect_source(url: str) -> psycopg.Connection:
    try:
        return connect(url, connect_timeout=10)
    except psycopg.ProgrammingError:  # libpq's parse error quotes the text, which may be a secret
        raise SourceError(f"cannot connect to {safe_url(url)}: not a PostgreSQL URL or conninfo string") from None
    except psycopg.Error as e:
        raise SourceError(f"cannot connect to {safe_url(url)}: {first_line(e)}") from None


def safe_url(url: str) -> str:
    """A database for messages: host, port, dbname and user only (an ``env:`` URL, or
    scoi's own, may hold a password that must not be echoed)."""
    return describe_database_url(url)


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]



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



__all__ = ["ENV_PREFIX", "SourceError", "SourceInterrupted", "check_url", "connect_source", "dest_file_path",
           "env_url_name", "first_line", "reader_url", "resolve_url", "safe_url", "source_file_path"]
