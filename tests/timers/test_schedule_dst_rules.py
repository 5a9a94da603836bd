"""A schedule on a calendar takes the calendar's time rules (issue 40): dst_skipped next_minute | skip and
dst_repeated first | second, on a test clock. Expected instants come from zoneinfo's UTC offsets (walking UTC
minutes), never from our output."""

from __future__ import annotations

from datetime import date, time

import pytest

from calendars.brand_calendars import calendar_create
from tests.calendars.test_time_rules import FALL, SPRING, occurrences, transition
from tests.conftest import at
from tests.timers.test_schedule_business_days import NY, events, z
from tests.timers.test_schedules import clock_at
from tests.timers.test_schedules import fixtures_loaded as fixtures_loaded  # noqa: F401 - a fixture, autouse
from tests.timers.test_schedules import target as target  # noqa: F401 - a fixture
from timers.advance import advance
from timers.models import ScheduleRun
from timers.schedules import schedule_create, schedule_json


def calendar(brand, **rules):
    return calendar_create(brand=brand, name=f"NY {sorted(rules.items())}", zone="America/New_York", weekends=[],
                           now=at("2026-11-01T00:00Z"), **rules)


def daily(d: date, wall: time):
    return occurrences(d, wall)[0]


@pytest.mark.parametrize("rule", ["next_minute", "skip"])
def test_a_fire_the_spring_change_skips_by_the_calendars_rule(brand, target, rule):  # noqa: F811
    cal = calendar(brand, dst_skipped=rule)
    tc = clock_at(brand, "2027-03-12T12:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 2 * * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=cal.id)
    before, after = daily(date(2027, 3, 13), time(2, 30)), daily(date(2027, 3, 15), time(2, 30))
    change = transition(SPRING)
    shown = [before, change, after] if rule == "next_minute" else [before, after, daily(date(2027, 3, 16), time(2, 30))]
    assert schedule_json(sch)["next_fire_times"][:3] == [z(t) for t in shown]
    advance(tc.id, at("2027-03-16T00:00Z"))
    runs = [r.intended_at for r in ScheduleRun.objects.filter(schedule=sch).order_by("intended_at")]
    skipped = events(sch, "schedule.skipped")
    if rule == "next_minute":
        assert runs == [before, change, after] and skipped == []
    else:
        assert runs == [before, after]
        assert [e["at"] for e in skipped] == [z(change)]
        assert skipped[0]["why"].startswith("dst Sunday 14 March 2027: 02:30 does not happen in America/New_York")


def test_a_fire_of_its_own_at_the_first_minute_after_the_gap_is_never_skipped(brand, target):  # noqa: F811
    cal = calendar(brand, dst_skipped="skip")
    tc = clock_at(brand, "2027-03-14T05:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "0,30 1-3 * * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=cal.id)
    advance(tc.id, at("2027-03-14T09:00Z"))
    runs = [r.intended_at for r in ScheduleRun.objects.filter(schedule=sch).order_by("intended_at")]
    # 02:00 and 02:30 do not exist; 03:00 EDT is a fire of its own (one instant, one Run).
    assert runs == [daily(SPRING, time(1, 0)), daily(SPRING, time(1, 30)), transition(SPRING),
                    daily(SPRING, time(3, 30))]
    assert events(sch, "schedule.skipped") == []


@pytest.mark.parametrize(("rule", "which"), [("first", 0), ("second", 1)])
def test_a_repeated_fire_by_the_calendars_rule(brand, target, rule, which):  # noqa: F811
    cal = calendar(brand, dst_repeated=rule)
    tc = clock_at(brand, "2027-11-06T12:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 1 * * *"}, zone="America/New_York",
                          target={"url": target.url}, calendar=cal.id)
    want = occurrences(FALL, time(1, 30))[which]
    assert schedule_json(sch)["next_fire_times"][0] == z(want)
    advance(tc.id, at("2027-11-08T12:00Z"))
    runs = [r.intended_at for r in ScheduleRun.objects.filter(schedule=sch).order_by("intended_at")]
    assert runs == [want, daily(date(2027, 11, 8), time(1, 30))]
    assert want.astimezone(NY).strftime("%H:%M") == "01:30"


def test_a_schedule_on_no_calendar_keeps_the_seeds_rule(brand, target):  # noqa: F811
    tc = clock_at(brand, "2027-11-06T12:00Z")
    sch = schedule_create(brand=brand, domain=tc.id, spec={"cron": "30 1 * * *"}, zone="America/New_York",
                          target={"url": target.url})
    assert schedule_json(sch)["next_fire_times"][0] == z(occurrences(FALL, time(1, 30))[0])
