"""The schedule tick logic (scoi.core.cron.due_tick) with an injected clock: no database, no sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from scoi.core.cron import CronError, check_cron, due_tick, latest_tick, next_tick

UTC = timezone.utc
NIGHTLY = "15 2 * * *"
CREATED = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)


def at(day: int, hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def test_a_new_schedule_waits_for_its_first_tick_after_creation():
    # Added at 18:00: the 02:15 tick of the same day is before it, so nothing is due.
    assert due_tick(NIGHTLY, None, at(20, 23, 59), created_at=CREATED) is None
    assert due_tick(NIGHTLY, None, at(21, 2, 14, 59), created_at=CREATED) is None
    assert due_tick(NIGHTLY, None, at(21, 2, 15), created_at=CREATED) == at(21, 2, 15)
    assert due_tick(NIGHTLY, None, at(21, 2, 15, 30), created_at=CREATED) == at(21, 2, 15)


def test_a_tick_that_ran_is_not_due_again_until_the_next_one():
    last = at(21, 2, 15)
    for now in (at(21, 2, 15, 1), at(21, 12, 0), at(22, 2, 14, 59)):
        assert due_tick(NIGHTLY, last, now, created_at=CREATED) is None
    assert due_tick(NIGHTLY, last, at(22, 2, 15), created_at=CREATED) == at(22, 2, 15)


def test_missed_ticks_after_downtime_collapse_into_the_latest():
    # Down from the 21st to the 27th at noon: six nightly ticks missed, one run, the latest.
    last = at(21, 2, 15)
    now = at(27, 12, 0)
    assert due_tick(NIGHTLY, last, now, created_at=CREATED) == at(27, 2, 15)
    # Once it ran, nothing of the missed ones is due.
    assert due_tick(NIGHTLY, at(27, 2, 15), now, created_at=CREATED) is None
    # Every five minutes, four hours down: one run.
    assert due_tick("*/5 * * * *", at(21, 8, 0), at(21, 12, 7), created_at=CREATED) == at(21, 12, 5)


def test_a_manual_run_after_the_tick_counts_as_that_tick():
    # `scoi schedule run` at 10:00 records tick 10:00: the 02:15 tick of that day is done.
    assert due_tick(NIGHTLY, at(21, 10, 0), at(21, 11, 0), created_at=CREATED) is None
    assert due_tick(NIGHTLY, at(21, 10, 0), at(22, 2, 16), created_at=CREATED) == at(22, 2, 15)


def test_time_zone_of_the_cron_fields():
    # 02:15 in Paris is 01:15 UTC in winter.
    assert latest_tick(NIGHTLY, at(21, 1, 20), "Europe/Paris") == at(21, 1, 15)
    assert next_tick(NIGHTLY, at(21, 1, 20), "Europe/Paris") == at(22, 1, 15)
    assert due_tick(NIGHTLY, None, at(21, 1, 16), created_at=CREATED, tz="Europe/Paris") == at(21, 1, 15)


def test_latest_and_next_tick_bracket_now():
    now = at(23, 18, 37, 12)
    assert latest_tick("*/10 * * * *", now) == at(23, 18, 30)
    assert next_tick("*/10 * * * *", now) == at(23, 18, 40)
    assert latest_tick("*/10 * * * *", at(23, 18, 40)) == at(23, 18, 40)  # a tick is at or before itself


@pytest.mark.parametrize("expr", ["61 2 * * *", "15 2 * *", "every night", ""])
def test_bad_cron_expressions_are_clear_errors(expr):
    with pytest.raises(CronError, match="bad cron expression .*expected five fields"):
        check_cron(expr)


@pytest.mark.parametrize("expr", ["* * * * * *", "0 15 2 * * *", "15 2 * * * 2026"])
def test_six_or_seven_fields_are_refused(expr):
    """Reliability case 41: cronsim reads a sixth field as seconds ("every second"); a
    schedule has exactly five fields."""
    n = len(expr.split())
    with pytest.raises(CronError, match=rf"it has {n} fields; expected five fields .*no seconds"):
        check_cron(expr)


def test_bad_time_zone_and_naive_clock():
    with pytest.raises(CronError, match="unknown time zone 'Mars/Olympus'"):
        check_cron(NIGHTLY, "Mars/Olympus")
    with pytest.raises(ValueError, match="timezone-aware"):
        due_tick(NIGHTLY, None, datetime(2026, 11, 21, 3, 0), created_at=CREATED)


def test_check_cron_reads_the_expression():
    assert check_cron(NIGHTLY) == "At 02:15 every day"


def test_due_tick_is_never_in_the_future_nor_before_the_anchor():
    now = at(23, 18, 37)
    last = at(23, 17, 0)
    for minutes in range(0, 24 * 60, 37):
        t = now + timedelta(minutes=minutes)
        tick = due_tick("0 * * * *", last, t, created_at=CREATED)
        assert tick is None or last < tick <= t
