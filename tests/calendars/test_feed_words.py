"""Issue 24: the subject calendar feed speaks its customer's words, and real calendar clients read it.

On the examples as loadexample makes them (apis.tax's Acme Robotics, api.forsale's two deals):

* no id and none of the runtime's words (calendars.words) in anything a reader sees of the feed;
* a due date's reminders are VALARMs with triggers relative to its start (khal ignores absolute ones);
* an ack chain is one all-day event spanning its days, not one a day;
* links, grants, Task due dates and holds, and job deadlines are in the feed, the calendar API and the CLI;
* icalendar and vobject parse it, and khal in Berlin lists the federal 2028-04-18 date all day with alarms.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
import vobject
from django.db import connection
from django.test.utils import CaptureQueriesContext
from icalendar import Calendar

from calendars.feed_tokens import subject_feed_rotate
from calendars.models import Subject
from calendars.words import ID_PATTERN, runtime_words
from services import people_dates
from tests.conftest import at
from tests.support.cli import run
from tests.support.khal import khal_calendar
from timers import transports
from timers.advance import advance
from timers.models import TestClock
from timers.tenants import api_key_create

pytestmark = pytest.mark.django_db

NY = "America/New_York"
# Every property a person reads in a calendar app (UIDs are not among them).
VISIBLE = ("X-WR-CALNAME", "NAME", "X-WR-CALDESC", "DESCRIPTION", "SUMMARY", "CATEGORIES", "LOCATION")
FEDERAL = "file · the 2027 return · US"


def feed(client, subject: Subject) -> bytes:
    token = subject_feed_rotate(subject=subject)
    r = client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token})
    assert r.status_code == 200, r.content
    return r.content


def seen(cal: Calendar) -> list[tuple[str, str, str]]:
    """(component, property, text) for everything a reader sees, alarms' descriptions included."""
    out = []
    for comp in cal.walk():
        for name in VISIBLE:
            values = comp.get(name)
            if values is None:
                continue
            for value in values if isinstance(values, list) else [values]:
                words = getattr(value, "cats", None)
                out.append((comp.name, name, ", ".join(map(str, words)) if words is not None else str(value)))
    return out


def events(cal: Calendar) -> dict[str, list]:
    by_summary: dict[str, list] = {}
    for ev in cal.walk("VEVENT"):
        by_summary.setdefault(str(ev["SUMMARY"]), []).append(ev)
    return by_summary


def rings(ev, zone: str = NY) -> list[datetime]:
    """Each alarm's ring for a reader in ``zone``: the trigger after midnight of the date, days nominal."""
    start = datetime.combine(ev.decoded("DTSTART"), time(0))
    return [(start + a.decoded("TRIGGER")).replace(tzinfo=ZoneInfo(zone)) for a in ev.walk("VALARM")]


@pytest.fixture
def acme(db):
    """apis.tax's example on 2 February 2028: the 2027 return is open, its federal date 2028-04-18 ahead."""
    transports.register("notices", transports.RecordingTransport())
    run("loadexample", "apis_tax", "--reset")
    tc = TestClock.objects.get(seed="apis_tax")
    advance(tc.id, at("2028-02-02T14:00Z"))
    return tc, Subject.objects.select_related("calendar").get(domain=tc.id, key="12-3456789")


@pytest.fixture
def deals(db):
    """api.forsale's example on 4 November 2027: deal A's offer link open a last time, deal B's registrar
    grant running and its transfer Task due; both deals' deadlines ahead."""
    transports.register("notices", transports.RecordingTransport())
    run("loadexample", "api_forsale", "--reset")
    tc = TestClock.objects.get(seed="api_forsale")
    advance(tc.id, at("2027-11-04T00:00Z"))
    subjects = {s.key: s for s in Subject.objects.select_related("calendar").filter(domain=tc.id)}
    return tc, subjects["alpha.example"], subjects["beta.example"]


def test_the_feed_says_no_id_and_none_of_the_runtimes_words(client, acme, deals):
    for subject in (acme[1], deals[1], deals[2]):
        body = feed(client, subject)
        cal = Calendar.from_ical(body)
        texts = seen(cal)
        assert any(prop == "SUMMARY" for _, prop, _ in texts) and any(c == "VALARM" for c, _, _ in texts) or \
            subject != acme[1]
        found = [(comp, prop, text, runtime_words(text)) for comp, prop, text in texts if runtime_words(text)]
        assert found == [], found[:5]
        # Nor anywhere in the body but a UID (what the date is, never shown).
        rest = b"\r\n".join(line for line in body.replace(b"\r\n ", b"").split(b"\r\n")
                            if not line.startswith(b"UID:"))
        assert not ID_PATTERN.search(rest.decode()), ID_PATTERN.search(rest.decode())
    # The calendar is named for its subject, whose dates they are, on a test clock without its id.
    name = str(Calendar.from_ical(feed(client, acme[1]))["X-WR-CALNAME"])
    assert name == "Acme Robotics · apis.tax dates (test clock)"
    alpha = Calendar.from_ical(feed(client, deals[1]))
    assert str(alpha["X-WR-CALNAME"]) == "Alpha Labs · api.forsale dates (test clock: api.forsale deals)"
    assert str(alpha["NAME"]) == str(alpha["X-WR-CALNAME"])


def test_a_due_dates_reminders_are_relative_alarms_and_its_ack_chain_one_event(client, acme):
    tc, subject = acme
    body = feed(client, subject)
    cal = Calendar.from_ical(body)
    got = events(cal)
    [us] = got[FEDERAL]
    assert us.decoded("DTSTART") == date(2028, 4, 18) and us.decoded("DTEND") == date(2028, 4, 19)
    # Every trigger is a duration before the start, none an instant (khal, for one, ignores those).
    triggers = [a.decoded("TRIGGER") for a in cal.walk("VALARM")]
    assert triggers and all(isinstance(t, timedelta) and t < timedelta(0) for t in triggers)
    assert b"VALUE=DATE-TIME" not in body
    # The 2027-06 deploy's rungs: notices 90d, 60d, 30d and escalate 7d, each at 09:00 New York.
    assert [a["TRIGGER"].to_ical() for a in us.walk("VALARM")] == [b"-P89DT15H", b"-P59DT15H", b"-P29DT15H",
                                                                     b"-P6DT15H"]
    assert rings(us) == [datetime(2028, 1, 19, 9, tzinfo=ZoneInfo(NY)), datetime(2028, 2, 18, 9, tzinfo=ZoneInfo(NY)),
                         datetime(2028, 3, 19, 9, tzinfo=ZoneInfo(NY)), datetime(2028, 4, 11, 9, tzinfo=ZoneInfo(NY))]
    assert [str(a["DESCRIPTION"]) for a in us.walk("VALARM")][-1] == (
        f"Urgent: {FEDERAL} is due Tuesday 2028-04-18 (in 7 days)")
    description = str(us["DESCRIPTION"])
    assert f"Due by: Tuesday 2028-04-18 at 23:59 ({NY})" in description and "Z)" not in description
    assert "Who answers for it: Ada Lovelace" in description
    # Its ack chain (ack daily 5d) is one all-day event over its five days, not one a day.
    [check] = got[f"Daily check-in · {FEDERAL}"]
    assert (check.decoded("DTSTART"), check.decoded("DTEND")) == (date(2028, 4, 13), date(2028, 4, 18))
    assert not any(re.search(r"\bday \d+ of\b|\back\b", s) for s in got), [s for s in got if "day" in s]
    uid = str(check["UID"])
    # Two of its days asked: still the one event, under the same uid, over the same days.
    advance(tc.id, at("2028-04-15T00:00Z"))
    got = events(Calendar.from_ical(feed(client, Subject.objects.get(pk=subject.pk))))
    [check] = got[f"Daily check-in · {FEDERAL}"]
    assert str(check["UID"]) == uid
    assert (check.decoded("DTSTART"), check.decoded("DTEND")) == (date(2028, 4, 13), date(2028, 4, 18))
    assert "Status: asked on 2 of 5 days" in str(check["DESCRIPTION"])
    # The run that acts for the customer is an event at its time; the notices are not events.
    [step] = got[f"apis.tax steps in if it's still open · {FEDERAL}"]
    assert step.decoded("DTSTART").isoformat() == "2028-04-15T09:00:00-04:00"
    assert not any(s.lower().startswith(("notice", "escalate", "reminder")) for s in got)


def test_icalendar_and_vobject_read_every_feed(client, acme, deals):
    for subject in (acme[1], deals[1], deals[2]):
        body = feed(client, subject)
        cal = Calendar.from_ical(body)
        for comp in cal.walk():
            assert not comp.errors, (comp.name, comp.errors)
        assert cal.get_missing_tzids() == set()
        parsed = vobject.readOne(body.decode(), validate=True)
        parsed.validate()
        assert len(parsed.vevent_list) == len(cal.walk("VEVENT"))
        for ev in parsed.vevent_list:
            for alarm in getattr(ev, "valarm_list", []):
                assert isinstance(alarm.trigger.value, timedelta)


def test_links_grants_tasks_and_deadlines_are_in_the_feed_the_api_and_the_cli(client, deals):
    tc, alpha, beta = deals
    key = api_key_create(brand=tc.brand)[1]
    expect = {
        alpha: {"link": "the buyer's link for offer expires (its last chance) · the A-1001 deal",
                "task": "appraise due · the A-1001 deal", "deadline": "deliver the A-1001 deal",
                "at_risk": "the A-1001 deal at risk"},
        beta: {"grant": "the buyer's registrar grant ends · the B-2001 deal",
               "task": "transfer due · the B-2001 deal", "deadline": "deliver the B-2001 deal",
               "at_risk": "the B-2001 deal at risk"},
    }
    la = ZoneInfo("America/Los_Angeles")
    for subject, dates in expect.items():
        r = client.get(f"/subjects/{subject.id}/calendar", {"from": "2027-01-01", "test_clock": tc.id},
                       HTTP_AUTHORIZATION=f"Bearer {key}")
        assert r.status_code == 200, r.content
        rows = {(d["kind"], d["what"]) for d in r.json()["data"]}
        assert set(dates.items()) <= rows, rows
        assert r.json()["count"] >= 4
        cli = run("subjects", "calendar", subject.id, "--from", "2027-01-01", "--test-clock", tc.id)
        assert " 0 dates " not in cli
        cells = [re.split(r"\s{2,}", line.strip()) for line in cli.splitlines()[2:]]
        for kind, what in dates.items():
            assert any(c[1] == what and c[2] == kind for c in cells), (kind, what, cells)
        summaries = set(events(Calendar.from_ical(feed(client, subject))))
        assert len(summaries) >= 4
    # In the feed, in plain words, at their time in the calendar's zone.
    a = events(Calendar.from_ical(feed(client, alpha)))
    [link] = a["the buyer's link for offer expires (its last chance) · the A-1001 deal"]
    assert link.decoded("DTSTART") == at("2027-11-04T16:00Z").astimezone(la)
    assert "When: Thursday 2027-11-04 at 09:00 (America/Los_Angeles)" in str(link["DESCRIPTION"])
    assert "Who answers for it: the buyer" in str(link["DESCRIPTION"])
    b = events(Calendar.from_ical(feed(client, beta)))
    assert "the buyer's registrar access ends · the B-2001 deal" in b
    assert "transfer due · the B-2001 deal" in b and "deliver the B-2001 deal" in b
    [risk] = b["the B-2001 deal at risk of running late"]
    assert "What it is: at risk of running late" in str(risk["DESCRIPTION"])
    [late] = b["deliver the B-2001 deal"]
    assert late.decoded("DTSTART") == at("2027-11-19T14:00Z").astimezone(la)
    assert "Who answers for it: api.forsale" in str(late["DESCRIPTION"])


def test_a_held_tasks_hold_end_is_a_date_and_each_kind_is_one_query(client, db):
    transports.register("notices", transports.RecordingTransport())
    run("loadexample", "api_forsale", "--reset")
    tc = TestClock.objects.get(seed="api_forsale")
    advance(tc.id, at("2027-10-21T00:00Z"))  # grace holds deal A's appraise until 10-22 15:00Z
    subjects = {s.key: s for s in Subject.objects.select_related("calendar").filter(domain=tc.id)}
    alpha, beta = subjects["alpha.example"], subjects["beta.example"]
    cli = run("subjects", "calendar", alpha.id, "--from", "2027-01-01", "--test-clock", tc.id)
    assert re.search(r"2027-10-22  the hold on appraise ends · the A-1001 deal\s+hold\s+the brand\s+ahead", cli)
    got = events(Calendar.from_ical(feed(client, alpha)))
    [hold] = got["the hold on appraise ends · the A-1001 deal"]
    assert "What it is: hold ends" in str(hold["DESCRIPTION"])
    # One query per kind, whatever the rows: A has a taken Task, B an open one and other timers.
    counts = []
    for subject in (alpha, beta):
        with CaptureQueriesContext(connection) as queries:
            listed = list(people_dates.people_dates(subject, tc.id, None))
        assert listed
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 8, counts


# -- a real calendar client -------------------------------------------------------------------------------------


def test_khal_in_berlin_lists_the_federal_date_all_day_with_its_alarms(client, acme, tmp_path):
    khal = khal_calendar(tmp_path, feed(client, acme[1]), "Europe/Berlin")
    listed = khal("list", "--day-format", "{name} {date}", "--format",
                  "{start-end-time-style}|{title}|{all-day}|{alarm-symbol}", "2028-04-18", "1d")
    lines = [line.strip() for line in listed.splitlines() if line.strip()]
    assert lines[0] == "Tuesday 2028-04-18", lines
    assert f"|{FEDERAL}|True| (A)" in lines, lines  # all day on the 18th in Berlin too, alarms on it
    # The alarms as khal reads them: four, the last 6 days 15 h before the date's start (09:00 New York).
    out = khal("list", "--json", "title", "--json", "all-day", "--json", "alarms-list", "--json", "start",
               "2028-04-18", "1d")
    rows = [row for line in out.splitlines() if line.strip().startswith("[") for row in json.loads(line)]
    [us] = [row for row in rows if row["title"] == FEDERAL]
    assert us["all-day"] == "True" and us["start"] == "2028-04-18"
    assert [a["delta"] for a in us["alarms-list"]] == [
        -timedelta(days=d, hours=15).total_seconds() for d in (89, 59, 29, 6)]


def _federal(subject: Subject):
    from calendars.models import ClockItem  # noqa: PLC0415 - the test's own reads, beside the feed's

    return ClockItem.objects.select_related("clock").get(clock__subject=subject, clock__name="file",
                                                         clock__period="2027", item="US")


def _fetch(client, subject: Subject, token: str):
    r = client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token})
    assert r.status_code == 200, r.content
    return r


def test_a_date_done_says_so_rings_no_more_and_undone_rings_again(client, acme):
    from calendars.clocks import clock_satisfy  # noqa: PLC0415 - the acts the feed follows
    from calendars.undo import clock_reopen  # noqa: PLC0415 - the acts the feed follows
    from timers.armer import DirectArmer  # noqa: PLC0415 - the acts the feed follows

    tc, subject = acme
    token = subject_feed_rotate(subject=subject)
    before = _fetch(client, subject, token)
    [ev] = events(Calendar.from_ical(before.content))[FEDERAL]
    assert len(ev.walk("VALARM")) == 4
    item = _federal(subject)
    clock_satisfy(armer=DirectArmer(brand=item.clock.brand_id, domain=tc.id), item=item, by="Ada Lovelace")
    after = _fetch(client, subject, token)
    assert after["ETag"] != before["ETag"]
    by = events(Calendar.from_ical(after.content))
    assert FEDERAL not in by
    [done] = by[f"Done · {FEDERAL}"]
    assert done.walk("VALARM") == []
    # Taken back, the date is as it was: its title, and its reminders still ahead as alarms.
    clock_reopen(armer=DirectArmer(brand=item.clock.brand_id, domain=tc.id), item=item, by="Ada Lovelace")
    [again] = events(Calendar.from_ical(_fetch(client, subject, token).content))[FEDERAL]
    assert len(again.walk("VALARM")) == 4


def test_a_moved_dates_description_says_why(client, acme):
    from calendars.clocks import clock_move  # noqa: PLC0415 - the act the feed follows
    from timers.armer import DirectArmer  # noqa: PLC0415 - the act the feed follows

    tc, subject = acme
    item = _federal(subject)
    clock_move(armer=DirectArmer(brand=item.clock.brand_id, domain=tc.id), item=item, civil=date(2028, 10, 16),
               by="calendar", cause={"notice": "IR-2028-01"})
    [ev] = events(Calendar.from_ical(feed(client, subject)))[FEDERAL]
    assert ("Why it moved: it moved from Tue 18 Apr 2028 to Mon 16 Oct 2028: a postponement (notice IR-2028-01)."
            in str(ev["DESCRIPTION"]))


def test_an_ended_jobs_dates_leave_the_feed(client, acme):
    from services.jobs import job_end  # noqa: PLC0415 - the act the feed follows
    from services.models import Job  # noqa: PLC0415 - the act the feed follows
    from timers.armer import DirectArmer  # noqa: PLC0415 - the act the feed follows

    tc, subject = acme
    token = subject_feed_rotate(subject=subject)
    before = _fetch(client, subject, token)
    assert FEDERAL in events(Calendar.from_ical(before.content))
    job = Job.objects.get(pk=_federal(subject).clock.owner_ref)
    job_end(armer=DirectArmer(brand=job.brand_id, domain=job.domain), job=job, status=Job.Status.CANCELED,
            reason="the customer withdrew")
    after = _fetch(client, subject, token)
    assert after["ETag"] != before["ETag"]
    # Its dates (each clock's) are gone; the plan's own line for the period ("work starts") is the plan's.
    left = [s for s in events(Calendar.from_ical(after.content)) if "· the 2027 return" in s]
    assert not left, left


def test_khal_lists_a_date_done_without_alarms_after_the_next_fetch(client, acme, tmp_path):
    from calendars.clocks import clock_satisfy  # noqa: PLC0415 - the act the feed follows
    from timers.armer import DirectArmer  # noqa: PLC0415 - the act the feed follows

    tc, subject = acme
    fmt = ("--format", "{title}|{all-day}|{alarm-symbol}")
    khal = khal_calendar(tmp_path, feed(client, subject), "Europe/Berlin")
    assert f"{FEDERAL}|True| (A)" in [x.strip() for x in khal("list", *fmt, "2028-04-18", "1d").splitlines()]
    item = _federal(subject)
    clock_satisfy(armer=DirectArmer(brand=item.clock.brand_id, domain=tc.id), item=item, by="Ada Lovelace")
    # The next fetch, imported over the first (the same uids, a later stamp): khal lists it done, no alarm.
    (tmp_path / "next.ics").write_bytes(feed(client, subject))
    khal("import", "--batch", "-a", "feed", str(tmp_path / "next.ics"))
    lines = [x.strip() for x in khal("list", *fmt, "2028-04-18", "1d").splitlines()]
    assert f"Done · {FEDERAL}|True|" in lines and f"{FEDERAL}|True| (A)" not in lines, lines
