"""A subject's business calendar as the tick reads it: the calendar with its closed days, read once a batch.

A calendar (its zone, weekends, closing minute, holidays and the brand's own closed days) decides where every
date of a subject falls. A batch reads each calendar's closed days once (a closed day added since is a write,
which drops the cache), and an advance carries its clock items from batch to batch only while the brand's
calendars stay as they were (``calendars_token``).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from timers import batch as batches
from timers.models import TestClock

from .civil import BusinessCalendar
from .models import Calendar, ClosedDay, Subject

# The civil calendars made so far, by everything that decides one (a changed calendar is a new entry).
_calendars: dict[tuple[Any, ...], BusinessCalendar] = {}


def _closed_days(calendar_id: str) -> tuple[tuple[date, str], ...]:  # (date, why), by date
    b = batches.current()
    if b is None:
        return tuple(sorted(ClosedDay.objects.filter(calendar_id=calendar_id).values_list("date", "why")))
    # Once a batch for each calendar (a closed day added since is a write, which drops the cache).
    cache = b.cache("calendars.closed", tables=("calendars_closedday",))
    found = cache.get(calendar_id)
    if found is None:
        with b.quiet():
            found = cache[calendar_id] = tuple(sorted(
                ClosedDay.objects.filter(calendar_id=calendar_id).values_list("date", "why")))
    return found


def calendars_token(domain: str) -> tuple[Any, ...]:
    """The calendars of the brand whose test clock ``domain`` is, as they are now: an advance keeps its clock
    items (with their calendars) from batch to batch only while this holds (timers.batch.on_carry_check). A
    brand's calendar is not the clock's object, so the clock's refusal of outside writes does not cover it."""
    brand = TestClock.objects.filter(pk=domain).values("brand_id")
    return tuple(Calendar.objects.filter(brand_id__in=brand).order_by("id").values_list(
        "id", "zone", "weekends", "closes", "holiday_country", "holiday_subdiv"))


def business_calendar(subject: Subject) -> BusinessCalendar:
    """The subject's calendar, cached by everything that decides it (an edit makes a new entry)."""
    cal = subject.calendar
    if cal is None:
        return subject.business_calendar()
    closed = _closed_days(cal.id)
    sig = (cal.id, cal.zone, tuple(cal.weekends), cal.closes, cal.holiday_country, cal.holiday_subdiv, closed)
    found = _calendars.get(sig)
    if found is None:
        if len(_calendars) > 256:
            _calendars.clear()
        found = _calendars[sig] = cal.civil()
    return found
