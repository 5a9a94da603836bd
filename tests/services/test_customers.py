"""A brand's first day with no shell (issue 23): calendars, subjects, subscriptions and orders over real HTTP,
and Idempotency-Key on every POST."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection

from calendars.models import Calendar, ClockItem, Subject
from services.models import Job, MoneyLine, Subscription
from tests.support.api import Client, new_clock
from tests.support.cli import run
from timers.models import Brand, Event, IdempotencyKey, Timer

pytestmark = pytest.mark.django_db(transaction=True)

FROZEN = "2027-01-20T14:00:00Z"
NY = {"name": "New York office", "zone": "America/New_York", "holidays": "US-DC"}


@pytest.fixture
def api(client_for) -> Client:
    return client_for("apis.tax")


@pytest.fixture
def clock(api) -> dict:
    return new_clock(api, FROZEN, "Acme")


def acme(api: Client, clock: dict, **extra):
    return api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme Robotics",
                                  "test_clock": clock["id"], **extra})


# -- calendars ---------------------------------------------------------------------------------------------------
def test_a_brand_with_no_calendar_is_refused_at_its_first_subject_never_utc(api, clock):
    r = acme(api, clock)
    assert r.status == 400 and r.code == "calendar_required" and r.body["error"]["param"] == "calendar", r.body
    assert not Subject.objects.exists()
    cal = api.post("/calendars", NY)
    assert cal.status == 201, cal.body
    assert cal.body["object"] == "calendar" and cal.body["default"] is True  # the brand's first
    assert cal.body["weekends"] == [5, 6] and cal.body["closes"] == "23:59"
    r = acme(api, clock)
    assert r.status == 201, r.body
    assert r.body["calendar"] == cal.body["id"] and r.body["zone"] == "America/New_York"
    assert r.body["object"] == "subject" and r.body["test_clock"] == clock["id"] and r.body["livemode"] is False


def test_calendars_list_retrieve_and_the_observed_closed_days(api):
    a = api.post("/calendars", {**NY, "closed_days": [{"date": "2028-03-01", "why": "IRS disaster day"}]}).body
    b = api.post("/calendars", {"name": "London", "zone": "Europe/London", "holidays": "GB",
                                "default": True}).body
    assert b["default"] is True
    listed = api.get("/calendars").body
    assert [c["name"] for c in listed["data"]] == ["London", "New York office"] and listed["has_more"] is False
    assert [c["default"] for c in listed["data"]] == [True, False]  # one default: the newest that asked
    got = api.get(f"/calendars/{a['id']}").body
    assert got["closed_days"] == [{"date": "2028-03-01", "why": "IRS disaster day"}]
    days = {d["date"]: d["why"] for d in got["observed"]["days"]}
    year = got["observed"]["years"][0]
    assert f"{year}-07-04" in days or f"{year}-07-05" in days or f"{year}-07-03" in days  # Independence Day
    assert any("Emancipation" in why for why in days.values())  # DC's own


def test_a_closed_day_added_rolls_every_open_date_and_the_zone_stays_while_dates_are_open(api, clock):
    cal = api.post("/calendars", NY).body
    subject = acme(api, clock).body
    assert api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                       "input": {"entity": "C corp", "states": ["CA"]}}).status == 201
    # The plan mints the 2026 return on 2027-02-01; order one now so dates are open today.
    job = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2026"})
    assert job.status == 201, job.body
    item = ClockItem.objects.get(clock__owner_ref=job.body["id"], clock__name="file", item="US")
    assert item.due_date.isoformat() == "2027-04-15"
    r = api.post(f"/calendars/{cal['id']}", {"closed_days": [{"date": "2027-04-15", "why": "office flood"}]})
    assert r.status == 200, r.body
    item.refresh_from_db()
    # Friday the 16th is Emancipation Day in DC, then a weekend: Monday the 19th.
    assert item.due_date.isoformat() == "2027-04-19" and item.moves == 1
    moved = Event.objects.filter(type="clock.moved", subject=item.owner_key).last()
    assert moved.data["by"] == "calendar" and moved.data["to"] == "2027-04-19"
    r = api.post(f"/calendars/{cal['id']}", {"zone": "America/Chicago"})
    assert r.status == 409 and r.code == "calendar_in_use", r.body
    assert Calendar.objects.get(pk=cal["id"]).zone == "America/New_York"


def test_calendar_bad_input_is_coded_and_writes_nothing(api):
    for body, param in (({**NY, "zone": "Mars/Olympus"}, "zone"),
                        ({**NY, "holidays": "XX"}, "holidays"),
                        ({**NY, "holidays": "US-ZZ"}, "holidays"),
                        ({**NY, "closes": "24:00"}, "closes"),
                        ({**NY, "weekends": [7]}, "weekends"),
                        ({**NY, "weekends": ["5"]}, "weekends"),
                        ({**NY, "closed_days": [{"date": "2028-02-30", "why": "x"}]}, "closed_days")):
        r = api.post("/calendars", body)
        assert r.status == 400, (body, r.body)
        assert r.body["error"]["param"].startswith(param), (body, r.body)
    assert not Calendar.objects.exists()
    api.post("/calendars", NY)
    r = api.post("/calendars", NY)
    assert r.status == 409 and r.code == "calendar_exists"
    assert Calendar.objects.count() == 1


# -- subjects ------------------------------------------------------------------------------------------------------
def test_subjects_checked_against_the_kind_grammar_and_unique_per_clock(api, clock):
    api.post("/calendars", NY)
    r = acme(api, clock, key="123")
    assert r.status == 400 and r.code == "invalid_subject_key" and r.body["error"]["param"] == "key"
    assert "12-3456789" in r.message  # the example
    r = api.post("/subjects", {"kind": "unicorn", "key": "x", "name": "X", "test_clock": clock["id"]})
    assert r.status == 400 and r.code == "invalid_kind" and "taxpayer" in r.message
    first = acme(api, clock).body
    r = acme(api, clock, name="Acme again")
    assert r.status == 409 and r.code == "subject_exists" and first["id"] in r.message
    assert Subject.objects.count() == 1
    other = new_clock(api, FROZEN, "another")
    assert acme(api, other).status == 201  # unique per clock, not per brand
    found = api.get(f"/subjects?kind=taxpayer&key=12-3456789&test_clock={clock['id']}").body
    assert [s["id"] for s in found["data"]] == [first["id"]]
    r = api.post(f"/subjects/{first['id']}", {"name": "Acme Robotics Inc.", "metadata": {"crm": "42"}})
    assert r.status == 200 and r.body["name"] == "Acme Robotics Inc." and r.body["metadata"] == {"crm": "42"}
    r = api.post(f"/subjects/{first['id']}", {"metadata": {"crm": ""}})
    assert r.body["metadata"] == {}


def test_a_test_key_makes_subjects_on_a_test_clock_and_modes_never_see_each_other(api, client_for, clock):
    api.post("/calendars", NY)
    r = api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme"})
    assert r.status == 403 and r.code == "live_mode_only"
    made = acme(api, clock).body
    live = client_for("apis.tax", live=True)
    assert live.get(f"/subjects/{made['id']}").status == 404
    assert live.post("/subscriptions", {"subject": made["id"], "plan": "tax-plan"}).status == 404
    globex = client_for("globex")
    assert globex.get(f"/subjects/{made['id']}").status == 404
    assert globex.post(f"/subjects/{made['id']}", {"name": "mine"}).status == 404
    for path, body in (("/subscriptions", {"plan": "tax-plan"}), ("/jobs", {"service": "estimate"}),
                       ("/portal_sessions", {})):
        r = globex.post(path, {"subject": made["id"], **body})
        assert r.status == 404 and r.code == "resource_missing", (path, r.body)
    cal = Calendar.objects.get(brand__name="apis.tax")
    assert globex.get(f"/calendars/{cal.id}").status == 404
    assert globex.post(f"/calendars/{cal.id}", {"name": "mine"}).status == 404
    assert globex.get("/calendars").body["data"] == []
    assert Subject.objects.get(pk=made["id"]).name == "Acme Robotics" and Calendar.objects.get(pk=cal.pk).name == NY["name"]
    live_made = live.post("/subjects", {"kind": "taxpayer", "key": "98-7654321", "name": "Beta"}).body
    assert live_made["livemode"] is True and live_made["test_clock"] is None
    assert api.get(f"/subjects/{live_made['id']}").status == 404


# -- subscriptions --------------------------------------------------------------------------------------------------
def test_subscribe_on_a_test_clock_starts_at_its_time_and_arms_the_first_cycle(api, clock):
    api.post("/calendars", NY)
    subject = acme(api, clock).body
    r = api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                    "input": {"entity": "C corp", "states": ["CA", "NY"]}})
    assert r.status == 201, r.body
    sub = r.body
    assert sub["object"] == "subscription" and sub["opened_at"] == FROZEN and sub["test_clock"] == clock["id"]
    assert sub["next_timer"] is not None
    keys = set(Timer.objects.filter(domain=clock["id"]).values_list("key", flat=True))
    assert f"{sub['id']}:cycle:renew:#2" in keys
    assert any(k.startswith(f"{sub['id']}:schedule:annual:") for k in keys)
    assert MoneyLine.objects.filter(subscription_id=sub["id"], kind="charge", amount_cents=240000).exists()
    r = api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                    "input": {"entity": "C corp", "states": ["CA"]}})
    assert r.status == 409 and r.code == "subscription_exists" and sub["id"] in r.message


def test_subscription_refusals_name_what_is_wrong_and_write_nothing(api, clock):
    api.post("/calendars", NY)
    subject = acme(api, clock).body
    before = (Timer.objects.count(), Event.objects.count())
    for body, code, param in (
            ({"plan": "tax-plan", "input": {"entity": "LLC"}}, "invalid_input", "input.entity"),
            ({"plan": "tax-plan", "input": {"states": ["california"]}}, "invalid_input", "input.states"),
            ({"plan": "annual-return"}, "not_a_plan", "plan"),
            ({"plan": "deal-desk"}, "subject_kind_mismatch", "plan"),
            ({"plan": "nope"}, "invalid_service", "plan")):
        r = api.post("/subscriptions", {"subject": subject["id"], **body})
        assert (r.status, r.code, r.body["error"].get("param")) == (400, code, param), (body, r.body)
    assert (Timer.objects.count(), Event.objects.count()) == before
    assert not Subscription.objects.exists()


def test_live_the_brands_tier_is_checked_at_the_subscription(client_for):
    live = client_for("apis.tax", live=True)
    Brand.objects.filter(name="apis.tax").update(tier="free")
    live.post("/calendars", NY)
    subject = live.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme"}).body
    r = live.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                     "input": {"entity": "C corp", "states": ["CA"]}})
    assert r.status == 403 and r.code == "plan_launch_required", r.body
    assert not Subscription.objects.exists()
    Brand.objects.filter(name="apis.tax").update(tier="launch")
    r = live.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                     "input": {"entity": "C corp", "states": ["CA"]}})
    assert r.status == 201 and r.body["test_clock"] is None, r.body


# -- orders ----------------------------------------------------------------------------------------------------------
def test_an_order_within_the_allowance_is_included_and_counted_beyond_it_priced(api, clock):
    api.post("/calendars", NY)
    subject = acme(api, clock).body
    sub = api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                      "input": {"entity": "C corp", "states": ["CA"]}}).body
    first = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2025"})
    assert first.status == 201, first.body
    assert first.body["price"]["cents"] == 0 and first.body["subscription"] == sub["id"]
    tagged = api.post("/jobs", {"subject": subject["id"], "service": "estimate", "period": "2027-Q2",
                                "metadata": {"order": "A-17"}}).body
    assert tagged["metadata"] == {"order": "A-17"} and api.get(f"/jobs/{tagged['id']}").body["metadata"] == {
        "order": "A-17"}
    assert sub["metadata"] == {}
    assert api.get(f"/subscriptions/{sub['id']}").body["usage"]["annual-return"] == {"used": 1, "of": 1}
    second = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2024"}).body
    assert second["price"]["cents"] == 120000  # the Service's price, beyond the plan's one return
    assert MoneyLine.objects.filter(job_id=second["id"], kind="charge", amount_cents=120000).exists()
    assert not MoneyLine.objects.filter(job_id=first.body["id"], kind="charge").exists()
    ordered = Event.objects.get(type="job.ordered", subject=second["id"])
    assert ordered.data["included"] is False and ordered.data["used"] == 2 and ordered.data["of"] == 1
    r = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2024"})
    assert r.status == 409 and r.code == "job_exists" and second["id"] in r.message
    r = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2024-Q1"})
    assert r.status == 400 and r.body["error"]["param"] == "period"
    assert Job.objects.filter(subject_id=subject["id"]).count() == 3


def test_an_order_with_no_plan_is_priced_and_takes_todays_period(api, clock):
    api.post("/calendars", NY)
    subject = acme(api, clock).body
    r = api.post("/jobs", {"subject": subject["id"], "service": "estimate", "input": {"entity": "C corp"}})
    assert r.status == 201, r.body
    assert r.body["period"] == "2027-Q1" and r.body["price"]["cents"] == 30000 and r.body["subscription"] is None


def test_an_order_reads_only_the_inputs_its_service_declares_and_the_plan_fills_only_those(api, clock):
    api.post("/calendars", NY)
    subject = acme(api, clock).body
    assert api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                       "input": {"entity": "C corp", "states": ["CA"]}}).status == 201
    # notice-response reads reply_by alone: the plan's entity and states are not its inputs, so not the job's.
    r = api.post("/jobs", {"subject": subject["id"], "service": "notice-response", "period": "2026",
                           "input": {"reply_by": "2027-03-01"}})
    assert r.status == 201, r.body
    assert Job.objects.get(pk=r.body["id"]).input == {"reply_by": "2027-03-01"}
    # A Service that declares no input reads the plan's (the annual return, its states) as before.
    r = api.post("/jobs", {"subject": subject["id"], "service": "annual-return", "period": "2025"})
    assert r.status == 201, r.body
    assert Job.objects.get(pk=r.body["id"]).input == {"entity": "C corp", "states": ["CA"]}
    # The order's own input is still checked whole: what the Service does not read is refused, nothing written.
    r = api.post("/jobs", {"subject": subject["id"], "service": "notice-response", "period": "2025",
                           "input": {"reply_by": "2027-03-01", "entity": "C corp"}})
    assert r.status == 400 and r.body["error"]["param"] == "input.entity", r.body
    assert Job.objects.filter(subject_id=subject["id"]).count() == 2
    # jobs create takes the same road.
    out = run("jobs", "create", "--subject", subject["id"], "--service", "notice-response", "--period", "2024",
              "--input", '{"reply_by": "2027-04-01"}')
    assert "notice-response 2024" in out
    assert Job.objects.get(service="notice-response", period="2024").input == {"reply_by": "2027-04-01"}


# -- Idempotency-Key ----------------------------------------------------------------------------------------------
def test_the_same_key_and_body_replays_the_first_answer(api):
    key = str(uuid.uuid4())
    first = api.post("/calendars", NY, headers={"Idempotency-Key": key})
    again = api.post("/calendars", NY, headers={"Idempotency-Key": key})
    assert first.status == again.status == 201
    assert again.body == first.body and again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert Calendar.objects.count() == 1
    other = api.post("/calendars", {**NY, "name": "Other"}, headers={"Idempotency-Key": key})
    assert other.status == 400 and other.code == "idempotency_key_in_use"
    assert Calendar.objects.count() == 1
    # Another mode's key, or another brand's, has answers of its own under the same key.
    live = Client(api.base, None)
    from timers.tenants import api_key_create
    _, secret = api_key_create(brand=Brand.objects.get(name="apis.tax"), live=True)
    live.key = secret
    r = live.post("/calendars", {**NY, "name": "Live"}, headers={"Idempotency-Key": key})
    assert r.status == 201 and "Idempotent-Replayed" not in r.headers


def test_a_refusal_is_replayed_but_a_body_that_did_not_validate_is_not_kept(api, clock):
    key = str(uuid.uuid4())
    bad = api.post("/calendars", {**NY, "zone": "Mars/Olympus"}, headers={"Idempotency-Key": key})
    assert bad.status == 400
    fixed = api.post("/calendars", NY, headers={"Idempotency-Key": key})  # the same key, the body fixed
    assert fixed.status == 201, fixed.body
    key2 = str(uuid.uuid4())
    r1 = api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme", "test_clock": clock["id"]},
                  headers={"Idempotency-Key": key2})
    assert r1.status == 201
    r2 = api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Acme", "test_clock": clock["id"]},
                  headers={"Idempotency-Key": key2})
    assert r2.status == 201 and r2.body == r1.body and r2.headers.get("Idempotent-Replayed") == "true"
    key3 = str(uuid.uuid4())
    conflict = api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Again",
                                      "test_clock": clock["id"]}, headers={"Idempotency-Key": key3})
    assert conflict.status == 409
    again = api.post("/subjects", {"kind": "taxpayer", "key": "12-3456789", "name": "Again",
                                   "test_clock": clock["id"]}, headers={"Idempotency-Key": key3})
    assert again.status == 409 and again.headers.get("Idempotent-Replayed") == "true"
    assert IdempotencyKey.objects.count() == 3  # the created calendar, the subject and the refusal


def test_a_bad_idempotency_key_is_refused(api):
    r = api.post("/calendars", NY, headers={"Idempotency-Key": "x" * 256})
    assert r.status == 400 and r.code == "invalid_idempotency_key"
    assert not Calendar.objects.exists()


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="two requests at once: PostgreSQL")
def test_a_key_sent_while_its_first_request_runs_is_409_and_the_first_lands_once(api, clock):
    """The first request is held inside its view (a row lock taken here), the second with the same key is
    answered at once, then the first finishes and a third replays it."""
    import psycopg
    from django.conf import settings

    api.post("/calendars", NY)
    subject = acme(api, clock).body
    db = settings.DATABASES["default"]
    blocker = psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
                              dbname=db["NAME"], autocommit=False)
    cur = blocker.cursor()
    cur.execute("SELECT id FROM calendars_subject WHERE id = %s FOR UPDATE", [subject["id"]])
    key = str(uuid.uuid4())
    body = {"name": "Acme Robotics, Inc."}
    results: dict[str, object] = {}

    def first():
        results["first"] = api.post(f"/subjects/{subject['id']}", body, headers={"Idempotency-Key": key})

    t = threading.Thread(target=first)
    t.start()
    try:
        for _ in range(100):  # wait until the first request is waiting on the row lock
            cur2 = connection.cursor()
            # A wait in this database only: the other test process's database is on the same server, and a
            # second request sent while that one waits would take the key first and wait behind the blocker.
            cur2.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                         "AND wait_event_type = 'Lock'")
            if cur2.fetchone()[0]:
                break
            threading.Event().wait(0.05)
        second = api.post(f"/subjects/{subject['id']}", body, headers={"Idempotency-Key": key})
        assert second.status == 409 and second.code == "idempotency_key_in_progress", second.body
    finally:
        blocker.rollback()
        blocker.close()
    t.join(30)
    assert results["first"].status == 200, results["first"].body
    third = api.post(f"/subjects/{subject['id']}", body, headers={"Idempotency-Key": key})
    assert third.status == 200 and third.headers.get("Idempotent-Replayed") == "true"
    assert Event.objects.filter(type="subject.updated", subject=subject["id"]).count() == 1
