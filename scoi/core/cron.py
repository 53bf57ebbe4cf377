"""When a schedule is due: cron expression, last run tick, now -> the tick to run, or None.

Pure (no clock, no database): the worker passes ``now``, so tests inject any instant
instead of sleeping. Cron expressions are parsed by cronsim (the parser healthchecks.io
maintains), never by hand.

Missed ticks collapse: after a downtime only the *latest* tick not run yet is due, so a
worker that was down for a week runs a nightly schedule once, not seven times.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError


class CronError(ValueError):
    """A cron expression or time zone that cannot be used."""


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (ticks of ``15 2 * * *`` are 02:15 there)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown time zone {name!r}; expected an IANA name such as UTC or Europe/Paris") from None


def check_cron(expr: str, tz: str = "UTC") -> str:
    """``expr`` if it has exactly five fields and cronsim accepts it (e.g. ``15 2 * * *``),
    else a CronError; returns cronsim's English reading of it ("At 02:15 every day").
    cronsim also reads a sixth, seconds field, which a schedule run by workers between
    batches cannot keep: refused, never taken as "every second"."""
    fields = expr.split()
    if len(fields) != 5:
        raise CronError(f"bad cron expression {expr!r}: it has {len(fields)} field{'s' if len(fields) != 1 else ''}; "
                        "expected five fields (minute hour day-of-month month day-of-week, no seconds), "
                        "e.g. '15 2 * * *'")
    try:
        sim = CronSim(expr, datetime.now(zone(tz)))
    except CronSimError as e:
        raise CronError(f"bad cron expression {expr!r}: {e}; expected five fields "
                        "(minute hour day-of-month month day-of-week), e.g. '15 2 * * *'") from None
    try:
        return sim.explain()
    except Exception:  # noqa: BLE001 - the reading is a nicety; the expression is valid
        return expr


def latest_tick(expr: str, now: datetime, tz: str = "UTC") -> datetime:
    """The last tick of ``expr`` at or before ``now`` (UTC)."""
    local = now.astimezone(zone(tz)).replace(microsecond=0) + timedelta(seconds=1)
    return next(CronSim(expr, local, reverse=True)).astimezone(timezone.utc)


def next_tick(expr: str, after: datetime, tz: str = "UTC") -> datetime:
    """The first tick of ``expr`` strictly after ``after`` (UTC)."""
    return next(CronSim(expr, after.astimezone(zone(tz)))).astimezone(timezone.utc)


def due_tick(expr: str, last_tick: datetime | None, now: datetime, *, created_at: datetime,
             tz: str = "UTC") -> datetime | None:
    """The tick to run now, or None.

    Due: the latest tick at or before ``now`` that is later than the last tick run (or, for
    a schedule never run, later than its creation: a schedule added at 18:00 with
    ``15 2 * * *`` first runs at 02:15). Earlier missed ticks are not returned, ever."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    tick = latest_tick(expr, now, tz)
    anchor = last_tick if last_tick is not None else created_at
    return tick if tick > anchor else None


__all__ = ["CronError", "check_cron", "due_tick", "latest_tick", "next_tick", "zone"]
