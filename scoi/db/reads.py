"""Where selection reads: the primary, or a streaming replica of it.

``SCOI_READ_DATABASE_URL`` names a streaming replica (a hot standby) of the configured
database. Selection (preselection, candidate fetch, the corpus and parser look-ups) then
reads from it; everything that writes (recording a selection, ingest, job claims and
results) stays on the primary. Without it, everything reads from the primary as before.

A replica only lags: what it shows is a snapshot the primary had a moment earlier, so every
pair id it returns exists on the primary (pairs are never deleted) and a selection made
there can be recorded on the primary. Before each selection the route compares the
replica's replay position with the primary's flushed WAL position:

* caught up (replayed all the primary has flushed): lag 0, every transaction committed on
  the primary before the check is visible;
* behind: ``lag_bytes`` still to replay, and ``lag_s``, an upper bound of how stale its
  snapshot is: the age of the last transaction it replayed, or, when shorter, the time since
  an earlier check of this route read a primary position the replica has now replayed
  (everything committed before that check is visible). With ``SCOI_READ_MAX_LAG``
  (seconds) set, a replica further behind is not read: that selection reads from the
  primary, with one warning when that starts. ``SCOI_READ_MAX_LAG=0`` reads from the
  replica only when it is caught up (read-your-writes);
* unreachable, or at another schema revision than this scoi's migrations: the primary,
  with a warning; an unreachable replica is tried again after ``RETRY_S`` seconds;
* not a standby of the primary (checked once per replica connection): another cluster
  (its ``system_identifier`` differs), another database of a cluster, or a server not in
  recovery that is not the primary itself (a promoted standby): never read, since its pair
  ids would name unrelated pairs of the primary; the primary, with a warning.

Every fallback warning is one line naming the cause, and the same cause is the
``fallback`` of the selection's ``read`` status.

Each selection reports where it read and the replica's position (``ReadStatus``, the
``read`` object of ``scoi select --json``).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from scoi.core import defaults
from scoi.db import connect
from scoi.db.queries import load

if TYPE_CHECKING:
    import psycopg

SQL = load("reads")
RETRY_S = defaults.REPLICA_RETRY_SECONDS  # an unreachable replica is tried again after this long


@dataclass(frozen=True)
class ReadStatus:
    """Where one selection read, and how far behind the primary the replica was."""

    server: str  # "replica" or "primary"
    standby: bool | None  # the replica is in recovery (None: not reached)
    replay_lsn: str | None  # WAL position the replica has replayed up to
    primary_lsn: str  # the primary's flushed WAL position, read just before
    lag_bytes: int | None  # WAL still to replay (0: caught up)
    lag_s: float | None  # 0 when caught up, else an upper bound of how stale its snapshot is
    replay_paused: bool | None
    max_lag_s: float | None  # SCOI_READ_MAX_LAG
    fallback: str | None  # why this selection read from the primary (None: it did not)
    check_ms: float  # the two position queries

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for ``--verbose``."""
        if self.fallback:
            return f"read from the primary: {self.fallback}"
        if not self.standby:
            return "read from SCOI_READ_DATABASE_URL (not a standby: no replay position)"
        stale = "no transaction replayed yet" if self.lag_s is None else f"at most {self.lag_s:.1f} s stale"
        behind = ("caught up" if not self.lag_bytes else f"{self.lag_bytes} bytes of WAL behind, {stale}"
                  + (", replay paused" if self.replay_paused else ""))
        return f"read from the replica: replayed up to {self.replay_lsn} ({behind})"


class ReadRoute:
    """The primary connection (writes, and reads without a replica) and the replica's.

    ``choose`` picks, before each selection, the connection it reads from."""

    def __init__(self, url: str, read_url: str | None = None, *, max_lag: float | None = None) -> None:
        self.primary = connect(url, autocommit=True)
        self.read_url = read_url if read_url and read_url != url else None
        self.max_lag = max_lag
        self._heads: frozenset[str] | None = None
        if self.read_url is not None:
            from scoi.db.migrate import known_heads

            self._heads = known_heads()  # the revision the replica must be at (None: not known)
        self._replica: psycopg.Connection | None = None
        self._primary_identity: tuple[Any, ...] | None = None
        self._not_standby: str | None = None  # why the connected replica is not the primary's standby
        self._last_error = ""  # why the replica could not be read last (kept while not tried again)
        self._retry_at = 0.0
        self._falling_back: str | None = None  # the reason last warned about
        self._checks: deque[tuple[float, int]] = deque(maxlen=256)  # (monotonic time, primary LSN) of checks

    def choose(self) -> tuple[psycopg.Connection, ReadStatus | None]:
        """The connection the next selection reads from, and the replica's status (None
        without a replica: the primary)."""
        if self.read_url is None:
            return self.primary, None
        t0 = time.perf_counter()
        primary_lsn = self.primary.execute(SQL["primary_position"]).fetchone()[0]
        checked_at = time.monotonic()
        status = dict(standby=None, replay_lsn=None, primary_lsn=primary_lsn, lag_bytes=None, lag_s=None,
                      replay_paused=None, max_lag_s=self.max_lag)
        reason = None
        try:
            conn = self._replica_conn()
            if self._not_standby is None:
                standby, replay_lsn, lag_bytes, since_s, paused, revisions = conn.execute(
                    SQL["replica_position"], {"primary_lsn": primary_lsn}).fetchone()
        except _errors() as e:
            self._drop_replica()
            if not isinstance(e, ReplicaUnavailable):
                self._last_error = error_cause(e)
            reason = f"the replica (SCOI_READ_DATABASE_URL) cannot be read: {self._last_error}"
            if isinstance(e, ReplicaUnavailable):
                reason += f" ({e})"
        else:
            if self._not_standby is not None:
                reason = self._not_standby
            else:
                lag_s = None if not standby else 0.0 if lag_bytes == 0 else self._staleness(replay_lsn, since_s)
                status.update(standby=standby, replay_lsn=replay_lsn, lag_bytes=lag_bytes, lag_s=lag_s,
                              replay_paused=paused)
                reason = self._refusal(standby, lag_s, revisions)
        self._checks.append((checked_at, lsn_int(primary_lsn)))
        self._warn(reason)
        check_ms = round((time.perf_counter() - t0) * 1000, 3)
        read = ReadStatus(server="primary" if reason else "replica", fallback=reason, check_ms=check_ms, **status)
        return (self.primary if reason else conn), read

    def _staleness(self, replay_lsn: str, since_replayed_s: float | None) -> float | None:
        """How stale a replica that is behind can be at most: the age of its last replayed
        transaction, or the time since the latest earlier check whose primary position it has
        replayed, whichever is shorter (None: neither is known)."""
        replayed = lsn_int(replay_lsn)
        seen = [t for t, lsn in self._checks if lsn <= replayed]
        bounds = [b for b in (since_replayed_s, time.monotonic() - max(seen) if seen else None) if b is not None]
        return min(bounds) if bounds else None

    def _refusal(self, standby: bool, lag_s: float | None, revisions: list[str]) -> str | None:
        """Why the replica must not be read now, or None."""
        if self._heads is not None and set(revisions) != self._heads:
            return (f"the replica's schema is at revision {','.join(revisions) or 'none'}, this scoi needs "
                    f"{','.join(sorted(self._heads))} (it has not replayed the migration yet)")
        if standby and self.max_lag is not None and (lag_s is None or lag_s > self.max_lag):
            behind = "has replayed no transaction yet" if lag_s is None else f"is {lag_s:.1f} s behind"
            return f"the replica {behind} (SCOI_READ_MAX_LAG={self.max_lag:g})"
        return None

    def _replica_conn(self) -> psycopg.Connection:
        if self._replica is None or self._replica.closed or self._replica.broken:
            if time.monotonic() < self._retry_at:
                raise ReplicaUnavailable(f"not tried again for {self._retry_at - time.monotonic():.0f} s")
            conn = connect(self.read_url, autocommit=True, connect_timeout=5)
            try:
                conn.execute(SQL["read_only"])
                self._not_standby = self._standby_problem(conn.execute(SQL["server_identity"]).fetchone())
            except BaseException:
                conn.close()
                raise
            self._replica = conn
        return self._replica

    def _standby_problem(self, replica: tuple[Any, ...]) -> str | None:
        """Why the server of ``replica`` (its server_identity row) is not a standby of the
        primary (nor the primary itself), or None: its pair ids would not be the primary's."""
        if self._primary_identity is None:
            self._primary_identity = tuple(self.primary.execute(SQL["server_identity"]).fetchone())
        system, database, in_recovery, started = replica
        p_system, p_database, _, p_started = self._primary_identity
        what = "SCOI_READ_DATABASE_URL is not a standby of the primary"
        if system != p_system:
            return (f"{what}: another PostgreSQL cluster (system identifier {system}, the primary's is "
                    f"{p_system})")
        if database != p_database:
            return f"{what}: it names database {database!r}, the primary's is {p_database!r}"
        if not in_recovery and started != p_started:
            return f"{what}: another server of its cluster, not in recovery (a promoted standby?)"
        return None

    def _drop_replica(self) -> None:
        if self._replica is not None:
            self._replica.close()
        self._replica = None
        if time.monotonic() >= self._retry_at:
            self._retry_at = time.monotonic() + RETRY_S

    def _warn(self, reason: str | None) -> None:
        """One line on stderr when selection starts reading from the primary, one when it
        reads from the replica again (not one per selection)."""
        if reason and not self._falling_back:
            print(f"warning: reading from the primary: {reason}", file=sys.stderr, flush=True)
        elif not reason and self._falling_back:
            print("note: reading from the replica again", file=sys.stderr, flush=True)
        self._falling_back = reason

    def close(self) -> None:
        if self._replica is not None:
            self._replica.close()
        self.primary.close()


class ReplicaUnavailable(RuntimeError):
    """The replica failed recently; not tried again before the retry time."""


def lsn_int(lsn: str) -> int:
    """A WAL position (``'16/B374D848'``) as a number."""
    high, _, low = lsn.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def error_cause(error: BaseException) -> str:
    """A database error as one line for a warning: the server's primary message (no
    ``LINE n:`` quote of the statement, no hint), or the first line of the client's."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None)
    text = primary or next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    if getattr(diag, "sqlstate", None) == "42P01" and "alembic_version" in text:
        return "it holds no scoi schema (no alembic_version table): not a replica of this database"
    return " ".join(text.split())


def _errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error, ReplicaUnavailable)


__all__ = ["ReadRoute", "ReadStatus", "RETRY_S", "error_cause"]
