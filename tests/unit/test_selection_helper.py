"""The selection's helper thread (scoi.selection.pipeline.Helper): the pool's reads run on
one thread of its own, started at the first selection and stopped by the selector's close."""

from __future__ import annotations

import threading

from scoi.selection.pipeline import Helper


def test_work_runs_on_one_named_thread_that_is_not_the_callers() -> None:
    helper = Helper()
    try:
        names = [helper.submit(lambda: threading.current_thread().name).result() for _ in range(3)]
    finally:
        helper.close()
    assert len(set(names)) == 1 and names[0].startswith("scoi-preselect")
    assert names[0] != threading.current_thread().name


def test_no_thread_before_the_first_submit_and_none_left_after_close() -> None:
    def helper_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("scoi-preselect")]

    before = len(helper_threads())
    helper = Helper()
    assert len(helper_threads()) == before
    assert helper.submit(sum, [1, 2, 3]).result() == 6
    assert len(helper_threads()) == before + 1
    helper.close()
    helper.close()  # closing twice (a selector closed again) is harmless
    assert len(helper_threads()) == before
    assert helper.submit(pow, 2, 5).result() == 32  # used again after close: a fresh thread
    helper.close()
