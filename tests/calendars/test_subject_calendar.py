"""The subject's calendar: the JSON list, the CLI table, the webcal feed and the customer portal page,
on DESIGN.md's Acme Robotics example."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
import vobject
from django.core.management.base import CommandError
from django.urls import reverse
from icalendar import Calendar

from calendars import entries
from calendars.clocks import clock_open
from calendars.entries import Entry, uid_for
from calendars.feed_tokens import subject_feed_revoke, subject_feed_rotate
from calendars.models import ClockItem, Subject
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from tests.support.cli import run
from tests.support.feeds import ics
from timers import transports
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import live_domain
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

NY = "America/New_York"


@pytest.fixture
def acme(brand):
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    file, pay = open_return(brand, tc, subject)
    return tc, subject, file, pay


@pytest.fixture
def key(brand):
    return api_key_create(brand=brand)[1]


def get_json(client, path, key=None, **params):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.get(path, params, **headers)


def calendar(client, key, subject, **params):
    r = get_json(client, f"/subjects/{subject.id}/calendar", key, **params)
    assert r.status_code == 200, r.content
    return r.json()


def by_what(data: list[dict]) -> dict[str, dict]:
    return {d["what"]: d for d in data}


def vevents(body: bytes) -> dict[str, object]:
    """Each VEVENT by its SUMMARY."""
    return {str(ev["SUMMARY"]): ev for ev in Calendar.from_ical(body).walk("VEVENT")}


def rings(ev, zone: str = NY) -> list:
    """When each of an all-day event's alarms rings for a reader in ``zone``: its trigger is relative to the
    start, midnight of the date there, its days nominal (RFC 5545 3.3.6): wall-clock arithmetic."""
    start = datetime.combine(ev.decoded("DTSTART"), time(0))
    return [(start + a.decoded("TRIGGER")).replace(tzinfo=ZoneInfo(zone)) for a in ev.walk("VALARM")]


RUN_US = "apis.test steps in if it's still open · file the 2027 return · US"


# -- the JSON list -----------------------------------------------------------------------------------------
def test_the_calendar_lists_the_returns_dates_and_rungs(client, key, acme):
    tc, subject, file, pay = acme
    body = calendar(client, key, subject, **{"from": "2027-02-01", "test_clock": tc.id})
    assert body["object"] == "subject_calendar"
    assert (body["subject"], body["kind"], body["key"], body["name"], body["zone"]) == (
        subject.id, "taxpayer", "12-3456789", "Acme Robotics", NY)
    assert body["webcal"] == f"/subjects/{subject.id}/calendar.ics"
    assert body["count"] == len(body["data"]) and body["from"] == "2027-02-01"
    got = by_what(body["data"])
    for state in ("US", "US-CA", "US-NY"):
        row = got[f"file the 2027 return · {state}"]
        assert (row["date"], row["kind"], row["answers_for"]) == ("2028-04-18", "clock", "Ada Lovelace")
        assert row["status"] == "ahead, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, on the Acme Robotics calendar"
    assert got["file the 2027 return · US-NJ"]["date"] == "2028-05-15"
    assert got["file the 2027 return · US-NJ"]["status"] == "ahead"
    pay_row = got["pay the 2027 tax · US"]
    assert (pay_row["date"], pay_row["kind"]) == ("2028-04-18", "hard")
    # A due is its closing minute, 23:59 New York; printed in UTC with Z and in the calendar's zone.
    us = got["file the 2027 return · US"]
    assert us["at"] == "2028-04-19T03:59:00Z" and us["local"] == "2028-04-18T23:59:00-04:00"
    assert us["on"] == f"{file.id}#US" and us["sequence"] == 0
    # Rungs are a date's reminders, listed under it: they ring at 09:00 New York.
    assert not any(d["kind"] == "rung" for d in body["data"])
    rungs = by_what(us["rungs"])
    rung = rungs["notice 90d · file the 2027 return · US"]
    assert (rung["date"], rung["kind"], rung["status"], rung["step"]) == ("2028-01-19", "rung", "armed", "notice")
    assert rung["at"] == "2028-01-19T14:00:00Z" and rung["local"] == "2028-01-19T09:00:00-05:00"
    assert by_what(got["file the 2027 return · US-NJ"]["rungs"])["notice 90d · file the 2027 return · US-NJ"][
        "date"] == "2028-02-15"
    assert rungs["run tentative 3d · file the 2027 return · US"]["date"] == "2028-04-15"
    assert [(r["what"], r["date"]) for r in pay_row["rungs"]] == [("notice 30d · pay the 2027 tax · US", "2028-03-19")]
    # Sorted by instant, then kind, then what; uids are unique.
    keys = [(d["at"], d["kind"], d["what"]) for d in body["data"]]
    assert keys == sorted(keys)
    assert len({d["uid"] for d in body["data"]}) == len(body["data"])


def test_from_filters_by_local_date_and_defaults_to_the_domains_today(client, key, acme):
    tc, subject, _, _ = acme
    everything = calendar(client, key, subject)
    assert everything["from"] == "2027-06-01" and everything["today"] == "2027-06-01"
    later = calendar(client, key, subject, **{"from": "2028-04-18"})
    assert {d["date"] for d in later["data"]} >= {"2028-04-18", "2028-05-15"}
    assert min(d["date"] for d in later["data"]) == "2028-04-18"
    assert later["count"] == everything["count"] == 5  # every date is on or after 04-18: rungs are not dates
    assert [d["date"] for d in calendar(client, key, subject, **{"from": "2028-04-19"})["data"]] == ["2028-05-15"]


def test_the_json_calendar_needs_the_brands_key(client, key, acme):
    tc, subject, _, _ = acme
    r = get_json(client, f"/subjects/{subject.id}/calendar")
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    other = brand_get_or_create(name="apis.other")
    other_key = api_key_create(brand=other)[1]
    r = get_json(client, f"/subjects/{subject.id}/calendar", other_key)
    assert r.status_code == 404 and r.json()["error"]["code"] == "resource_missing"
    r = get_json(client, f"/subjects/{subject.id}/calendar", other_key, test_clock=tc.id)
    assert r.status_code == 404
    r = get_json(client, "/subjects/sbj_nope/calendar", key)
    assert r.status_code == 404 and r.json()["error"]["message"] == "no subject 'sbj_nope'"


def test_a_live_subject_lists_the_live_clocks_dates(client, brand):
    live = live_domain(brand.id)
    subject = acme_subject(brand, live)
    armer = DirectArmer(brand=brand, domain=live)
    clock_open(armer=armer, brand=brand, domain=live, subject=subject, spec_name="tests.annual_return.pay",
               owner_ref="job_1", period="2027")
    live_key = api_key_create(brand=brand, live=True)[1]  # a test key sees only test clocks' subjects
    body = calendar(client, live_key, subject, **{"from": "2027-01-01"})
    assert body["test_clock"] is None
    assert [(d["date"], d["what"]) for d in body["data"]] == [("2028-04-18", "pay the 2027 tax · US")]
    assert [(r["date"], r["what"]) for r in body["data"][0]["rungs"]] == [
        ("2028-03-19", "notice 30d · pay the 2027 tax · US")]


@pytest.mark.parametrize(("params", "param"), [
    ({"from": "2027-2-1"}, "from"),
    ({"from": "tomorrow"}, "from"),
    ({"from": "2027-02-30"}, "from"),
])
def test_a_bad_from_is_a_400_naming_it(client, key, acme, params, param):
    _, subject, _, _ = acme
    r = get_json(client, f"/subjects/{subject.id}/calendar", key, **params)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_request" and r.json()["error"]["param"] == param


def test_a_test_clock_is_the_brands_and_the_subjects(client, key, brand, acme):
    tc, subject, _, _ = acme
    r = get_json(client, f"/subjects/{subject.id}/calendar", key, test_clock="tc_nope")
    assert r.status_code == 404 and r.json()["error"]["param"] == "test_clock"
    another = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"))
    r = get_json(client, f"/subjects/{subject.id}/calendar", key, test_clock=another.id)
    assert r.status_code == 400 and r.json()["error"]["param"] == "test_clock"


# -- the feed --------------------------------------------------------------------------------------------------
def test_the_feed_is_valid_icalendar_and_stable(client, acme):
    tc, subject, file, pay = acme
    token = subject_feed_rotate(subject=subject)
    r1, r2 = ics(client, subject, token), ics(client, subject, token)
    assert r1.status_code == 200 and r1["Content-Type"] == "text/calendar; charset=utf-8"
    body = r1.content
    assert body == r2.content and r1["ETag"] == r2["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{64}"', r1["ETag"])
    r3 = ics(client, subject, token, HTTP_IF_NONE_MATCH=r1["ETag"])
    assert r3.status_code == 304 and r3.content == b"" and r3["ETag"] == r1["ETag"]
    assert ics(client, subject, token, HTTP_IF_NONE_MATCH='"nope"').status_code == 200

    # Every line ends with CRLF and is at most 75 octets.
    assert body.endswith(b"\r\n")
    lines = body.split(b"\r\n")[:-1]
    assert all(b"\n" not in line and b"\r" not in line for line in lines)
    assert max(len(line) for line in lines) <= 75
    # It parses with icalendar, without errors, with a VTIMEZONE for every TZID.
    cal = Calendar.from_ical(body)
    for comp in cal.walk():
        assert not comp.errors, (comp.name, comp.errors)
    assert cal.get_missing_tzids() == set()
    assert cal.get_used_tzids() == {NY}
    assert [tz["TZID"] for tz in cal.walk("VTIMEZONE")] == [NY]
    for name, value in (("VERSION", "2.0"), ("CALSCALE", "GREGORIAN"), ("METHOD", "PUBLISH"),
                        ("X-WR-TIMEZONE", NY)):
        assert str(cal[name]) == value
    assert "Keeping Time" in str(cal["PRODID"])
    assert str(cal["X-WR-CALNAME"]).startswith("Acme Robotics") and str(cal["NAME"]) == str(cal["X-WR-CALNAME"])
    assert b"\r\nREFRESH-INTERVAL;VALUE=DURATION:PT1H\r\n" in body
    assert b"\r\nX-PUBLISHED-TTL:PT1H\r\n" in body
    # And with vobject's validating reader.
    parsed = vobject.readOne(body.decode(), validate=True)
    parsed.validate()
    assert len(parsed.vevent_list) == len(cal.walk("VEVENT"))

    events = cal.walk("VEVENT")
    uids = [str(ev["UID"]) for ev in events]
    assert len(uids) == len(set(uids))
    assert uids == [str(ev["UID"]) for ev in Calendar.from_ical(r2.content).walk("VEVENT")]
    got = vevents(body)
    us = got["file the 2027 return · US"]
    # A due date is all day on its date; notices and escalates are VALARMs on it, their triggers relative
    # to its start (local midnight of 2028-04-18 in New York), ringing at their instant.
    assert us.decoded("DTSTART") == date(2028, 4, 18) and us.decoded("DTEND") == date(2028, 4, 19)
    assert [str(a["DESCRIPTION"]) for a in us.walk("VALARM")] == [
        "Reminder: file the 2027 return · US is due Tuesday 2028-04-18 (in 90 days)",
        "Reminder: file the 2027 return · US is due Tuesday 2028-04-18 (in 30 days)",
        "Urgent: file the 2027 return · US is due Tuesday 2028-04-18 (in 7 days)"]
    assert us.walk("VALARM")[0].decoded("TRIGGER") == -timedelta(days=89, hours=15)  # 09:00 EST, then EDT
    assert b"\r\nTRIGGER:-P89DT15H\r\n" in body and b"TRIGGER;VALUE=DATE-TIME" not in body
    assert rings(us) == [at("2028-01-19T14:00Z"), at("2028-03-19T13:00Z"), at("2028-04-11T13:00Z")]
    assert not any(str(s).startswith("notice") for s in got)
    assert us.decoded("DTSTAMP") == at("2027-06-01T12:00Z")  # the date's last change, not the wall clock
    assert int(us["SEQUENCE"]) == 0
    assert str(us["UID"]) == uid_for(f"{file.id}#US:due:file:2027")
    description = str(us["DESCRIPTION"])
    for part in ("What it is: due date", "Who answers for it: Ada Lovelace", "Status: coming up, rolled from", NY,
                 f"Due by: Tuesday 2028-04-18 at 23:59 ({NY})"):
        assert part in description
    assert "Z)" not in description  # the calendar's zone, named: no UTC beside it
    # A step that acts for the customer is an event of its own, at 09:00 New York, with an end.
    rung = got[RUN_US]
    assert rung["DTSTART"].params["TZID"] == NY
    assert rung.decoded("DTSTART").isoformat() == "2028-04-15T09:00:00-04:00"
    assert rung.decoded("DTEND").isoformat() == "2028-04-15T09:30:00-04:00"
    assert "What it is: a step taken for you" in str(rung["DESCRIPTION"])
    assert "What it is: fixed date: can't be extended" in str(got["pay the 2027 tax · US"]["DESCRIPTION"])


def test_a_moved_date_keeps_its_uid_and_counts_the_move(client, key, acme):
    tc, subject, file, pay = acme
    token = subject_feed_rotate(subject=subject)
    before = ics(client, subject, token)
    old = vevents(before.content)
    us_uid = str(old["file the 2027 return · US"]["UID"])
    run_uid = str(old[RUN_US]["UID"])
    advance(tc.id, at("2028-04-16T00:00Z"))

    after = ics(client, subject, token)
    assert after.status_code == 200 and after["ETag"] != before["ETag"]
    assert ics(client, subject, token, HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 200
    cal = Calendar.from_ical(after.content)
    events = {str(ev["UID"]): ev for ev in cal.walk("VEVENT")}
    assert len(events) == len(cal.walk("VEVENT"))
    us = events[us_uid]
    assert us.decoded("DTSTART") == date(2028, 10, 16)
    assert int(us["SEQUENCE"]) == 1
    assert us.decoded("DTSTAMP") == at("2028-04-15T13:00Z")  # when the extension moved it
    assert "moved 1×, rolled from Sunday 2028-10-15: a weekend, on the Acme Robotics calendar" in str(us["DESCRIPTION"])
    # Its reminders move with it: notice 30d:2027@1 rings on 2028-09-16, 30 days before its new date.
    assert at("2028-09-16T13:00Z") in rings(us)
    assert at("2028-03-19T13:00Z") not in rings(us)
    # What already happened stays on the calendar: the run step under its uid, with what it did.
    got = vevents(after.content)
    assert f"- reminder, 90 days before: Tuesday 2028-02-15 at 09:00 ({NY}) (sent)" in str(
        got["file the 2027 return · US-NJ"]["DESCRIPTION"])
    assert "Status: done: the date moved" in str(events[run_uid]["DESCRIPTION"])
    assert cal.get_missing_tzids() == set()
    vobject.readOne(after.content.decode(), validate=True)

    body = calendar(client, key, subject, **{"from": "2027-02-01", "test_clock": tc.id})
    rows = body["data"]
    got = by_what(rows)
    assert got["file the 2027 return · US"]["date"] == "2028-10-16"
    assert got["file the 2027 return · US"]["uid"] == us_uid
    assert got["file the 2027 return · US"]["status"] == ("ahead, moved 1×, rolled from Sunday 2028-10-15: a weekend, on the Acme Robotics "
                                                             "calendar")
    assert got["file the 2027 return · US-NY"]["date"] == "2028-10-16"
    assert got["file the 2027 return · US-CA"]["date"] == "2028-11-15"
    assert got["file the 2027 return · US-NJ"]["date"] == "2028-05-15"
    assert got["pay the 2027 tax · US"]["date"] == "2028-04-18"
    notices_90d = [d for d in got["file the 2027 return · US"]["rungs"]
                   if d["what"] == "notice 90d · file the 2027 return · US"]
    assert [(d["date"], d["status"], d["current"]) for d in notices_90d] == [
        ("2028-01-19", "sent", False), ("2028-07-18", "armed", True)]
    assert len({d["uid"] for d in rows}) == len(rows)


def test_a_wrong_missing_or_revoked_token_is_a_404_that_leaks_nothing(client, acme):
    _, subject, _, _ = acme
    unknown = client.get("/subjects/sbj_nope/calendar.ics", {"token": "x"})
    assert unknown.status_code == 404
    assert ics(client, subject, None).content == unknown.content  # no token at all: no feed yet
    token = subject_feed_rotate(subject=subject)
    assert ics(client, subject, token).status_code == 200
    for bad in (None, "", "nope", token + "x", token.upper()):
        r = ics(client, subject, bad)
        assert (r.status_code, r.content) == (404, unknown.content)
    # A key is no way in: the feed takes only its token.
    r = client.get(f"/subjects/{subject.id}/calendar.ics", HTTP_AUTHORIZATION="Bearer sk_test_nope")
    assert (r.status_code, r.content) == (404, unknown.content)
    stored = Subject.objects.get(pk=subject.pk).feed_digest
    assert token not in stored and len(stored) == 64  # only its sha256 is kept
    newer = subject_feed_rotate(subject=subject)
    assert newer != token
    assert ics(client, subject, token).status_code == 404  # rotate: the old URL stops working
    assert ics(client, subject, newer).status_code == 200
    subject_feed_revoke(subject=subject)
    assert Subject.objects.get(pk=subject.pk).feed_digest == ""
    r = ics(client, subject, newer)
    assert (r.status_code, r.content) == (404, unknown.content)


def test_a_subject_without_a_calendar_is_on_utc(client, brand):
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"))
    subject = Subject.objects.create(brand=brand, domain=tc.id, kind="account", key_name="domain", key="acme.test",
                                     name="Acme", created_at=at("2027-01-01T00:00Z"))
    open_return(brand, tc, subject)
    token = subject_feed_rotate(subject=subject)
    body = ics(client, subject, token).content
    cal = Calendar.from_ical(body)
    assert cal.get_used_tzids() == set() and cal.get_missing_tzids() == set()
    assert str(cal["X-WR-TIMEZONE"]) == "UTC"
    us = vevents(body)["file the 2027 return · US"]
    assert us.decoded("DTSTART") == date(2028, 4, 15)
    assert "Due by: Saturday 2028-04-15 at 23:59 (UTC)" in str(us["DESCRIPTION"])
    vobject.readOne(body.decode(), validate=True)


# -- providers ---------------------------------------------------------------------------------------------------
def test_a_domain_app_adds_its_dates_through_a_provider(client, key, acme):
    tc, subject, _, _ = acme

    def minted(subject_, domain, from_date):
        assert (subject_.id, domain) == (subject.id, tc.id)
        yield Entry(date=date(2028, 2, 1), at=at("2028-02-01T14:00Z"), what="the 2027 return is minted",
                    kind="schedule", answers_for="the brand", status="ahead", uid=uid_for("sbn_7Hq2:annual:2027"))

    entries.register(minted)
    try:
        body = calendar(client, key, subject, **{"from": "2028-02-01"})
        assert body["data"][0]["what"] == "the 2027 return is minted"
        assert body["data"][0]["kind"] == "schedule" and body["data"][0]["local"] == "2028-02-01T09:00:00-05:00"
    finally:
        entries.unregister(minted)
    assert "the 2027 return is minted" not in by_what(calendar(client, key, subject)["data"])


# -- the customer portal ---------------------------------------------------------------------------------------
def test_the_portal_page_shows_whats_coming_up_in_the_calendars_zone(client, acme):
    tc, subject, _, _ = acme
    token = subject_feed_rotate(subject=subject)
    url = reverse("customer:subject-calendar", args=[subject.id])
    assert url == f"/portal/subjects/{subject.id}/calendar"
    r = client.get(url, {"token": token})
    assert r.status_code == 200 and r["Content-Type"].startswith("text/html")
    page = r.content.decode()
    header = page[page.index("<h1>"):page.index("</p>", page.index("<h1>"))]
    for part in ("Coming up", "Acme Robotics", "12-3456789", NY):
        assert part in header
    assert "08:00" in header and tc.id not in header  # a test clock's 12:00Z, in the zone, without its id
    assert f"times in {NY}" in page
    assert f'href="webcal://localhost:8000/subjects/{subject.id}/calendar.ics?token={token}"' in page
    assert "file the 2027 return · US-NJ" in page and "15 May 2028" in page
    assert "Subscribe" in page and "<script" not in page
    assert r["Referrer-Policy"] == "no-referrer"
    wrong = client.get(url, {"token": "nope"})
    assert wrong.status_code == 404 and "Acme" not in wrong.content.decode()
    assert client.get(reverse("customer:subject-calendar", args=["sbj_nope"]), {"token": token}).content == \
        wrong.content


# -- the CLI ------------------------------------------------------------------------------------------------------


def test_subjects_calendar_prints_the_seeds_table(acme):
    tc, subject, _, _ = acme
    lines = run("subjects", "calendar", subject.id, "--from", "2027-02-01", "--test-clock", tc.id).splitlines()
    n = ClockItem.objects.filter(clock__subject=subject).count()
    rows = lines[2:]
    assert lines[0] == (f"{subject.id} · taxpayer 12-3456789 · Acme Robotics · {NY} · {len(rows)} dates · "
                        f"webcal at /subjects/{subject.id}/calendar.ics")
    assert len(rows) == n  # each item's date; its rungs only with --rungs
    assert lines[1].split() == ["date", "what", "kind", "answers", "for", "status"]
    cells = [re.split(r"\s{2,}", r) for r in rows]
    assert all(len(c) == 5 for c in cells)
    assert ["2028-04-18", "file the 2027 return · US", "clock", "Ada Lovelace", "ahead, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, on the Acme Robotics calendar"] in cells
    assert ["2028-05-15", "file the 2027 return · US-NJ", "clock", "Ada Lovelace", "ahead"] in cells
    assert ["2028-04-18", "pay the 2027 tax · US", "hard", "Ada Lovelace", "ahead, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, on the Acme Robotics calendar"] in cells
    assert [c[0] for c in cells] == sorted(c[0] for c in cells)
    assert not any(c[2] == "rung" for c in cells)
    # --rungs lists each date's rungs under it, indented.
    with_rungs = run("subjects", "calendar", subject.id, "--from", "2027-02-01", "--rungs").splitlines()
    assert with_rungs[0] == lines[0]
    more = [re.split(r"\s{2,}", r.strip()) for r in with_rungs[2:]]
    us = more.index(["2028-04-18", "file the 2027 return · US", "clock", "Ada Lovelace", "ahead, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, on the Acme Robotics calendar"])
    assert more[us + 1] == ["2028-01-19", "notice 90d · file the 2027 return · US", "rung", "Ada Lovelace", "armed"]
    assert with_rungs[2 + us + 1].startswith("  2028-01-19")
    # Without --test-clock it lists the subject's own clock domain.
    assert run("subjects", "calendar", subject.id, "--from", "2027-02-01").splitlines() == lines


@pytest.mark.parametrize(("args", "code"), [
    (["subjects", "calendar", "sbj_nope"], "resource_missing"),
    (["subjects", "calendar", "{subject}", "--from", "Feb 1"], "invalid_request"),
    (["subjects", "calendar", "{subject}", "--test-clock", "tc_nope"], "resource_missing"),
    (["subjects", "feed", "sbj_nope", "--rotate"], "resource_missing"),
])
def test_subjects_errors_are_one_line(acme, args, code):
    _, subject, _, _ = acme
    with pytest.raises(CommandError) as err:
        run(*[a.replace("{subject}", subject.id) for a in args])
    assert str(err.value).startswith(f"{code}: ") and "\n" not in str(err.value)


def test_subjects_feed_prints_the_webcal_url_and_rotates(client, acme):
    _, subject, _, _ = acme
    url = run("subjects", "feed", subject.id).strip()  # no feed yet: issues one
    m = re.fullmatch(rf"webcal://localhost:8000/subjects/{subject.id}/calendar\.ics\?token=([A-Za-z0-9_-]+)", url)
    assert m
    first = m[1]
    assert ics(client, subject, first).status_code == 200
    shown = run("subjects", "feed", subject.id)
    assert "feed active" in shown and first not in shown  # the token is shown only when issued
    second = re.search(r"token=(\S+)", run("subjects", "feed", subject.id, "--rotate"))[1]
    assert second != first
    assert ics(client, subject, first).status_code == 404
    assert ics(client, subject, second).status_code == 200
    assert "feed revoked" in run("subjects", "feed", subject.id, "--revoke")
    assert ics(client, subject, second).status_code == 404


def test_the_feed_host_comes_from_settings(client, acme, settings):
    _, subject, _, _ = acme
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "FEED_HOST": "https://time.example.com/"}
    assert run("subjects", "feed", subject.id, "--rotate").startswith(
        f"webcal://time.example.com/subjects/{subject.id}/calendar.ics?token=")
