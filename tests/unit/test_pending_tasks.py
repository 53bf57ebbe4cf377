"""ingest.batching.PendingTasks: the parse pool's feeder thread adds tasks while the
writing thread takes them and reads the rest (a 2M-pair TMX import with two workers died
with "dictionary changed size during iteration" when that read was a plain dict's)."""

from __future__ import annotations

import sys
import threading

from ingest.batching import PendingTasks


def hammer(pending, add, rest, rounds: int = 20_000) -> list[BaseException]:
    """A feeder thread adding ``rounds`` tasks while this thread reads the rest; errors seen."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def feed() -> None:
        for no in range(rounds):
            add(pending, no, ([no] * 3, {}))
        stop.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the race shows within one run
    try:
        feeder = threading.Thread(target=feed)
        feeder.start()
        while not stop.is_set():
            try:
                sum(len(part) for part, _ in rest(pending))
            except RuntimeError as e:
                errors.append(e)
                break
        feeder.join()
    finally:
        sys.setswitchinterval(interval)
    return errors


def test_reading_the_rest_while_tasks_are_added_never_fails_and_sees_them_all() -> None:
    pending: PendingTasks = PendingTasks()
    assert hammer(pending, PendingTasks.add, PendingTasks.rest) == []
    assert len(pending.rest()) == 20_000 and pending.take(7) == ([7] * 3, {}) and len(pending.rest()) == 19_999


def test_the_plain_dict_it_replaces_does_fail_so_the_race_is_real() -> None:
    """The same race on a dict iterated as the writer used to: fails within a few tries."""
    seen: list[BaseException] = []
    for _ in range(20):
        seen = hammer({}, dict.__setitem__, lambda d: ((p, t) for p, t in d.values()))
        if seen:
            break
    assert seen and "changed size during iteration" in str(seen[0])
