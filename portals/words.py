"""How the apps say a time to a person: a date and a time in their zone, named, and how far it is from now.

Instants are UTC in the database and the API; a page says them in its reader's zone (a member: the brand's
calendar; a customer: their own calendar), with the zone's abbreviation, and "in 2 days" / "3 h left" beside
them. Pure: no database here but ``member_zone``.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from timers.timeutil import day_text, local_text

UTC_ZONE = ZoneInfo("UTC")


def local(when: datetime | None, zone: ZoneInfo) -> str:
    """'Fri 22 Oct 2027, 07:30 PDT': the instant in ``zone``, its abbreviation named (as notices say it)."""
    return local_text(when, zone)


def day(d: date | None) -> str:
    """'Tue 18 Apr 2028': a civil date (a due date is its calendar's day, wherever the reader is)."""
    return day_text(d)


def _span(seconds: float) -> str:
    minutes = int(abs(seconds) // 60)
    if minutes < 60:
        n, unit = max(minutes, 1), "min"
        return f"{n} {unit}"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h"
    days = hours // 24
    if days < 61:
        return f"{days} days"
    if days < 730:
        return f"{round(days / 30.44)} months"
    return f"{round(days / 365.25)} years"


def until(when: datetime | None, now: datetime, *, left: bool = False) -> str:
    """How far ``when`` is from ``now``: 'in 2 days' (or '2 days left' with ``left``), '3 h ago'."""
    if when is None:
        return ""
    seconds = (when - now).total_seconds()
    if abs(seconds) < 60:
        return "now"
    if seconds > 0:
        return f"{_span(seconds)} left" if left else f"in {_span(seconds)}"
    return f"{_span(seconds)} ago"


def member_zone(brand_ids: list[str], *, user=None) -> ZoneInfo:
    """A member's zone: the one they chose (their profile, ``Membership.zone``), else their brand's calendar
    (its default; the first brand's when they are in several), else UTC."""
    from calendars.models import Calendar
    from timers.models import Membership

    chosen = (Membership.objects.filter(user=user).exclude(zone="").values_list("zone", flat=True).first()
              if user is not None else None)
    zone = chosen or (Calendar.objects.filter(brand_id__in=brand_ids, is_default=True).order_by("brand__name")
                      .values_list("zone", flat=True).first())
    try:
        return ZoneInfo(zone) if zone else UTC_ZONE
    except (KeyError, ValueError):
        return UTC_ZONE
