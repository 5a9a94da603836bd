"""Business days (issue 40): a schedule on a calendar skips its closed days or rolls a fire to the next (or the
previous) open one. The expected instants are computed here from zoneinfo and the holidays package, never
read from our output."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import holidays
import pytest

from calendars.brand_calendars import calendar_close_day, calendar_create
from tests.conftest import at
from tests.timers.test_schedules import clock_at
from tests.timers.test_schedules import fixtures_loaded as fixtures_loaded  # noqa: F401 - a fixture, autouse
from tests.timers.test_schedules import target as target  # noqa: F401 - a fixture
from timers.advance import advance
from timers.errors import KeepingTimeError
from timers.models import Event, Schedule, ScheduleRun, Timer
from timers.schedules import schedule_create, schedule_json

NY = ZoneInfo("America/New_York")
US = holidays.country_holidays("US", years=range(2026, 2030))


def nine_ny(d: date) -> datetime:
    return datetime.combine(d, time(9), NY).astimezone(UTC)


def z(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def is_business_day(d: date) -> bool:
    return d.weekday() < 5 and d not in US


def events(sch: Schedule, type_: str) -> list[dict]:
    return list(Event.objects.filter(subject=sch.id, type=type_).order_by("seq").values_list("data", flat=True))


@pytest.fixture
def ny_calendar(brand):
    return calendar_create(brand=brand, name="New York office", zone="America/New_York", weekends=[5, 6],
                           holiday_country="US", now=at("2026-11-01T00:00Z"))


def test_every_business_day_at_nine_across_thanksgiving_and_christmas_2027(brand, ny_calendar, target):  # noqa: F811
    tc = clock_at(brand, "2027-11-20T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 * * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=ny_calendar.id, closed_days="skip")
    days = [date(2027, 11, 20) + timedelta(days=n) for n in range(42)]  # to 31 December
    want = [nine_ny(d) for d in days if is_business_day(d)]
    assert schedule_json(sch)["next_fire_times"] == [z(t) for t in want[:5]]
    advance(tc.id, at("2027-12-15T00:00Z"))
    advance(tc.id, at("2028-01-01T00:00Z"))
    runs = ScheduleRun.objects.filter(schedule=sch).order_by("intended_at")
    assert [r.intended_at for r in runs] == want
    assert date(2027, 11, 25) not in {r.intended_at.astimezone(NY).date() for r in runs}  # Thanksgiving
    assert date(2027, 12, 24) not in {r.intended_at.astimezone(NY).date() for r in runs}  # Christmas, observed
    skipped = {e["at"]: e["why"] for e in events(sch, "schedule.skipped")}
    assert skipped[z(nine_ny(date(2027, 11, 25)))].startswith("closed Thursday 25 November 2027: Thanksgiving Day")
    assert skipped[z(nine_ny(date(2027, 11, 27)))].startswith("closed Saturday 27 November 2027: a weekend")
    assert len(skipped) == len(days) - len(want)


def _first_business_day(year: int, month: int) -> date:
    d = date(year, month, 1)
    while not is_business_day(d):
        d += timedelta(days=1)
    return d


def test_the_first_business_day_of_each_month_2027_and_2028(brand, ny_calendar, target):  # noqa: F811
    tc = clock_at(brand, "2026-12-31T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 1 * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=ny_calendar.id, closed_days="next_open")
    months = [(y, m) for y in (2027, 2028) for m in range(1, 13)]
    want = [nine_ny(_first_business_day(y, m)) for y, m in months]
    assert schedule_json(sch)["next_fire_times"] == [z(t) for t in want[:5]]  # the rolled times
    for stop in ("2027-07-01T00:00Z", "2028-01-01T00:00Z", "2028-07-01T00:00Z", "2028-12-31T00:00Z"):
        advance(tc.id, at(stop))
    runs = list(ScheduleRun.objects.filter(schedule=sch).order_by("intended_at"))
    # Each Run keeps its intended time (the 1st, 09:00 New York) and started on the first business day.
    assert [r.intended_at for r in runs] == [nine_ny(date(y, m, 1)) for y, m in months]
    assert [r.started_at for r in runs] == want
    rolled = events(sch, "schedule.rolled")
    assert rolled[0]["at"] == z(nine_ny(date(2027, 1, 1))) and rolled[0]["to"] == z(nine_ny(date(2027, 1, 4)))
    assert rolled[0]["why"].startswith("Friday 1 January 2027: New Year's Day")
    assert len(rolled) == sum(1 for y, m in months if not is_business_day(date(y, m, 1)))


def test_a_closed_day_declared_mid_year_rolls_the_schedule_again(brand, ny_calendar, target):  # noqa: F811
    tc = clock_at(brand, "2027-06-10T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 1 * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=ny_calendar.id, closed_days="next_open")
    assert schedule_json(sch)["next_fire_times"][0] == z(nine_ny(date(2027, 7, 1)))  # a Thursday, open
    calendar_close_day(calendar=ny_calendar, day=date(2027, 7, 1), why="Office move")
    assert schedule_json(sch)["next_fire_times"][0] == z(nine_ny(date(2027, 7, 2)))
    timer = Timer.objects.get(domain=tc.id, owner=sch.id, status="armed")
    assert timer.owed_at == nine_ny(date(2027, 7, 2)) and timer.by == "calendar.closed_days"
    assert events(sch, "schedule.rerolled")[0]["why"] == "closed 2027-07-01: Office move"
    advance(tc.id, at("2027-07-03T00:00Z"))
    run = ScheduleRun.objects.get(schedule=sch)
    assert run.intended_at == nine_ny(date(2027, 7, 1)) and run.started_at == nine_ny(date(2027, 7, 2))
    assert events(sch, "schedule.rolled")[0]["why"].startswith("Thursday 1 July 2027: Office move")


def test_previous_open_fires_a_closed_days_fire_on_the_open_day_before(brand, ny_calendar, target):  # noqa: F811
    tc = clock_at(brand, "2027-10-25T00:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0 9 * * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=ny_calendar.id, closed_days="previous_open")
    advance(tc.id, at("2027-11-02T00:00Z"))
    started = {r.intended_at.astimezone(NY).date(): r.started_at for r in ScheduleRun.objects.filter(schedule=sch)}
    # Saturday 30 and Sunday 31 October fire on Friday 29 October at 09:00 New York.
    assert started[date(2027, 10, 30)] == started[date(2027, 10, 31)] == nine_ny(date(2027, 10, 29))
    assert started[date(2027, 11, 1)] == nine_ny(date(2027, 11, 1))


def test_a_calendar_not_the_brands_is_missing(brand, clock, target):  # noqa: F811
    with pytest.raises(KeepingTimeError) as err:
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": target.url},
                        calendar="cal_nope")
    assert err.value.code == "resource_missing" and err.value.status == 404
