"""A date's business calendar as the tick reads it: the calendars with their closed days, read once a batch.

A calendar (its zone, weekends, closing minute, holidays and the brand's own closed days) decides where a date
falls. Two may decide one date: the calendar that binds it (``ClockItem.calendar``: the one its clock or its
Service names, else the brand's default, resolved when the clock opens and kept) says which closed days bind
it, and the subject's own gives the zone and the closing minute and adds its closed days (``item_calendar``).
A batch reads each calendar's closed days once (a closed day added since is a write, which drops the cache),
and an advance carries its clock items from batch to batch only while the brand's calendars stay as they were
(``calendars_token``).
"""

from __future__ import annotations

from datetime import date, time
from typing import Any

from django.db import IntegrityError, transaction

from timers import batch as batches
from timers.errors import KeepingTimeError
from timers.models import TestClock

from .civil import BusinessCalendar, bound, calendar_from
from .models import Calendar, ClockItem, ClosedDay, Subject
from .specs import CalendarRef, CalendarSpec

# The civil calendars made so far, by everything that decides one (a changed calendar is a new entry).
_calendars: dict[tuple[Any, ...], BusinessCalendar] = {}
_bound: dict[tuple[Any, ...], BusinessCalendar] = {}


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
    items (with their calendars: the subject's and the one that binds each date) from batch to batch only while
    this holds (timers.batch.on_carry_check). A brand's calendar is not the clock's object, so the clock's
    refusal of outside writes does not cover it."""
    brand = TestClock.objects.filter(pk=domain).values("brand_id")
    return tuple(Calendar.objects.filter(brand_id__in=brand).order_by("id").values_list(
        "id", "name", "zone", "weekends", "closes", "holiday_country", "holiday_subdiv", "is_default", "dst_skipped",
        "dst_repeated"))


def _signature(cal: Calendar) -> tuple[Any, ...]:
    return (cal.id, cal.name, cal.zone, tuple(cal.weekends), cal.closes, cal.holiday_country, cal.holiday_subdiv,
            cal.dst_skipped, cal.dst_repeated, _closed_days(cal.id))


def _civil(cal: Calendar, sig: tuple[Any, ...]) -> BusinessCalendar:
    found = _calendars.get(sig)
    if found is None:
        if len(_calendars) > 256:
            _calendars.clear()
            _bound.clear()
        found = _calendars[sig] = calendar_from(
            zone=cal.zone, weekends=cal.weekends, closes=cal.closes, holiday_country=cal.holiday_country,
            holiday_subdiv=cal.holiday_subdiv, closed_days=dict(sig[-1]), name=cal.name,
            dst_skipped=cal.dst_skipped, dst_repeated=cal.dst_repeated)
    return found


def civil_calendar(cal: Calendar) -> BusinessCalendar:
    """A calendar row as the roll reads it, cached by everything that decides it (an edit makes a new entry)."""
    return _civil(cal, _signature(cal))


def schedule_calendar(brand_id: str, calendar_id: str) -> BusinessCalendar | None:
    """A schedule's calendar (timers.schedule_bounds.register_calendars): the brand's, by id, or None."""
    cal = Calendar.objects.filter(brand_id=brand_id, pk=calendar_id).first()
    return None if cal is None else civil_calendar(cal)


def business_calendar(subject: Subject) -> BusinessCalendar:
    """The subject's calendar: its zone and closing minute judge each of its dues."""
    cal = subject.calendar
    if cal is None:
        return subject.business_calendar()
    return civil_calendar(cal)


def item_calendar(item: ClockItem) -> BusinessCalendar:
    """The calendar a clock item's date falls on: the subject's zone and closing minute, with the closed days of
    the calendar that binds the date and the subject's own (which adds, never removes). Read from what the
    item carries: in a batch its calendars come with it (clock_reads.load_items), so this asks nothing."""
    subject = item.clock.subject
    binding_id = item.calendar_id
    if binding_id is None or binding_id == subject.calendar_id:
        return business_calendar(subject)
    binding = item.calendar
    assert binding is not None  # a foreign key with an id has its row (PROTECT keeps it)
    own = subject.calendar
    if own is None:
        return bound(subject.business_calendar(), civil_calendar(binding))
    own_sig, binding_sig = _signature(own), _signature(binding)
    key = (own_sig, binding_sig)
    found = _bound.get(key)
    if found is None:
        found = _bound[key] = bound(_civil(own, own_sig), _civil(binding, binding_sig))
    return found


# -- which calendar binds a date: resolved when its clock opens -------------------------------------------------
def _named(brand_id: str, name: str | None) -> Calendar | None:
    """The brand's calendar of ``name`` (None: its default), once a batch for each."""
    def look() -> Calendar | None:
        rows = Calendar.objects.filter(brand_id=brand_id)
        return (rows.filter(is_default=True) if name is None else rows.filter(name=name)).first()

    b = batches.current()
    if b is None:
        return look()
    cache = b.cache("calendars.named", tables=("calendars_calendar",))
    key = (brand_id, name)
    if key not in cache:
        with b.quiet():
            cache[key] = look()
    found: Calendar | None = cache[key]
    return found


def calendar_of_spec(*, brand_id: str, spec: CalendarSpec) -> Calendar:
    """The brand's calendar a Service declares, made from the declaration the first time it is needed (then it
    is the brand's: an edit to its closed days is the brand's, never undone by the declaration)."""
    found = _named(brand_id, spec.name)
    if found is not None:
        return found
    country, subdiv = spec.country_and_subdivision
    try:
        with transaction.atomic():
            cal = Calendar.objects.create(brand_id=brand_id, name=spec.name, zone=spec.zone,
                                          weekends=sorted(spec.weekends), closes=time.fromisoformat(spec.closes),
                                          holiday_country=country, holiday_subdiv=subdiv)
            ClosedDay.objects.bulk_create([ClosedDay(calendar=cal, date=date.fromisoformat(d), why=why)
                                           for d, why in spec.closed])
            return cal
    except IntegrityError:  # made meanwhile by another request
        return Calendar.objects.get(brand_id=brand_id, name=spec.name)


def binding_calendar(*, brand_id: str, ref: CalendarRef | None) -> Calendar | None:
    """The calendar whose closed days bind a date, as its clock declared it: a CalendarSpec (made the first time),
    a calendar the brand names so, or None: the brand's default (None if it has none: the subject's own)."""
    if isinstance(ref, CalendarSpec):
        return calendar_of_spec(brand_id=brand_id, spec=ref)
    found = _named(brand_id, ref)
    if found is None and ref is not None:
        err = KeepingTimeError(f"calendar: the Service binds these dates to the calendar {ref!r}, which the brand "
                               f"has not made (POST /calendars {{\"name\": {ref!r}, …}})", code="calendar_missing",
                               status=409)
        err.param = "calendar"
        raise err
    return found
