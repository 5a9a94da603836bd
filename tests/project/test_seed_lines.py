"""Issue 13: the seeds' worked examples, line for line (each test against the seed's own numbers)."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from icalendar import Calendar

from calendars import specs
from calendars.clocks import clock_open, clock_step
from calendars.feed_tokens import subject_feed_rotate
from calendars.models import ClockItem, Subject
from calendars.specs import ClockSpec, DueInput
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from tests.support.cli import run
from tests.support.khal import khal_calendar
from timers import outbox, transports
from timers.advance import advance, run_requested_advances
from timers.armer import DirectArmer
from timers.compare import compare
from timers.models import Commit, Event, TestClock, Timer
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db


def _monthly_due(x: DueInput) -> date:
    return date(2028, 4, 18)


def _monthly_extend(x: DueInput) -> date:
    return date(2028, 10, 16)


def _file_due(x: DueInput) -> date:
    return date(2028, 4, 15)  # Saturday, before Emancipation Day (observed): rolls to Tuesday 2028-04-18


EFILE = specs.register("tests.seed.efile", ClockSpec(
    name="file", due=_file_due, items=("US",), submits={"file": "efile"}, answers_for="Ada Lovelace",
))
MONTHLY = specs.register("tests.seed.ack_monthly", ClockSpec(
    name="file", due=_monthly_due, items=("US",), rungs=("ack daily 1mo", "run tentative 3d"),
    moves={"extend": _monthly_extend}, runs={"tentative": "extend"}, answers_for="Ada Lovelace",
))


def test_ack_daily_1mo_after_a_move_supersedes_every_day_of_the_old_chain(brand):
    """`ack daily 1mo`: the chain asks once a day from 2028-03-18 to 04-17 (31 days); the extension on
    04-15 (run tentative 3d) moves the date, and every day of the old chain still ahead is superseded, so
    only the new chain asks (never twice a day)."""
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    clock = clock_open(armer=DirectArmer(brand=brand, domain=tc.id), brand=brand, domain=tc.id, subject=subject,
                       spec_name="tests.seed.ack_monthly", owner_ref="job_4Tx9", period="2027")
    first = Timer.objects.get(domain=tc.id, key=f"{clock.id}#US:rung:ack daily 1mo:2027 day 1@0")
    assert first.owed_at == at("2028-03-18T13:00Z") and first.data["days"] == 31
    advance(tc.id, at("2028-04-16T00:00Z"))  # 29 days asked, the run rung moved the date on 04-15
    item = ClockItem.objects.get(clock=clock, item="US")
    assert item.due_date == date(2028, 10, 16) and item.moves == 1
    old = Timer.objects.filter(domain=tc.id, key__contains=":rung:ack daily 1mo:2027 day ", key__endswith="@0")
    assert not old.filter(status="armed").exists()  # day 30 (armed when day 29 asked) is superseded
    assert old.filter(status="superseded").count() == 1
    assert old.get(status="superseded").key.endswith("day 30@0")
    advance(tc.id, at("2028-10-17T00:00Z"))
    asked = list(Event.objects.filter(domain=tc.id, type="clock.ack_requested").order_by("seq")
                 .values_list("owed_at", "key"))
    # Never two asks on one day: the old chain stopped at day 29, the new one ran its own 30 days.
    days = [o.date() for o, _ in asked]
    assert len(days) == len(set(days)) == 29 + 30
    assert not any(k.endswith("@0") for o, k in asked if o > at("2028-04-16T00:00Z"))


def test_after_a_gap_earlier_rungs_are_superseded_and_the_four_ways_agree(brand):
    """timers-and-replay's gap table: clock rungs send only the latest owed notice or escalate and record
    the earlier ones superseded (the timer's status, superseded_by the rung that was sent); every way of
    running the gap (one advance, daily, the live loop, every wake twice) records the same."""
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2028-04-12T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    # Opened late: notice 90d (01-19), notice 30d (03-19) and escalate 7d (04-11) are all owed by now.
    file, _ = open_return(brand, tc, subject, now=tc.frozen_time)
    ways = compare(tc.id, at("2028-04-13T00:00Z"), redeliver=True)
    assert len({w.sha256 for w in ways}) == 1 and ways[3].sent_twice == 0
    advance(tc.id, at("2028-04-13T00:00Z"))
    us = f"{file.id}#US"
    got = {t.key.split(":")[2]: t for t in Timer.objects.filter(domain=tc.id, owner=us, kind="rung")}
    escalate = got["escalate 7d"]
    assert escalate.status == "fired"
    for name in ("notice 90d", "notice 30d"):
        t = got[name]
        assert (t.status, t.by, t.superseded_by, t.fired_at) == ("superseded", "gap", escalate.id, None)
        assert not Commit.objects.filter(domain=tc.id, key=t.key).exists()
    sent = Event.objects.filter(domain=tc.id, subject=us, type__in=["clock.notice", "clock.escalate"])
    assert list(sent.values_list("type", flat=True)) == ["clock.escalate"]


# -- the feed in a real calendar client ------------------------------------------------------------------------
def khal_list(tmp_path: Path, body: bytes, zone: str, start: str, end: str) -> list[str]:
    """Import the feed into khal whose local zone is ``zone`` and list the days (tests/calendars/test_feed_words.py)."""
    out = khal_calendar(tmp_path, body, zone)("list", "--format", "{start-end-time-style} {title}",
                                              "--day-format", "{name} {date}", start, end)
    return [line.strip() for line in out.splitlines() if line.strip()]


def test_the_feed_reads_right_in_khal_in_berlin(client, brand, tmp_path):
    """The federal file date of 2028-04-18 (closing 23:59 New York) is an all-day event on 2028-04-18 in
    a Berlin calendar, not Wednesday 05:59-06:59; its notice and escalate rungs are VALARMs on it, and only
    steps that act (run, ack) are events of their own, with an end."""
    transports.register("notices", transports.RecordingTransport())
    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    subject = acme_subject(brand, tc.id)
    file, pay = open_return(brand, tc, subject)
    token = subject_feed_rotate(subject=subject)
    body = client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token}).content
    cal = Calendar.from_ical(body)
    us = next(ev for ev in cal.walk("VEVENT") if str(ev["SUMMARY"]) == "file the 2027 return · US")
    assert us.decoded("DTSTART") == date(2028, 4, 18) and us.decoded("DTEND") == date(2028, 4, 19)
    assert "Due by: Tuesday 2028-04-18 at 23:59 (America/New_York)" in str(us["DESCRIPTION"])
    # Relative to the date's start (its days nominal): each rings at 09:00 New York.
    alarms = [(str(a["DESCRIPTION"]), a.decoded("TRIGGER")) for a in us.walk("VALARM")]
    assert alarms == [("Reminder: file the 2027 return · US is due Tuesday 2028-04-18 (in 90 days)",
                       -timedelta(days=89, hours=15)),
                      ("Reminder: file the 2027 return · US is due Tuesday 2028-04-18 (in 30 days)",
                       -timedelta(days=29, hours=15)),
                      ("Urgent: file the 2027 return · US is due Tuesday 2028-04-18 (in 7 days)",
                       -timedelta(days=6, hours=15))]
    # Every timed event has an end: no reader invents a length.
    timed = [ev for ev in cal.walk("VEVENT") if not isinstance(ev.decoded("DTSTART"), date)
             or hasattr(ev.decoded("DTSTART"), "hour")]
    assert timed and all("DTEND" in ev for ev in timed)
    assert {str(ev["SUMMARY"]).split(" · ")[0] for ev in timed} == {"apis.test steps in if it's still open"}

    lines = khal_list(tmp_path, body, "Europe/Berlin", "2028-04-11", "2028-04-20")
    assert lines == [
        "Tuesday 2028-04-11",
        "|-> Daily check-in · file the 2027 return · US",
        "|-> Daily check-in · file the 2027 return · US-CA",
        "|-> Daily check-in · file the 2027 return · US-NY",
        "Wednesday 2028-04-12",
        "<-> Daily check-in · file the 2027 return · US",
        "<-> Daily check-in · file the 2027 return · US-CA",
        "<-> Daily check-in · file the 2027 return · US-NY",
        "Thursday 2028-04-13",
        "<-> Daily check-in · file the 2027 return · US",
        "<-> Daily check-in · file the 2027 return · US-CA",
        "<-> Daily check-in · file the 2027 return · US-NY",
        "Friday 2028-04-14",
        "<-> Daily check-in · file the 2027 return · US",
        "<-> Daily check-in · file the 2027 return · US-CA",
        "<-> Daily check-in · file the 2027 return · US-NY",
        "Saturday 2028-04-15",
        "<-> Daily check-in · file the 2027 return · US",
        "<-> Daily check-in · file the 2027 return · US-CA",
        "<-> Daily check-in · file the 2027 return · US-NY",
        "15:00-15:30 apis.test steps in if it's still open · file the 2027 return · US",
        "15:00-15:30 apis.test steps in if it's still open · file the 2027 return · US-CA",
        "15:00-15:30 apis.test steps in if it's still open · file the 2027 return · US-NY",
        "Sunday 2028-04-16",
        "<-> Daily check-in · file the 2027 return · US",
        "<-> Daily check-in · file the 2027 return · US-CA",
        "<-> Daily check-in · file the 2027 return · US-NY",
        "Monday 2028-04-17",
        "->| Daily check-in · file the 2027 return · US",
        "->| Daily check-in · file the 2027 return · US-CA",
        "->| Daily check-in · file the 2027 return · US-NY",
        "Tuesday 2028-04-18",
        "file the 2027 return · US",
        "file the 2027 return · US-CA",
        "file the 2027 return · US-NY",
        "pay the 2027 tax · US",
    ]


# -- Acme's calendar and its dates (the example, as loadexample makes it) ---------------------------------------
ROLLED = "rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, on the US federal calendar"


@pytest.fixture
def example(db):
    transports.register("notices", transports.RecordingTransport())
    run("loadexample", "apis_tax")
    tc = TestClock.objects.get(seed="apis_tax")
    subject = Subject.objects.get(domain=tc.id, key="12-3456789")
    return tc, subject


def cells(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()[2:]]


def test_acmes_calendar_lists_its_dates_out_to_the_carryforward(example):
    """`subjects calendar sbj_… --from 2027-02-01` on 2 February 2028 lists Acme's dates, not each rung, out
    to a carryforward (a clock that lives on the subject and outlives its job) that expires in 2046; the rungs
    are listed under their date with --rungs."""
    tc, subject = example
    advance(tc.id, at("2028-02-02T14:00Z"))
    text = run("subjects", "calendar", subject.id, "--from", "2027-02-01", "--test-clock", tc.id)
    rows = cells(text)
    assert text.splitlines()[0] == (f"{subject.id} · taxpayer 12-3456789 · Acme Robotics · America/New_York · "
                                    f"37 dates · webcal at /subjects/{subject.id}/calendar.ics")
    assert len(rows) == 37 and not any(r[2] == "rung" for r in rows)
    # The jobs' deadlines are dates too (services/people_dates.py): each return's and estimate's.
    assert ["2028-04-14", "deliver the 2027 return", "deadline", "the brand", "ahead"] in rows
    assert rows[-1] == ["2046-12-31", "carryforward · the 2026 return · US", "hard", "Ada Lovelace", "ahead"]
    assert ["2028-04-18", "file · the 2027 return · US", "clock", "Ada Lovelace", f"ahead, {ROLLED}"] in rows
    # The carryforward lives on the subject: the 2026 return's clock repinned when the 2027 return joined.
    carry = ClockItem.objects.get(clock__domain=tc.id, clock__name="carryforward").clock
    assert carry.lives_on == "subject" and carry.period == "2026"
    assert Event.objects.filter(domain=tc.id, type="clock.repinned", subject=carry.id,
                                owed_at=at("2028-02-01T14:00Z")).exists()
    # --rungs: each date's rungs under it.
    more = cells(run("subjects", "calendar", subject.id, "--from", "2027-02-01", "--test-clock", tc.id, "--rungs"))
    assert len(more) > 37 and [r for r in more if r[2] != "rung"] == rows
    assert more[-1] == ["2046-10-02", "notice 90d · carryforward · the 2026 return · US", "rung", "Ada Lovelace",
                        "armed"]


def test_the_2026_tax_is_kept_with_the_extension(example):
    """The seed's row `2027-04-15 pay the 2026 tax · hard · Ada Lovelace · kept 2027-04-12, with the
    extension`: the extension (run tentative 3d, 2027-04-12) commits the pay step, and the status says so."""
    tc, subject = example
    advance(tc.id, at("2027-05-01T00:00Z"))
    rows = cells(run("subjects", "calendar", subject.id, "--from", "2027-04-15", "--test-clock", tc.id))
    assert rows[0] == ["2027-04-15", "pay · the 2026 return · US", "hard", "Ada Lovelace",
                       "kept 2027-04-12, with the extension"]
    pay = ClockItem.objects.get(clock__domain=tc.id, clock__name="pay", clock__period="2026")
    assert pay.status == "satisfied" and pay.satisfied_at == at("2027-04-12T13:00Z")
    step = Event.objects.get(domain=tc.id, type="clock.step", subject=pay.owner_key)
    assert step.data["step"] == "pay" and step.owed_at == at("2027-04-12T13:00Z")
    kept = Event.objects.get(domain=tc.id, type="clock.satisfied", subject=pay.owner_key)
    assert kept.data["on_time"] is True and kept.data["with"] == "with the extension"
    assert not Event.objects.filter(domain=tc.id, type="clock.passed", subject=pay.owner_key).exists()


def test_the_extension_follows_the_seeds_order(example):
    """`2028-04-15 13:00Z extend · US accepted → US-CA accepted, US-NY accepted · US-NJ runs its own run
    tentative 3d on 2028-05-12`; US and NY move to 2028-10-16 (rolled from 10-15), CA to 2028-11-15, and the
    date to pay stays 2028-04-18, satisfied with the extension."""
    tc, subject = example
    advance(tc.id, at("2028-04-16T00:00Z"))
    file = ClockItem.objects.get(clock__domain=tc.id, clock__name="file", clock__period="2027", item="US").clock
    moved = Event.objects.filter(domain=tc.id, type="clock.moved", subject__startswith=f"{file.id}#",
                                 owed_at=at("2028-04-15T13:00Z")).order_by("seq")
    assert [(e.data["item"], e.data.get("follows"), e.data["to"]) for e in moved] == [
        ("US", None, "2028-10-16"), ("US-CA", "US", "2028-11-15"), ("US-NY", "US", "2028-10-16")]
    assert moved[0].data["rolled_from"] == "2028-10-15"
    # The followers ran no extension of their own; New Jersey (and Texas) run theirs three days before 05-15.
    runs = dict(Timer.objects.filter(domain=tc.id, key__startswith=f"{file.id}#", key__contains=":rung:run ")
                .values_list("owner", "owed_at"))
    assert runs == {f"{file.id}#US": at("2028-04-15T13:00Z"), f"{file.id}#US-NJ": at("2028-05-12T13:00Z"),
                    f"{file.id}#US-TX": at("2028-05-12T13:00Z")}
    ran = Event.objects.get(domain=tc.id, type="clock.rung_ran", subject=f"{file.id}#US", owed_at=moved[0].owed_at)
    after = list(Event.objects.filter(domain=tc.id, seq__gt=moved[0].seq, seq__lt=ran.seq).order_by("seq")
                 .values_list("type", "data__clock"))
    # The federal move, its followers', then the date to pay, kept with it: the order the seed prints.
    assert [t for t in after if t[0] in ("clock.moved", "clock.step", "clock.satisfied")] == [
        ("clock.moved", "file"), ("clock.moved", "file"), ("clock.step", "pay"), ("clock.satisfied", "pay")]
    pay = ClockItem.objects.get(clock__domain=tc.id, clock__name="pay", clock__period="2027")
    assert pay.due_date == date(2028, 4, 18) and pay.moves == 0 and pay.status == "satisfied"


def test_a_rolled_date_says_why_in_the_feed_and_the_portal(client, example):
    """A clock's date that rolled says why, and whose closed day it was: "rolled from Saturday 2028-04-15:
    Emancipation Day (observed) on Monday 04-17, on the US federal calendar", not only "rolled from"."""
    tc, subject = example
    advance(tc.id, at("2028-02-02T14:00Z"))
    token = subject_feed_rotate(subject=subject)
    cal = Calendar.from_ical(client.get(f"/subjects/{subject.id}/calendar.ics", {"token": token}).content)
    us = next(ev for ev in cal.walk("VEVENT") if str(ev["SUMMARY"]) == "file · the 2027 return · US")
    assert f"Status: coming up, {ROLLED}" in str(us["DESCRIPTION"]).replace("\n", " ")
    page = client.get(f"/portal/subjects/{subject.id}/calendar", {"token": token}).content.decode()
    assert f"coming up, {ROLLED}" in page


# -- the runtime's wording and rules --------------------------------------------------------------------------
def test_post_test_clocks_default_advance_works(client, example):
    """`POST /test_clocks/default/advance {"to":"2028-04-16T00:00:00Z"}`: each brand has a default test clock
    (its first; loadexample makes the example's), as the seed's example calls it."""
    tc, subject = example
    key = api_key_create(brand=tc.brand)[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    r = client.post("/test_clocks/default/advance", {"to": "2028-04-16T00:00:00Z"}, content_type="application/json",
                    **auth)
    assert r.status_code == 202, r.content
    assert r.json()["id"] == tc.id and r.json()["status"] == "advancing"
    assert run_requested_advances() == 1
    assert client.get("/test_clocks/default", **auth).json()["frozen_time"] == "2028-04-16T00:00:00Z"
    # The seed's 2028-04-15 13:00Z lines came out of it: the federal date moved, and pay was kept.
    assert Event.objects.filter(domain=tc.id, type="clock.moved", owed_at=at("2028-04-15T13:00Z")).count() == 3
    assert client.get("/events?test_clock=default&type=clock.satisfied", **auth).json()["data"]
    # A brand with no test clock has no default yet: a 404 that says how to make one.
    other = brand_get_or_create(name="apis.other")
    r = client.post("/test_clocks/default/advance", {"to": "2028-04-16T00:00:00Z"}, content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {api_key_create(brand=other)[1]}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "resource_missing"
    assert "POST /test_clocks" in r.json()["error"]["message"]


def test_the_week_trace_header_reads_as_the_seeds(arm, clock):
    """`tc_… · 2026-11-24 09:00:00Z → 2026-12-01 09:00:00Z · UTC · 10 fired · 0 held · each instant in place
    order`, then our extra counts."""
    arm("job_7Hq7:ask:glossary:1", "2026-11-24T14:02:11Z")
    arm("sbn_7Hq2:cycle:renew:#2", "2026-11-25T14:02:11Z", handler="repeat",
        data={"every": {"days": 30}, "count": 3, "n": 2})
    for day in range(26, 30):
        arm(f"job_7Hq7:ask:glossary:{day}", f"2026-11-{day}T14:02:11Z")
        arm(f"job_7Hq8:deadline:at_risk:{day}", f"2026-11-{day}T16:30:05Z")
    lines = run("tick", "--to", "2026-12-01T09:00Z", "--test-clock", clock.id, "--trace").splitlines()
    assert lines[0] == (f"{clock.id} · 2026-11-24 09:00:00Z → 2026-12-01 09:00:00Z · UTC · 10 fired · 0 held · "
                        "each instant in place order · 1 armed · 1 pass")
    assert lines[1].split() == ["pass", "owed", "fired", "place", "kind", "on", "what"]


class Receipts:
    """The outside system: it receipts each submission with what ``receipt`` says (at 00:01 the next day)."""

    def __init__(self, receipt: dict):
        self.receipt = receipt
        self.sent: list[dict] = []

    def send(self, submission_id: str, payload: dict) -> dict:
        self.sent.append(payload)
        return dict(self.receipt)

    def lookup(self, submission_id: str) -> dict | None:
        return None


@pytest.mark.parametrize(("receipt", "on_time", "judged_by"), [
    # The outside system's receipt time decides: received 00:01 the next day, New York, is late.
    ({"received_at": "2028-04-19T04:01:00Z"}, False, "received_at"),
    # An e-filed return is on time by its postmark in the filer's own zone: 23:58 New York, on the due date.
    ({"received_at": "2028-04-19T04:01:00Z", "postmark": "2028-04-18T23:58:00"}, True, "postmark"),
])
def test_a_submit_steps_receipt_time_judges_on_time(brand, receipt, on_time, judged_by):
    """Whose time decides: a submission sent at 23:58 New York on the due date (the gate commits it on time)
    that the outside system receipts at 00:01 the next day."""
    transports.register("efile", far := Receipts(receipt))
    tc = test_clock_create(brand=brand, frozen_time=at("2028-04-19T03:58Z"), name="acme")  # 23:58 New York
    subject = acme_subject(brand, tc.id)
    clock = clock_open(armer=DirectArmer(brand=brand, domain=tc.id), brand=brand, domain=tc.id, subject=subject,
                       spec_name="tests.seed.efile", owner_ref="job_4Tx9", period="2027")
    item = ClockItem.objects.select_related("clock__subject__calendar").get(clock=clock, item="US")
    assert item.due_at == at("2028-04-19T03:59Z")  # closes 23:59 New York
    assert clock_step(armer=DirectArmer(brand=brand, domain=tc.id), item=item, step="file") == "submitted"
    assert ClockItem.objects.get(pk=item.pk).status == "open"  # committed and sent; the receipt decides
    outbox.deliver(tc.id)
    assert far.sent[0]["sent_at"] == "2028-04-19T03:58:00Z" and far.sent[0]["zone"] == "America/New_York"
    kept = Event.objects.get(domain=tc.id, type="clock.satisfied", subject=item.owner_key)
    assert (kept.data["on_time"], kept.data["judged_by"]) == (on_time, judged_by)
    assert ClockItem.objects.get(pk=item.pk).status == "satisfied"
