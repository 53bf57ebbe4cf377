"""Cutting a run's records into batches (one transaction each) and each batch into parse
tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

from ingest.records import Record

T = TypeVar("T")

# Workers parse a batch in TASKS_PER_BATCH parts, so that they finish close together at
# the end of a run.
TASKS_PER_BATCH = 4


def batches(records: Iterator[Record], size: int) -> Iterator[list[Record]]:
    """The good records of ``records`` in lists of ``size`` (the last one shorter)."""
    batch: list[Record] = []
    for rec in records:
        if rec.problem:
            continue
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def with_last(items: Iterator[list[Record]]) -> Iterator[tuple[list[Record], bool]]:
    """(item, is it the last one?), looking one item ahead."""
    ahead = next(items, None)
    while ahead is not None:
        item, ahead = ahead, next(items, None)
        yield item, ahead is None


def split_batch(batch: list[Record], parts: int) -> list[list[Record]]:
    """``batch`` in at most ``parts`` consecutive pieces of nearly equal size."""
    parts = min(parts, len(batch))
    step, extra = divmod(len(batch), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + step + (1 if i < extra else 0)
        out.append(batch[start:end])
        start = end
    return out


class PendingTasks(Generic[T]):
    """Tasks read but not written yet, by task number. The parse pool's feeder thread adds
    them (it runs the reader) while the writing thread takes them and looks at the rest:
    one lock, or a write iterating them while a task is added fails ("dictionary changed
    size during iteration", seen importing a 2M-pair TMX with two workers)."""

    def __init__(self) -> None:
        self._tasks: dict[int, T] = {}
        self._lock = threading.Lock()

    def add(self, no: int, task: T) -> None:
        with self._lock:
            self._tasks[no] = task

    def take(self, no: int) -> T:
        with self._lock:
            return self._tasks.pop(no)

    def rest(self) -> list[T]:
        """The tasks still pending, as they are now."""
        with self._lock:
            return list(self._tasks.values())
