"""Run a function every few seconds on a thread of its own while a block runs: the
progress lines of long steps (a worker's counts, an index build's phase) are read this way
without the step itself stopping to report."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def every(interval: float, tick: Callable[[threading.Event], None], name: str) -> Iterator[None]:
    """Meanwhile, call ``tick(stop)`` on a daemon thread; ``tick`` waits on ``stop`` between
    reads (``while not stop.wait(interval)``) and returns when it is set. The thread is
    joined when the block ends, so nothing reports after it."""
    stop = threading.Event()
    thread = threading.Thread(target=tick, args=(stop,), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


__all__ = ["every"]
