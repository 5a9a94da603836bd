"""A brand's calendars, made and changed over the API, the console and the CLI: keyword-only service functions.

A brand has a default calendar (one: a constraint); a subject names its own or takes its Service's
(``services.subjects``), else the brand's default; a brand with none is refused at its first subject
(``calendar_required``), never silently UTC with no weekends. A date may fall on two: the calendar its clock
or Service binds it to (``ClockItem.calendar``) says which closed days bind it, and the subject's adds its own
and gives the zone and the closing minute (``closed_days.item_calendar``).

What a change may touch: the closed days (weekends, the holiday country and subdivision, the brand's own days)
re-roll every open date on the calendar: the dates of the subjects on it and the dates bound to it
(``calendar.closed_days``, on the closed re-arm list); the zone and the closing minute are not on that list,
so they change only while no open date of a subject on it closes by them (``409 calendar_in_use``; a date
bound to a calendar closes in its subject's zone): make another calendar for the subjects that need it.
Closing or opening one day and a postponement (a disaster-relief notice, which moves hard dates too) move the
calendar's open dates the same way, each through ``clock_move`` on its clock's own domain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import holidays as holidays_lib
from django.db import IntegrityError, transaction
from django.db.models import Q

from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Brand
from timers.rearm import Rearm
from timers.schedule_changes import schedules_reroll
from timers.timeutil import zone_names

from .clocks import clock_move
from .closed_days import item_calendar
from .models import Calendar, ClockItem, ClosedDay

_CLOSES = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
# A calendar's closed days are civil dates the runtime can roll over: the same bounds as a date input.
DAY_MIN, DAY_MAX = date(1900, 1, 1), date(9000, 12, 31)
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _bad(message: str, *, param: str, code: str = "invalid_calendar") -> KeepingTimeError:
    err = KeepingTimeError(f"{param}: {message}", code=code)
    err.param = param
    return err


def check_zone(zone: Any, *, param: str = "zone") -> str:
    if not isinstance(zone, str) or zone not in zone_names():  # exactly an IANA name: not "localtime", no spaces
        raise _bad(f"an IANA zone such as America/New_York, not {zone!r}", param=param)
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise _bad(f"an IANA zone such as America/New_York, not {zone!r}", param=param) from None
    return zone


def check_weekends(weekends: Any, *, param: str = "weekends") -> list[int]:
    """Weekdays by number (0 Monday … 6 Sunday) or by name ("saturday")."""
    if not isinstance(weekends, list) or len(weekends) > 6:
        raise _bad("a list of up to six weekdays, 0 Monday … 6 Sunday (or their names)", param=param)
    days = []
    for i, day in enumerate(weekends):
        if isinstance(day, str) and day.lower() in WEEKDAY_NAMES:
            day = WEEKDAY_NAMES.index(day.lower())
        if isinstance(day, bool) or not isinstance(day, int) or not 0 <= day <= 6:
            raise _bad(f"item {i}: a weekday 0 (Monday) to 6 (Sunday) or its name, not {day!r}", param=param)
        days.append(day)
    return sorted(set(days))  # a day listed twice is the same weekend


def check_closes(closes: Any, *, param: str = "closes") -> time:
    if isinstance(closes, time):
        return closes
    m = _CLOSES.match(closes) if isinstance(closes, str) else None
    if not m:
        raise _bad(f"the local minute a due date closes, HH:MM (00:00 to 23:59), not {closes!r}", param=param)
    return time(int(m[1]), int(m[2]))


@cache
def supported_holidays() -> dict[str, list[str]]:
    """The countries the holidays package knows by their ISO 3166 alpha-2 code, each with the subdivisions a
    calendar can hold (Calendar.holiday_subdiv: up to 16 characters)."""
    return {country: [s for s in subdivisions if len(s) <= 16]
            for country, subdivisions in holidays_lib.list_supported_countries(include_aliases=False).items()}


def check_holidays(country: Any, subdivision: Any) -> tuple[str, str]:
    """A country the holidays package knows (ISO 3166 alpha-2) and, optionally, one of its subdivisions."""
    country = "" if country is None else country
    subdivision = "" if subdivision is None else subdivision
    if not isinstance(country, str) or not isinstance(subdivision, str):
        raise _bad("a country code such as US, or US-DC", param="holidays")
    supported = supported_holidays()
    if country and country not in supported:
        raise _bad(f"a country the holidays package knows (ISO 3166 alpha-2, e.g. US, GB, DE), not {country!r}",
                   param="holidays")
    if subdivision:
        if not country:
            raise _bad("a subdivision needs its country", param="holidays")
        subdivisions = supported[country]
        if subdivision not in subdivisions:
            shown = ", ".join(subdivisions[:12]) + (" …" if len(subdivisions) > 12 else "")
            raise _bad(f"{country} has no subdivision {subdivision!r}; it has {shown or 'none'}",
                       param="holidays")
    return country, subdivision


def check_closed_days(days: Any, *, param: str = "closed_days") -> list[tuple[date, str]]:
    """The brand's own closed days: [{"date": "2028-01-17", "why": "…"}]."""
    if not isinstance(days, list) or len(days) > 1000:
        raise _bad("a list of up to 1000 {date, why}", param=param)
    seen: dict[date, str] = {}
    for i, day in enumerate(days):
        where = f"{param}[{i}]"
        if not isinstance(day, Mapping) or set(day) - {"date", "why"} or "date" not in day:
            raise _bad('an object {"date": "YYYY-MM-DD", "why": "…"}', param=where)
        try:
            d = date.fromisoformat(day["date"]) if isinstance(day["date"], str) and len(day["date"]) == 10 else None
        except ValueError:
            d = None
        if d is None or not DAY_MIN <= d <= DAY_MAX:
            raise _bad(f"date: a date YYYY-MM-DD from {DAY_MIN} to {DAY_MAX}, not {day['date']!r}", param=where)
        why = day.get("why", "closed")
        if not isinstance(why, str) or len(why) > 200 or "\x00" in why:
            raise _bad("why: why it is closed, at most 200 characters", param=where)
        seen[d] = why.strip() or "closed"  # a date listed twice: the last says why
    return sorted(seen.items())


DST_SKIPPED = ("next_minute", "skip")
DST_REPEATED = ("first", "second")


def check_dst(value: Any, *, param: str) -> str:
    allowed = DST_SKIPPED if param == "dst_skipped" else DST_REPEATED
    if not isinstance(value, str) or value not in allowed:
        raise _bad(f"one of {', '.join(allowed)}, not {str(value)[:40]!r}", param=param, code="invalid_dst_rule")
    return value


def check_name(name: Any, *, param: str = "name") -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or "\x00" in name:
        raise _bad("a name of 1 to 200 characters", param=param, code="invalid_request")
    return name.strip()


def _open_dates(calendar: Calendar) -> int:
    return ClockItem.objects.filter(clock__subject__calendar=calendar,
                                    status__in=[ClockItem.Status.OPEN, ClockItem.Status.DUE]).count()


def _make_default(calendar: Calendar) -> None:
    # One default per brand (calendar_one_default): the old one stops being it first, in this transaction.
    Calendar.objects.filter(brand_id=calendar.brand_id, is_default=True).exclude(pk=calendar.pk).update(
        is_default=False)
    calendar.is_default = True


@transaction.atomic
def calendar_create(*, brand: Brand, name: str, zone: str, weekends: list | None = None, closes: Any = "23:59",
                    holiday_country: str = "", holiday_subdivision: str = "", closed_days: list | None = None,
                    default: bool = False, metadata: dict | None = None, dst_skipped: str = "next_minute",
                    dst_repeated: str = "first", now: datetime) -> Calendar:
    """A calendar of the brand's. The brand's first calendar is its default unless another is named later."""
    calendar = Calendar(
        brand=brand, name=check_name(name), zone=check_zone(zone),
        weekends=check_weekends([5, 6] if weekends is None else weekends), closes=check_closes(closes),
        metadata=metadata or {}, created_at=now, dst_skipped=check_dst(dst_skipped, param="dst_skipped"),
        dst_repeated=check_dst(dst_repeated, param="dst_repeated"),
    )
    calendar.holiday_country, calendar.holiday_subdiv = check_holidays(holiday_country, holiday_subdivision)
    days = check_closed_days(closed_days or [])
    if default or not Calendar.objects.filter(brand=brand).exists():
        _make_default(calendar)
    try:
        with transaction.atomic():
            calendar.save(force_insert=True)
    except IntegrityError:
        taken = Calendar.objects.filter(brand=brand, name=calendar.name).values_list("pk", flat=True).first()
        raise KeepingTimeError(f"the brand has a calendar named {calendar.name!r} already ({taken})",
                               code="calendar_exists", status=409) from None
    ClosedDay.objects.bulk_create([ClosedDay(calendar=calendar, date=d, why=why) for d, why in days])
    return calendar


@transaction.atomic
def calendar_update(*, calendar: Calendar, changes: Mapping[str, Any]) -> tuple[Calendar, int]:
    """Change what ``changes`` names (name, zone, weekends, closes, dst_skipped, dst_repeated, holidays,
    closed_days, default, metadata);
    returns the calendar and how many open dates rolled again. ``closed_days`` replaces the brand's own days."""
    calendar = Calendar.objects.select_for_update().get(pk=calendar.pk)
    rolls = False
    if "name" in changes:
        calendar.name = check_name(changes["name"])
    if "zone" in changes or "closes" in changes:
        zone = check_zone(changes["zone"]) if "zone" in changes else calendar.zone
        closes = check_closes(changes["closes"]) if "closes" in changes else calendar.closes
        if (zone, closes) != (calendar.zone, calendar.closes):
            n = _open_dates(calendar)
            if n:
                raise KeepingTimeError(
                    f"{n} open date{'s' if n != 1 else ''} close in {calendar.zone} at {calendar.closes:%H:%M} on "
                    f"this calendar; its zone and closing minute change only while none does (make another "
                    "calendar for new subjects)", code="calendar_in_use", status=409)
        calendar.zone, calendar.closes = zone, closes
    if "dst_skipped" in changes or "dst_repeated" in changes:
        # Its time rules decide the instants of its open dates and their notices, which are not re-armed on a
        # change (not on the closed re-arm list): they change only while no open date is on it, as the zone does.
        skipped = check_dst(changes.get("dst_skipped", calendar.dst_skipped), param="dst_skipped")
        repeated = check_dst(changes.get("dst_repeated", calendar.dst_repeated), param="dst_repeated")
        if (skipped, repeated) != (calendar.dst_skipped, calendar.dst_repeated):
            n = _open_dates(calendar)
            if n:
                raise KeepingTimeError(
                    f"{n} open date{'s' if n != 1 else ''} fall on this calendar; its time rules (dst_skipped, "
                    "dst_repeated) change only while none does (make another calendar for new subjects)",
                    code="calendar_in_use", status=409)
        calendar.dst_skipped, calendar.dst_repeated = skipped, repeated
    if "weekends" in changes:
        weekends = check_weekends(changes["weekends"])
        rolls |= weekends != sorted(calendar.weekends)
        calendar.weekends = weekends
    if "holiday_country" in changes or "holiday_subdivision" in changes:
        country, subdiv = check_holidays(changes.get("holiday_country", calendar.holiday_country),
                                         changes.get("holiday_subdivision", calendar.holiday_subdiv))
        rolls |= (country, subdiv) != (calendar.holiday_country, calendar.holiday_subdiv)
        calendar.holiday_country, calendar.holiday_subdiv = country, subdiv
    if "metadata" in changes:
        calendar.metadata = merge_metadata(calendar.metadata, changes["metadata"])
    if changes.get("default") is True:
        _make_default(calendar)
    elif changes.get("default") is False and calendar.is_default:
        raise KeepingTimeError("the brand's default calendar stops being it only when another is made the default",
                               code="calendar_default_required", status=409)
    try:
        with transaction.atomic():
            calendar.save()
    except IntegrityError:
        raise KeepingTimeError(f"the brand has a calendar named {calendar.name!r} already", code="calendar_exists",
                               status=409) from None
    moved = _reroll(calendar, "weekends or holidays changed") if rolls else 0
    if "closed_days" in changes:
        wanted = dict(check_closed_days(changes["closed_days"]))
        have = dict(ClosedDay.objects.filter(calendar=calendar).values_list("date", "why"))
        for day in sorted(set(have) - set(wanted)):
            moved += calendar_open_day(calendar=calendar, day=day)
        for day, why in sorted(wanted.items()):
            if have.get(day) != why:
                moved += calendar_close_day(calendar=calendar, day=day, why=why)
    return calendar, moved


def merge_metadata(current: Mapping[str, str], update: Any, *, param: str = "metadata") -> dict[str, str]:
    """Stripe's rules: keys are merged in; a key set to "" is removed; at most 50 keys, values of up to 500
    characters (a key is any text but NUL: timers.api.inputs.MetadataField says why)."""
    merged = dict(current or {})
    for key, value in check_metadata(update, param=param, allow_empty=True).items():
        if value == "":
            merged.pop(key, None)
        else:
            merged[key] = value
    if len(merged) > 50:
        raise _bad("at most 50 keys", param=param, code="invalid_request")
    return merged


def check_metadata(value: Any, *, param: str = "metadata", allow_empty: bool = False) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > 50:
        raise _bad("an object of at most 50 keys with text values", param=param, code="invalid_request")
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or "\x00" in k:
            raise _bad(f"a key is text with no NUL, not {k!r}", param=param, code="invalid_request")
        if isinstance(v, bool) or not isinstance(v, str | int | float) or len(str(v)) > 500 or "\x00" in str(v):
            raise _bad(f"{k}: a value is text of at most 500 characters", param=f"{param}.{k}",
                       code="invalid_request")
        if v == "" and not allow_empty:
            continue
        out[k] = str(v)
    return out


def brand_default_calendar(brand_id: str) -> Calendar | None:
    return Calendar.objects.filter(brand_id=brand_id, is_default=True).first()


def closed_days_json(calendar: Calendar, years: Iterable[int]) -> list[dict]:
    """Every closed day of ``years`` besides the weekends: the holidays' and the brand's own, with why."""
    civil = calendar.civil()
    return [{"date": d.isoformat(), "why": why} for year in years for d, why in sorted(civil.closed_in(year).items())]


# -- closing or opening a day and a postponement move the calendar's open dates --------------------------
def _open_items(calendar: Calendar) -> list[ClockItem]:
    """The open dates on the calendar: its subjects' and those it binds (two reads, each by an index of its
    own, where one OR across the join would read every item), in date order."""
    rows = ClockItem.objects.filter(status=ClockItem.Status.OPEN).select_related("clock__subject__calendar",
                                                                                   "calendar")
    found = {i.pk: i for q in (Q(clock__subject__calendar=calendar), Q(calendar=calendar)) for i in rows.filter(q)}
    return sorted(found.values(), key=lambda i: (i.due_at, i.item, i.pk))


def _reroll(calendar: Calendar, why: str) -> int:
    """Every open date on the calendar, or bound to it, is rolled again: calendars are never pinned. The
    schedules on it roll their next fire again too (timers.schedules.schedules_reroll)."""
    schedules_reroll(brand_id=calendar.brand_id, calendar_id=calendar.id, why=why)
    moved = 0
    armers: dict[str, DirectArmer] = {}
    for item in _open_items(calendar):
        clock = item.clock
        cal = item_calendar(item)
        rolled = cal.roll(item.civil)
        if rolled.date == item.due_date:
            continue
        armer = armers.get(clock.domain) or armers.setdefault(
            clock.domain, DirectArmer(brand=clock.brand_id, domain=clock.domain))
        # The civil date stays what the due function said; only the roll changed.
        clock_move(armer=armer, item=item, civil=item.civil, by="calendar", cause={"calendar": why},
                   rearm=Rearm.CLOSED_DAYS)
        moved += 1
    return moved


@transaction.atomic
def calendar_close_day(*, calendar: Calendar, day: date, why: str) -> int:
    try:
        with transaction.atomic():
            ClosedDay.objects.create(calendar=calendar, date=day, why=why)
    except IntegrityError:
        ClosedDay.objects.filter(calendar=calendar, date=day).update(why=why)
    return _reroll(calendar, f"closed {day.isoformat()}: {why}")


@transaction.atomic
def calendar_open_day(*, calendar: Calendar, day: date) -> int:
    ClosedDay.objects.filter(calendar=calendar, date=day).delete()
    return _reroll(calendar, f"opened {day.isoformat()}")


POSTPONE_LAST = date(9000, 12, 31)  # the calendar's range: a date and its year of rolling stay far from 9999


@transaction.atomic
def calendar_postpone(*, calendar: Calendar, items: list[ClockItem], to: date, notice: str) -> int:
    """A postponement (a disaster-relief notice): moves each clock it names, hard dates included. It moves a
    date later, within the calendar's range: anything else is ``400 invalid_postpone`` and moves nothing."""
    if to > POSTPONE_LAST:
        raise KeepingTimeError(f"a postponement moves a date to {POSTPONE_LAST} at the latest, not {to}",
                               code="invalid_postpone")
    earlier = [i for i in items if i.status != ClockItem.Status.SATISFIED and to <= i.due_date]
    if earlier:
        raise KeepingTimeError(f"a postponement moves a date later: {earlier[0].owner_key} is due "
                               f"{earlier[0].due_date}, not after {to}", code="invalid_postpone")
    moved = 0
    for item in items:
        if calendar.id not in (item.clock.subject.calendar_id, item.calendar_id) \
                or item.status == ClockItem.Status.SATISFIED:
            continue
        armer = DirectArmer(brand=item.clock.brand_id, domain=item.clock.domain)
        clock_move(armer=armer, item=item, civil=to, by="calendar", cause={"notice": notice},
                   rearm=Rearm.CALENDAR_POSTPONE)
        moved += 1
    return moved
