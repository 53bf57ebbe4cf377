"""One warm Selector per direction, shared by the server's request threads.

A Selector holds a psycopg connection and a spaCy pipeline, neither of which may be used
by two threads at once, so each direction's selector has its own lock: requests for one
direction take turns, requests for different directions run side by side. A selector
whose connection broke (the database restarted) is dropped and the request runs once more
on a new one, so a restart costs no request; a database still down fails that one too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from scoi.core import defaults
from scoi.embedding.embedder import EmbedderError
from scoi.embedding.embeddings import EmbeddingError
from scoi.selection.selector import SelectionError, Selector

T = TypeVar("T")


class Busy(RuntimeError):
    """The direction's selector stayed busy for the whole request time limit."""


class SelectorCache:
    """Selectors by (src, tgt), built on first use (or by :meth:`warm`)."""

    def __init__(self, url: str, *, pool: int = defaults.POOL, statement_timeout_s: float = 30.0,
                 embedder: str | None = None, log: logging.Logger | None = None) -> None:
        self.url, self.pool, self.embedder = url, pool, embedder
        self.log = log or logging.getLogger(__name__)
        self.statement_timeout_ms = int(statement_timeout_s * 1000)
        self._entries: dict[tuple[str, str], tuple[Selector, threading.Lock]] = {}
        self._build_lock = threading.Lock()

    def _entry(self, src: str, tgt: str) -> tuple[Selector, threading.Lock]:
        key = (src.lower(), tgt.lower())
        entry = self._entries.get(key)
        if entry is None:
            with self._build_lock:
                entry = self._entries.get(key)
                if entry is None:
                    sel = Selector(key[0], key[1], url=self.url, pool=self.pool,  # SelectionError: not cached
                                   embedder=self.embedder)
                    # The server's bound on any one statement, whatever a request asks for.
                    sel.reader.execute("SELECT set_config('statement_timeout', %s, false)",
                                     (str(self.statement_timeout_ms),))
                    sel.warm()  # loads spaCy, the pipeline and the Moses tables now, not in a request
                    entry = self._entries[key] = (sel, threading.Lock())
        return entry

    def warm(self, src: str, tgt: str) -> Selector:
        """Build the direction's selector now (start-up), so the first request is fast; with
        an ``embedder`` named, load its model too (the fuzzy methods' first request)."""
        sel = self._entry(src, tgt)[0]
        if self.embedder:
            sel.embeddings.embedder(sel.reader)
        return sel

    def run(self, src: str, tgt: str, work: Callable[[Selector], T], *, wait_s: float) -> T:
        """``work(selector)`` while holding the direction's lock (waiting at most ``wait_s``);
        once more on a new selector when the cached one's connection was lost (``work``
        only reads: selection, or writes it rolls back)."""
        for attempt in (1, 2):
            sel, lock = self._entry(src, tgt)
            if not lock.acquire(timeout=max(wait_s, 0.001)):
                raise Busy(f"the {src}-{tgt} selector stayed busy for {wait_s:.0f} s; retry later")
            try:
                return work(sel)
            except psycopg.Error as e:
                lost = connection_lost(sel)  # before _drop closes it
                self._drop((src.lower(), tgt.lower()), sel)
                if attempt == 2 or not lost:
                    raise
                self.log.warning("selector %s-%s lost its database connection (%s); reconnecting",
                                 src, tgt, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
            finally:
                lock.release()
        raise AssertionError("unreachable")  # the loop returns or raises

    def _drop(self, key: tuple[str, str], sel: Selector) -> None:
        with self._build_lock:
            if self._entries.get(key, (None,))[0] is sel:
                del self._entries[key]
        try:
            sel.close()
        except Exception:  # noqa: BLE001 - already broken
            pass

    def directions(self) -> list[str]:
        return [f"{s}-{t}" for s, t in self._entries]

    def close(self) -> None:
        with self._build_lock:
            entries, self._entries = list(self._entries.values()), {}
        for sel, lock in entries:
            with lock:
                sel.close()


def connection_lost(sel: Selector) -> bool:
    """Whether the selector's database connection is gone (server restarted or killed)."""
    return sel.primary.closed or sel.primary.broken


def warm_all(pools: SelectorCache, directions: list[tuple[str, str]], log: Callable[[str], Any]) -> None:
    """Warm each direction, logging (not failing on) the ones that cannot be built."""
    for src, tgt in directions:
        try:
            pools.warm(src, tgt)
            log(f"selector {src}-{tgt} ready")
        except (SelectionError, ValueError, EmbedderError, EmbeddingError, psycopg.OperationalError) as e:
            log(f"selector {src}-{tgt} not ready: {e}")
