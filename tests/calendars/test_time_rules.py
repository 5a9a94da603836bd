"""A calendar's time rules (issue 40): dst_skipped (next_minute | skip) and dst_repeated (first | second), in the
calendar math and over the API. Expected instants come from zoneinfo and the UTC offsets alone, never from
the calendar's own answers."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from calendars.civil import calendar_from
from calendars.models import Calendar, ClockItem
from tests.services.test_customers import FROZEN, acme
from tests.support.api import Client, new_clock

NYZ = ZoneInfo("America/New_York")
SPRING, FALL = date(2027, 3, 14), date(2027, 11, 7)


def transition(day: date) -> datetime:
    """The first UTC minute of ``day`` whose New York offset differs from the minute before: found by walking
    UTC minutes, not by mapping any wall time."""
    t = datetime(day.year, day.month, day.day, 4, tzinfo=UTC)
    while t.astimezone(NYZ).utcoffset() == (t - timedelta(minutes=1)).astimezone(NYZ).utcoffset():
        t += timedelta(minutes=1)
    return t


def occurrences(day: date, wall: time) -> list[datetime]:
    """Every UTC minute of the day whose New York wall clock reads ``wall``, in order."""
    t0 = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return [t for t in (t0 + timedelta(minutes=m) for m in range(48 * 60))
            if t.astimezone(NYZ).replace(tzinfo=None) == datetime.combine(day, wall)]


def ny(**rules):
    return calendar_from(zone="America/New_York", weekends=(), **rules)


def test_the_expected_instants_are_what_new_york_does():
    assert transition(SPRING) == datetime(2027, 3, 14, 7, tzinfo=UTC)  # 02:00 EST jumps to 03:00 EDT
    assert occurrences(SPRING, time(2, 30)) == []
    first, second = occurrences(FALL, time(1, 30))
    assert second - first == timedelta(hours=1)


@pytest.mark.parametrize("rule", ["next_minute", "skip"])
def test_a_skipped_minute_by_each_rule(rule):
    cal = ny(dst_skipped=rule)
    # A notice or a due is never dropped: at() rings at the first minute after the gap under both rules.
    assert cal.at(SPRING, time(2, 30)) == transition(SPRING)
    # A fire (a schedule's) happens there under next_minute, and not at all under skip.
    expected = transition(SPRING) if rule == "next_minute" else None
    assert cal.fires_at(SPRING, time(2, 30)) == expected
    # A minute that exists is not touched by the rule.
    assert cal.fires_at(SPRING, time(3, 30)) == occurrences(SPRING, time(3, 30))[0]


@pytest.mark.parametrize(("rule", "which"), [("first", 0), ("second", 1)])
def test_a_repeated_minute_by_each_rule(rule, which):
    cal = ny(dst_repeated=rule)
    assert cal.at(FALL, time(1, 30)) == occurrences(FALL, time(1, 30))[which]
    assert cal.fires_at(FALL, time(1, 30)) == occurrences(FALL, time(1, 30))[which]
    assert cal.at(FALL, time(3, 0)) == occurrences(FALL, time(3, 0))[0]  # once: no rule applies


@pytest.mark.parametrize("rule", ["next_minute", "skip"])
def test_a_due_closing_on_a_skipped_minute_is_on_time_only_up_to_the_change(rule):
    cal = ny(closes=time(2, 30), dst_skipped=rule)
    change = transition(SPRING)
    assert cal.on_time(change - timedelta(microseconds=1), SPRING)  # 01:59:59.999999 EST
    # 03:00 EDT is a local minute after 02:30: late, whatever the rule (the old answer gave it a minute more).
    assert not cal.on_time(change, SPRING)
    assert cal.close_of(SPRING) + timedelta(minutes=1) == change


@pytest.mark.parametrize(("rule", "which"), [("first", 0), ("second", 1)])
def test_a_due_closing_on_a_repeated_minute_closes_at_the_rules_occurrence(rule, which):
    cal = ny(closes=time(1, 30), dst_repeated=rule)
    end = occurrences(FALL, time(1, 30))[which] + timedelta(minutes=1)
    assert cal.on_time(end - timedelta(microseconds=1), FALL) and not cal.on_time(end, FALL)


# -- over the API -------------------------------------------------------------------------------------------------
NY = {"name": "New York office", "zone": "America/New_York", "holidays": "US-DC"}


@pytest.fixture
def api(client_for) -> Client:
    return client_for("apis.tax")


@pytest.mark.django_db(transaction=True)
def test_the_rules_are_shown_set_on_create_and_refused_when_bad(api):
    made = api.post("/calendars", NY)
    assert made.status == 201, made.body
    assert made.body["dst_skipped"] == "next_minute" and made.body["dst_repeated"] == "first"  # the seed's rule
    other = api.post("/calendars", {**NY, "name": "Fires", "dst_skipped": "skip", "dst_repeated": "second"}).body
    got = api.get(f"/calendars/{other['id']}").body
    assert (got["dst_skipped"], got["dst_repeated"]) == ("skip", "second")
    listed = {c["name"]: (c["dst_skipped"], c["dst_repeated"]) for c in api.get("/calendars").body["data"]}
    assert listed == {"New York office": ("next_minute", "first"), "Fires": ("skip", "second")}
    assert Calendar.objects.get(pk=other["id"]).civil().fold == 1
    # A bad rule is the code the CLI and calendar_create give it, about its field.
    for bad in ({"dst_skipped": "later"}, {"dst_repeated": "both"}, {"dst_skipped": 1}, {"dst_repeated": None}):
        r = api.post("/calendars", {**NY, "name": "Bad", **bad})
        assert r.status == 400 and r.code == "invalid_dst_rule", r.body
        assert r.body["error"]["param"] == next(iter(bad)), r.body
        r = api.post(f"/calendars/{made.body['id']}", bad)
        assert r.status == 400 and r.code == "invalid_dst_rule", r.body
        assert r.body["error"]["param"] == next(iter(bad)), r.body
    assert r.body["error"]["message"] == "dst_repeated: one of first, second, not null"
    assert api.get(f"/calendars/{made.body['id']}").body["dst_skipped"] == "next_minute"


@pytest.mark.django_db(transaction=True)
def test_the_rules_change_only_while_no_open_date_is_on_the_calendar(api):
    cal = api.post("/calendars", NY).body
    r = api.post(f"/calendars/{cal['id']}", {"dst_skipped": "skip", "dst_repeated": "second"})
    assert r.status == 200 and (r.body["dst_skipped"], r.body["dst_repeated"]) == ("skip", "second"), r.body
    clock = new_clock(api, FROZEN, "Acme")
    subject = acme(api, clock).body
    job = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2026"})
    assert job.status == 201, job.body
    assert ClockItem.objects.filter(clock__subject__calendar_id=cal["id"], status="open").exists()
    for change in ({"dst_skipped": "next_minute"}, {"dst_repeated": "first"}):
        r = api.post(f"/calendars/{cal['id']}", change)
        assert r.status == 409 and r.code == "calendar_in_use", r.body
    row = Calendar.objects.get(pk=cal["id"])
    assert (row.dst_skipped, row.dst_repeated) == ("skip", "second")
    # The same values again are no change: not refused.
    assert api.post(f"/calendars/{cal['id']}", {"dst_skipped": "skip"}).status == 200


# -- a due on a test clock ----------------------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("rule", ["next_minute", "skip"])
def test_a_due_closing_in_the_spring_gap_falls_due_at_the_change_on_a_test_clock(brand, rule):
    from calendars.clocks import clock_move
    from tests.conftest import at
    from tests.support.acme import acme_subject, open_return
    from timers.advance import advance
    from timers.armer import DirectArmer
    from timers.models import Timer
    from timers.test_clocks import test_clock_create

    Calendar.objects.create(brand=brand, name="Acme Robotics", zone="America/New_York", weekends=[],
                            closes=time(2, 30), is_default=True, dst_skipped=rule)
    tc = test_clock_create(brand=brand, frozen_time=at("2027-03-01T12:00Z"), name="gap")
    subject = acme_subject(brand, tc.id)
    _file, pay = open_return(brand, tc, subject)
    item = ClockItem.objects.get(clock=pay, item="US")
    clock_move(armer=DirectArmer(brand=brand, domain=tc.id), item=item, civil=SPRING, by="test")
    item.refresh_from_db()
    change = transition(SPRING)
    assert item.due_date == SPRING  # Sunday, on a calendar with no weekends: no roll
    due = Timer.objects.get(domain=tc.id, status="armed", handler="calendars.due", owner=item.owner_key,
                            key__contains=":pay:")
    assert due.owed_at == change  # 02:30 never comes: the due falls at the change, not a minute after it
    advance(tc.id, change - timedelta(seconds=1))
    item.refresh_from_db()
    assert item.status == ClockItem.Status.OPEN
    advance(tc.id, change)
    item.refresh_from_db()
    assert item.status != ClockItem.Status.OPEN


@pytest.mark.django_db
def test_the_cli_makes_a_calendar_with_its_rules_and_lists_them(brand):
    from tests.support.cli import run

    out = run("calendars", "create", "--brand", brand.name, "--name", "Fires",
              "--zone", "America/New_York", "--dst-skipped", "skip", "--dst-repeated", "second")
    cal = Calendar.objects.get(name="Fires")
    assert (cal.dst_skipped, cal.dst_repeated) == ("skip", "second")
    assert "skipped times: skip · repeated times: second" in out
