"""Quotas per brand and mode: how much one brand's key may ask of a server that every brand shares.

A test key's test clocks, each mode's schedules and webhook endpoints are counted, and a create past the most
(``KEEPING_TIME["QUOTAS"]``, ``KT_QUOTA_*``) is ``429 quota_exceeded`` naming the quota in ``param`` and the
message; so is a schedule that fires more often than the shortest period (1 minute unless set lower or higher),
and an advance that moves a test clock further than the furthest one call may (10 years): one dense clock
advanced far is a batch the size of everything it owes, and the workers share their turns with every brand.
The count and the create it allows are one step across processes: a transaction-scoped hold on the brand's
quota (PostgreSQL), so two creates at once never both take the last place.

Made by the runtime itself, not asked for (a Service's schedules of a subscription), is not counted here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from dateutil.relativedelta import relativedelta
from django.conf import settings

from .errors import KeepingTimeError
from .sql.requests import wait_for
from .timeutil import iso_z, parse_span

# Each quota's name (the error's param) and the setting that sets it.
SETTINGS = {"test_clocks": "KT_QUOTA_TEST_CLOCKS", "schedules": "KT_QUOTA_SCHEDULES",
            "webhook_endpoints": "KT_QUOTA_WEBHOOK_ENDPOINTS", "schedule_period": "KT_QUOTA_SCHEDULE_PERIOD",
            "advance": "KT_QUOTA_ADVANCE"}
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # a span in seconds is the same from any instant; a month's is not, nor asked
_GAPS = 1000  # a cron's fires read to find its shortest gap (a day of a per-minute cron and more)


class QuotaExceeded(KeepingTimeError):
    code = "quota_exceeded"
    status = 429

    def __init__(self, quota: str, message: str):
        super().__init__(f"{quota}: {message} ({SETTINGS[quota]} sets it)")
        self.param = quota


def _limit(quota: str) -> Any:
    return (settings.KEEPING_TIME.get("QUOTAS") or {}).get(quota)


def _span(quota: str) -> relativedelta | None:
    text = _limit(quota)
    return parse_span(text) if text else None  # "1m", "10y": as tick reads a span (the settings checked it)


def count_within(*, brand_id: object, livemode: bool, quota: str, what: str, count: Callable[[], int]) -> None:
    """Refuse a create that would put ``count()`` past the quota. Call it inside the create's transaction: the
    hold it takes lasts to its end, so the count and the row the create writes are one step."""
    most = _limit(quota)
    if not most:
        return  # 0 or unset: no quota
    wait_for(f"quota|{brand_id}|{int(livemode)}|{quota}")
    have = count()
    if have >= most:
        mode = "live" if livemode else "test"
        raise QuotaExceeded(quota, f"this brand's {mode} mode has {have} {what}, the most it may have is {most}; "
                                   "remove one first")


def shortest_gap(after: Callable[[datetime], datetime | None], start: datetime) -> timedelta | None:
    """The shortest time between two of a spec's next fires from ``start``, or None if it fires fewer than twice."""
    gaps: list[timedelta] = []
    t = after(start)
    for _ in range(_GAPS):
        if t is None:
            break
        nxt = after(t)
        if nxt is None:
            break
        gaps.append(nxt - t)
        t = nxt
    return min(gaps) if gaps else None


def period_within(every: timedelta | None) -> None:
    """Refuse a schedule whose fires come closer together than the shortest period."""
    span = _span("schedule_period")
    if every is None or span is None:
        return
    shortest = (_EPOCH + span) - _EPOCH
    if every >= shortest:
        return
    raise QuotaExceeded("schedule_period", f"this schedule fires every {_words(every)}, more often than the "
                                           f"shortest period a schedule may have, {_words(shortest)}")


def advance_within(frozen_time: datetime, to: datetime) -> None:
    """Refuse an advance that moves a test clock further than one call may."""
    furthest = _span("advance")
    if furthest is None:
        return
    try:
        most = frozen_time + furthest
    except (OverflowError, ValueError):
        return  # past 9999: the advance's own range check says so
    if to > most:
        raise QuotaExceeded("advance", f"an advance moves a test clock at most {_span_words(furthest)} a call "
                                       f"(from {iso_z(frozen_time)} to {iso_z(most)} at the furthest, not "
                                       f"{iso_z(to)}); advance in steps, each after the last is ready")


def _words(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def _span_words(span: relativedelta) -> str:
    parts = [(span.years, "year"), (span.months, "month"), (span.days, "day"), (span.hours, "hour")]
    said = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n]
    return " ".join(said) or "0 days"
