"""A worker's liveness: a connection of its own holding the worker's lock, and the thread
that beats on it. While that session lives the worker's claimed items are its own; once it
ends (kill -9, a lost machine) they are free at once; a missed beat only risks a re-claim,
whose results are then refused, never written twice.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from typing import Callable

import psycopg

from scoi.jobs import store


class Liveness:
    """The liveness connection and heartbeat thread of worker ``worker_id``."""

    def __init__(self, url: str, worker_id: str, *, stall_timeout: float, interval: float,
                 log: Callable[[str], None]) -> None:
        self.url = url
        self.id = worker_id
        self.stall = float(stall_timeout)
        self.interval = interval
        self.log = log
        self._lock = threading.Lock()  # the liveness connection: heartbeat thread and close()
        self._key = 0
        self._stop = threading.Event()
        self._conn = self._register()

    def _register(self) -> psycopg.Connection:
        """Open the liveness connection and take the worker's lock on it (a fresh random key
        if another live session holds the one drawn: two workers never share a lock)."""
        conn = store.connect(self.url)
        try:
            for _ in range(5):
                self._key = random.randint(-2**31, 2**31 - 1)
                if store.register_worker(conn, self.id, host=socket.gethostname(), pid=os.getpid(),
                                         key=self._key, stall=self.stall):
                    return conn
            raise RuntimeError(f"worker {self.id}: could not take a liveness lock")
        except BaseException:
            conn.close()
            raise

    def beat(self) -> None:
        """One heartbeat on the liveness connection; a lost connection is reopened and the
        lock taken again (until then the worker reads as dead and its items may go: their
        results are then refused, never written twice)."""
        with self._lock:
            if self._conn.closed or self._conn.broken:
                conn = store.connect(self.url)
                if not store.register_worker(conn, self.id, host=socket.gethostname(), pid=os.getpid(),
                                             key=self._key, stall=self.stall):
                    conn.close()  # the old session still holds the lock: it is alive, try again later
                    raise psycopg.OperationalError("the previous session still holds the worker's lock")
                self._conn = conn
            store.heartbeat(self._conn, self.id)

    def _loop(self) -> None:
        failing = False  # one log line per outage (a database restart), not one per beat
        while not self._stop.wait(self.interval):
            try:
                self.beat()
                failing = False
            except psycopg.Error as e:  # keep trying: a missed beat only risks a re-claim
                if not failing:
                    self.log(f"worker {self.id}: heartbeat failed: {str(e).strip()}")
                failing = True
                with self._lock:
                    if self._conn.broken:
                        self._conn.close()

    def start(self) -> threading.Thread:
        """Start beating every ``interval`` seconds, on a daemon thread (returned, to join)."""
        self._stop.clear()
        thread = threading.Thread(target=self._loop, name="scoi-heartbeat", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop beating (the thread ends at its next wake-up)."""
        self._stop.set()

    def close(self) -> None:
        """Unregister the worker and end the session: last, since the lock ends with it."""
        with self._lock:
            try:
                if not self._conn.closed and not self._conn.broken:
                    store.unregister_worker(self._conn, self.id)
            except psycopg.Error:
                pass
            self._conn.close()


__all__ = ["Liveness"]
