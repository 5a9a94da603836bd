"""The domain API over real HTTP: apis.tax's Acme Robotics, ticked to 2028-02-01, seen through its key.

Every job, clock and subscription carries next_timer: the earliest armed timer it owns, in tick order.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command

from calendars import specs
from calendars.clocks import clock_open
from calendars.models import Clock, ClockItem
from calendars.specs import ClockSpec
from services.api_json import jobs_json
from services.jobs import next_timer
from services.models import Job, Subscription
from tests.conftest import at
from tests.support.acme import acme_subject, open_return
from tests.support.api import Client
from timers import tenants, test_clocks
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Brand, Event, Timer

pytestmark = pytest.mark.django_db(transaction=True)

NOW = "2028-02-01T20:00Z"
TICK_ORDER = ("owed_at", "place", "opened_at", "key")


@dataclass
class Tax:
    api: Client
    tc: str
    subject: str
    sub: str

    def job(self, period: str = "2027", service: str = "annual-return") -> Job:
        return Job.objects.get(domain=self.tc, subscription_id=self.sub, service=service, period=period)

    def clock(self, job: Job, name: str) -> Clock:
        return Clock.objects.get(domain=self.tc, owner_ref=job.id, name=name)


@pytest.fixture
def tax(live_server, transactional_db) -> Tax:
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    tc = text.split("test clock ")[1].split()[0]
    subject = text.split("subject ")[1].split()[0]
    sub = text.split("subscription ")[1].split()[0]
    call_command("tick", "--to", NOW, "--test-clock", tc, stdout=StringIO())
    _, secret = tenants.api_key_create(brand=Brand.objects.get(name="apis.tax"))
    return Tax(Client(live_server.url, secret), tc, subject, sub)


@pytest.fixture
def globex(live_server, transactional_db) -> Client:
    _, secret = tenants.api_key_create(brand=tenants.brand_get_or_create(name="globex"))
    return Client(live_server.url, secret)


def first_armed(domain: str, *owners: str) -> Timer:
    """What next_timer should be, straight from the table: the first armed timer of these owners or their items."""
    timers = [t for t in Timer.objects.filter(domain=domain, status="armed").order_by(*TICK_ORDER)
              if t.owner in owners or t.owner.split("#")[0] in owners]
    return timers[0]


def summary(t: Timer) -> dict:
    return {"id": t.id, "key": t.key, "owed_at": t.owed_at.strftime("%Y-%m-%dT%H:%M:%SZ"), "kind": t.kind,
            "on": t.owner}


# -- subscriptions ---------------------------------------------------------------------------------------------
def test_the_subscription_shows_its_allowances_and_next_timer(tax):
    r = tax.api.get(f"/subscriptions?test_clock={tax.tc}")
    assert r.status == 200, r.body
    assert r.body["object"] == "list" and r.body["url"] == "/subscriptions" and r.body["has_more"] is False
    [listed] = r.body["data"]
    r = tax.api.get(f"/subscriptions/{tax.sub}")
    assert r.status == 200, r.body
    sub = r.body
    assert sub == listed
    assert sub["object"] == "subscription" and sub["id"] == tax.sub and sub["service"] == "tax-plan"
    assert sub["subject"] == tax.subject and sub["test_clock"] == tax.tc
    assert sub["status"] == "active" and sub["cancel_at_period_end"] is False
    assert sub["cycle"] == 2 and sub["cycle_started_at"] == "2028-01-20T14:00:00Z"  # renewed a year on
    assert sub["price"] == {"cents": 240_000, "currency": "usd", "display": "$2,400.00", "every": "year"}
    assert sub["usage"]["annual-return"] == {"used": 1, "of": 1}  # the 2027 return, minted on 2028-02-01
    assert sub["usage"]["estimate"] == {"used": 0, "of": 4} and sub["usage"]["question"] == {"used": 0, "of": 12}
    assert sub["input"]["states"] == ["CA", "NY", "NJ", "TX"]  # Texas was added in March 2027
    assert sub["version"].startswith("sha256:")

    nxt = sub["next_timer"]
    assert nxt == summary(first_armed(tax.tc, tax.sub))
    assert nxt["kind"] in ("money", "cycle", "schedule") and nxt["on"] == tax.sub
    # The 2028 Q1 estimate is minted ten days before its payment, before the 2029 renewal and the 2028 return.
    assert nxt["key"] == f"{tax.sub}:schedule:estimate:2028-Q1", nxt
    ahead = Timer.objects.filter(domain=tax.tc, owner=tax.sub, status="armed")
    assert {t.kind for t in ahead} == {"schedule", "cycle"}
    assert all(iso >= nxt["owed_at"] for iso in (summary(t)["owed_at"] for t in ahead))
    assert next_timer(domain=tax.tc, owner=tax.sub).owed_at == at(nxt["owed_at"])  # the service function agrees

    assert [s["id"] for s in tax.api.get(f"/subscriptions?test_clock={tax.tc}&subject={tax.subject}").body["data"]] \
        == [tax.sub]
    assert tax.api.get(f"/subscriptions?test_clock={tax.tc}&subject=sbj_nope").body["data"] == []
    assert tax.api.get("/subscriptions").body["data"] == []  # the live clock's: none


def test_cancel_and_update_a_subscription(tax):
    r = tax.api.post(f"/subscriptions/{tax.sub}/update", {"input": {"states": ["CA", "NY", "NJ", "TX", "FL"]}})
    assert r.status == 200, r.body
    assert r.body["input"]["states"][-1] == "FL" and r.body["input"]["entity"] == "C corp"
    updated = Event.objects.filter(domain=tax.tc, type="subscription.updated").order_by("seq").last()
    assert updated.data["input"]["states"][-1] == "FL" and updated.owed_at == at(NOW)
    r = tax.api.post(f"/subscriptions/{tax.sub}/update", {"input": ["FL"]})
    assert r.status == 400 and r.code == "invalid_request" and r.body["error"]["param"] == "input", r.body
    r = tax.api.post(f"/subscriptions/{tax.sub}/update", {})
    assert r.status == 400 and r.body["error"]["param"] == "input", r.body

    r = tax.api.post(f"/subscriptions/{tax.sub}/cancel")
    assert r.status == 200, r.body
    assert r.body["cancel_at_period_end"] is True and r.body["status"] == "active"
    assert Subscription.objects.get(pk=tax.sub).cancel_at_period_end
    assert Event.objects.get(domain=tax.tc, type="subscription.cancel_scheduled").data == {"cycle": 2}
    assert tax.api.get(f"/subscriptions/{tax.sub}").body["cancel_at_period_end"] is True

    # The next renewal ends it; an ended subscription changes no more.
    advance(tax.tc, at("2029-01-21T00:00Z"))
    assert tax.api.get(f"/subscriptions/{tax.sub}").body["status"] == "ended"
    for path, body in ((f"/subscriptions/{tax.sub}/cancel", None),
                       (f"/subscriptions/{tax.sub}/update", {"input": {"states": []}})):
        r = tax.api.post(path, body)
        assert r.status == 409 and r.code == "subscription_not_active", r.body


# -- jobs ---------------------------------------------------------------------------------------------------------
def test_the_2027_return_carries_its_clocks_and_next_timer(tax, django_assert_num_queries):
    job = tax.job()
    file, pay = tax.clock(job, "file"), tax.clock(job, "pay")
    r = tax.api.get(f"/jobs/{job.id}")
    assert r.status == 200, r.body
    got = r.body
    assert got["object"] == "job" and got["service"] == "annual-return" and got["period"] == "2027"
    assert got["subscription"] == tax.sub and got["subject"] == tax.subject and got["schedule"] == "annual"
    assert got["status"] == "open" and got["late"] is False and got["test_clock"] == tax.tc
    assert got["opened_at"] == "2028-02-01T14:00:00Z" and got["closed_at"] is None
    assert got["late_at"] is not None and got["late_at"].endswith("Z")
    assert got["price"]["cents"] == 0 and got["price"]["display"] == "$0.00"  # 1 of 1: in the plan
    assert sorted(got["clocks"]) == sorted([file.id, pay.id])
    # US, CA and NY rang their notice 90d as the job opened; NJ's and Texas's (due 05-15) ring on 02-15,
    # before pay's notice 30d and the job's own deadlines. Of the two, tick order takes NJ's key first.
    nxt = got["next_timer"]
    assert nxt["owed_at"] == "2028-02-15T14:00:00Z" and nxt["kind"] == "rung"
    assert nxt["key"] == f"{file.id}#US-NJ:rung:notice 90d:2027@0" and nxt["on"] == f"{file.id}#US-NJ"
    assert nxt == summary(first_armed(tax.tc, job.id, file.id, pay.id))

    r = tax.api.get(f"/jobs?test_clock={tax.tc}&subscription={tax.sub}&limit=100")
    assert r.status == 200, r.body
    listed = {j["id"]: j for j in r.body["data"]}
    assert listed[job.id] == got
    assert {(j["service"], j["period"]) for j in listed.values()} >= {("annual-return", "2026"),
                                                                      ("annual-return", "2027"),
                                                                      ("estimate", "2027-Q4")}
    for j in listed.values():  # the list computes each job's next timer as the detail does
        # A clock that lives on the subject (the 2026 return's carryforward) is not the job's to list.
        clocks = Clock.objects.filter(domain=tax.tc, owner_ref=j["id"], lives_on="job").values_list("id", flat=True)
        assert sorted(j["clocks"]) == sorted(clocks)
        assert j["next_timer"] == tax.api.get(f"/jobs/{j['id']}").body["next_timer"]
    jobs = list(Job.objects.filter(domain=tax.tc))
    with django_assert_num_queries(2):  # the clocks, then the timers: never one per job or clock
        assert {j["id"]: j for j in jobs_json(jobs)} == listed
    page = tax.api.get(f"/jobs?test_clock={tax.tc}&limit=2").body
    assert len(page["data"]) == 2 and page["has_more"] is True
    rest = tax.api.get(f"/jobs?test_clock={tax.tc}&limit=100&starting_after={page['data'][-1]['id']}").body
    assert len(rest["data"]) == len(listed) - 2
    r = tax.api.get(f"/jobs?test_clock={tax.tc}&status=open&subject={tax.subject}&limit=100")
    assert {j["id"] for j in r.body["data"]} == {i for i, j in listed.items() if j["status"] == "open"}
    assert tax.api.get(f"/jobs?test_clock={tax.tc}&status=asleep").status == 400


def test_deliver_cancel_and_activity(tax):
    job = tax.job()
    r = tax.api.post(f"/jobs/{job.id}/activity", {"what": "the client sent the K-1s"})
    assert r.status == 200, r.body
    assert Event.objects.get(domain=tax.tc, type="job.activity", subject=job.id).data["what"] == \
        "the client sent the K-1s"
    r = tax.api.post(f"/jobs/{job.id}/deliver", {"keeps": {"secrets": 1}})
    assert r.status == 400 and r.code == "unknown_keeps", r.body
    assert tax.api.get(f"/jobs/{job.id}").body["status"] == "open"
    r = tax.api.post(f"/jobs/{job.id}/deliver")  # annual-return keeps nothing of its own (the plan does)
    assert r.status == 200, r.body
    assert r.body["status"] == "delivered" and r.body["closed_at"] == "2028-02-01T20:00:00Z"
    assert not Timer.objects.filter(domain=tax.tc, owner=job.id, status="armed").exists()  # deadlines stopped
    assert r.body["next_timer"]["on"].startswith("clk_")  # its clocks keep their dates
    r = tax.api.post(f"/jobs/{job.id}/deliver")
    assert r.status == 409 and r.code == "job_not_open", r.body

    est = tax.job("2027-Q4", "estimate")
    r = tax.api.post(f"/jobs/{est.id}/cancel", {"reason": "the client paid it"})
    assert r.status == 200, r.body
    assert r.body["status"] == "canceled" and r.body["next_timer"] is None
    assert set(ClockItem.objects.filter(clock__owner_ref=est.id).values_list("status", flat=True)) <= {
        "voided", "satisfied", "due", "passed"}
    assert Event.objects.get(domain=tax.tc, type="job.canceled", subject=est.id).data["reason"] == "the client paid it"
    for path in (f"/jobs/{est.id}/cancel", f"/jobs/{est.id}/activity"):
        r = tax.api.post(path)
        assert r.status == 409 and r.code == "job_not_open", (path, r.body)


# -- clocks -------------------------------------------------------------------------------------------------------
def test_the_file_clock_shows_its_dates_in_new_york(tax):
    job = tax.job()
    file = tax.clock(job, "file")
    r = tax.api.get(f"/clocks/{file.id}")
    assert r.status == 200, r.body
    got = r.body
    assert got["object"] == "clock" and got["name"] == "file" and got["period"] == "2027"
    assert got["owner_ref"] == job.id and got["lives_on"] == "job" and got["hard"] is False
    assert got["answers_for"] == "Ada Lovelace" and got["zone"] == "America/New_York"
    assert got["version"] == job.version and got["test_clock"] == tax.tc
    items = {i["item"]: i for i in got["items"]}
    assert set(items) == {"US", "US-CA", "US-NY", "US-NJ", "US-TX"}
    us, nj = items["US"], items["US-NJ"]
    assert us["civil"] == "2028-04-15" and us["due_date"] == "2028-04-18"  # past Emancipation Day (observed)
    assert "Emancipation Day" in us["rolled_why"]
    assert us["due_at"] == "2028-04-19T03:59:00Z" and us["local"] == "2028-04-18T23:59:00-04:00"
    assert nj["due_date"] == "2028-05-15" and nj["local"] == "2028-05-15T23:59:00-04:00" and nj["rolled_why"] is None
    assert us["status"] == "open" and us["moves"] == 0
    # US rang its notice 90d; its next is the notice 60d the June 2027 deploy added (the 2027 return runs
    # 2027-06). NJ's next is its notice 90d, and so is the clock's.
    assert us["next_timer"]["key"] == f"{file.id}#US:rung:notice 60d:2027@0"
    assert nj["next_timer"]["key"] == f"{file.id}#US-NJ:rung:notice 90d:2027@0"
    assert got["next_timer"] == nj["next_timer"] == tax.api.get(f"/jobs/{job.id}").body["next_timer"]
    for i in got["items"]:
        assert i["next_timer"] == summary(first_armed(tax.tc, f"{file.id}#{i['item']}"))

    r = tax.api.post(f"/clocks/{file.id}/items/US/choose", {"option": "file late"})
    assert r.status == 409 and r.code == "clock_not_due", r.body
    assert not Event.objects.filter(domain=tax.tc, type="clock.chosen").exists()
    r = tax.api.post(f"/clocks/{file.id}/items/US/choose", {})
    assert r.status == 400 and r.body["error"]["param"] == "option", r.body
    for path, body in ((f"/clocks/{file.id}/items/US-FL/choose", {"option": "file late"}),
                       (f"/clocks/{file.id}/items/-/satisfy", {"by": "Ada Lovelace"}),
                       ("/clocks/clk_nope/items/US/satisfy", {})):
        r = tax.api.post(path, body)
        assert r.status == 404 and r.code == "resource_missing", (path, r.body)

    r = tax.api.post(f"/clocks/{file.id}/items/US/satisfy", {"by": "Ada Lovelace"})
    assert r.status == 200, r.body
    us = {i["item"]: i for i in r.body["items"]}["US"]
    assert us["status"] == "satisfied" and us["satisfied_at"] == "2028-02-01T20:00:00Z" and us["next_timer"] is None
    assert Event.objects.get(domain=tax.tc, type="clock.satisfied", subject=f"{file.id}#US").data["on_time"] is True
    assert tax.api.post(f"/clocks/{file.id}/items/US/satisfy").status == 200  # again: nothing changes

    # Taken back over the API until the date passes: open, its due armed again, clock.reopened on the record.
    r = tax.api.post(f"/clocks/{file.id}/items/US/reopen", {"by": "Ada Lovelace"})
    assert r.status == 200, r.body
    us = {i["item"]: i for i in r.body["items"]}["US"]
    assert us["status"] == "open" and us["satisfied_at"] is None and us["next_timer"] is not None
    assert Event.objects.get(domain=tax.tc, type="clock.reopened", subject=f"{file.id}#US").data["by"] == "Ada Lovelace"
    r = tax.api.post(f"/clocks/{file.id}/items/US/reopen", {})
    assert r.status == 409 and r.code == "clock_not_done", r.body


def test_a_passed_hard_date_refuses_the_step_with_409(live_server, transactional_db):
    brand = tenants.brand_get_or_create(name="apis.test")
    _, secret = tenants.api_key_create(brand=brand)
    api = Client(live_server.url, secret)
    tc = test_clocks.test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="acme")
    file, pay = open_return(brand, tc, acme_subject(brand, tc.id))
    advance(tc.id, at("2028-04-20T00:00Z"))
    r = api.get(f"/clocks/{pay.id}")
    assert r.status == 200 and r.body["items"][0]["status"] == "passed", r.body
    assert r.body["hard"] is True and r.body["next_timer"] is None
    r = api.post(f"/clocks/{pay.id}/items/US/choose", {"option": "pay late", "by": "Ada Lovelace"})
    assert r.status == 409 and r.code == "date_passed", r.body
    assert "2028-04-18" in r.message
    assert not Event.objects.filter(domain=tc.id, type="clock.chosen").exists()  # the refusal kept nothing
    r = api.post(f"/clocks/{pay.id}/items/US/choose", {"option": "shrug"})
    assert r.status == 400 and r.code == "unknown_option", r.body
    # A clock of the subject's with one unnamed item is addressed as "-".
    specs.register("tests.domain_api.statute", ClockSpec(name="assess", due=lambda x: date(2031, 4, 15),
                                                         lives_on="subject"))
    subject = file.subject
    statute = clock_open(armer=DirectArmer(brand=brand, domain=tc.id), brand=brand, domain=tc.id, subject=subject,
                         spec_name="tests.domain_api.statute", owner_ref=subject.id, period="2027")
    r = api.get(f"/clocks/{statute.id}")
    assert r.status == 200 and [i["item"] for i in r.body["items"]] == [None], r.body
    assert r.body["next_timer"]["key"] == f"{statute.id}:due:assess:2027@0"
    r = api.post(f"/clocks/{statute.id}/items/-/satisfy")
    assert r.status == 200 and r.body["items"][0]["status"] == "satisfied" and r.body["next_timer"] is None, r.body


# -- brands and keys ---------------------------------------------------------------------------------------------
def test_another_brands_key_sees_none_of_it_and_no_key_is_401(tax, globex):
    job = tax.job()
    file = tax.clock(job, "file")
    paths = [
        ("GET", f"/subscriptions/{tax.sub}", None),
        ("POST", f"/subscriptions/{tax.sub}/cancel", None),
        ("POST", f"/subscriptions/{tax.sub}/update", {"input": {"states": []}}),
        ("GET", f"/jobs/{job.id}", None),
        ("POST", f"/jobs/{job.id}/deliver", None),
        ("POST", f"/jobs/{job.id}/cancel", None),
        ("POST", f"/jobs/{job.id}/activity", None),
        ("GET", f"/clocks/{file.id}", None),
        ("POST", f"/clocks/{file.id}/items/US/choose", {"option": "file late"}),
        ("POST", f"/clocks/{file.id}/items/US/satisfy", None),
        ("GET", f"/subscriptions?test_clock={tax.tc}", None),
        ("GET", f"/jobs?test_clock={tax.tc}", None),
    ]
    for method, path, body in paths:
        r = globex.call(method, path, {} if body is None and method == "POST" else body)
        assert r.status == 404 and r.code == "resource_missing", (path, r.body)
        r = tax.api.call(method, path, {} if body is None and method == "POST" else body, key="")
        assert r.status == 401 and r.code == "invalid_api_key", (path, r.body)
    assert globex.get("/subscriptions").body["data"] == [] and globex.get("/jobs").body["data"] == []
    r = globex.get(f"/jobs?starting_after={job.id}")
    assert r.status == 404 and r.code == "resource_missing", r.body
    # Untouched by all of that.
    assert tax.api.get(f"/jobs/{job.id}").body["status"] == "open"
    assert tax.api.get(f"/subscriptions/{tax.sub}").body["cancel_at_period_end"] is False
    for path in ("/jobs/%00", "/subscriptions/sbn_nope", "/clocks/clk_nope", f"/clocks/{file.id}/items/%00/satisfy"):
        r = tax.api.call("POST" if path.endswith("satisfy") else "GET", path, {} if path.endswith("satisfy") else None)
        assert r.status == 404 and r.code == "resource_missing", (path, r.body)


def test_the_schema_lists_the_domain_paths(live_server):
    with urllib.request.urlopen(live_server.url + "/openapi.json", timeout=30) as resp:
        doc = json.loads(resp.read())
    for path in ("/subscriptions", "/subscriptions/{subscription_id}", "/subscriptions/{subscription_id}/cancel",
                 "/subscriptions/{subscription_id}/update", "/jobs", "/jobs/{job_id}", "/jobs/{job_id}/deliver",
                 "/jobs/{job_id}/cancel", "/jobs/{job_id}/activity", "/clocks/{clock_id}",
                 "/clocks/{clock_id}/items/{item}/choose", "/clocks/{clock_id}/items/{item}/satisfy",
                 "/clocks/{clock_id}/items/{item}/reopen", "/clocks/{clock_id}/penalties"):
        assert path in doc["paths"], path
    for name in ("Subscription", "Job", "Clock", "TimerSummary"):
        assert name in doc["components"]["schemas"], name


def test_pause_and_resume_a_subscriptions_schedules_over_http(tax):
    api, tc, sub = tax.api, tax.tc, Subscription.objects.get(pk=tax.sub)
    r = api.post(f"/subscriptions/{sub.id}/pause", {"note": "books are late"})
    assert r.status == 200, r.body
    assert r.body["paused_at"] is not None and r.body["pause_note"] == "books are late"
    assert api.post(f"/subscriptions/{sub.id}/pause", {}).code == "subscription_not_running"
    held = Timer.objects.filter(domain=tc, owner=sub.id, kind="schedule", status="held")
    assert held.count() == 2  # the next annual and estimate mints
    r = api.post(f"/subscriptions/{sub.id}/resume")
    assert r.status == 200 and r.body["paused_at"] is None
    assert not Timer.objects.filter(domain=tc, owner=sub.id, kind="schedule", status="held").exists()
    assert api.post(f"/subscriptions/{sub.id}/resume").code == "subscription_not_paused"


def test_an_event_on_a_subject_mints_its_job_over_http(tax, globex):
    r = tax.api.post(f"/subjects/{tax.subject}/events",
                     {"type": "notice.received", "key": "CP2000-7", "data": {"reply_by": "2028-03-31"}})
    assert r.status == 200, r.body
    (job,) = r.body["data"]
    assert job["service"] == "notice-response" and job["period"] == "CP2000-7" and len(job["clocks"]) == 1
    again = tax.api.post(f"/subjects/{tax.subject}/events",
                         {"type": "notice.received", "key": "CP2000-7", "data": {"reply_by": "2028-03-31"}})
    assert again.status == 200 and again.body["data"] == []
    assert tax.api.post(f"/subjects/{tax.subject}/events", {"type": "Bad Type", "key": "x"}).status == 400
    assert globex.post(f"/subjects/{tax.subject}/events", {"type": "notice.received", "key": "x"}).status == 404


def test_a_postponement_over_http_moves_the_date_as_calendar_postpone(tax):
    """A disaster-relief notice, reached by a user: the date moves, its rungs re-arm by calendar.postpone, and
    the deadline written before it ('5d before file') follows."""
    job = tax.job()
    clock = tax.clock(job, "file")
    late_before = job.late_at
    r = tax.api.post(f"/clocks/{clock.id}/items/US/postpone", {"to": "2028-06-15", "notice": "IR-2028-41"})
    assert r.status == 200
    us = next(i for i in r.body["items"] if i["item"] == "US")
    assert us["due_date"] == "2028-06-15"
    moved = Event.objects.get(domain=tax.tc, type="clock.moved", subject=f"{clock.id}#US")
    assert moved.data["notice"] == "IR-2028-41"
    assert set(Timer.objects.filter(domain=tax.tc, owner=f"{clock.id}#US", status="superseded")
               .values_list("by", flat=True)) == {"calendar.postpone"}
    job.refresh_from_db()
    assert job.late_at == late_before  # the deadline follows the earliest file date: CA and NY stay on 04-18
    r = tax.api.post(f"/clocks/{clock.id}/items/US/postpone", {"to": "2028-13-01", "notice": "x"})
    assert r.status == 400


def test_a_due_re_run_over_http_moves_a_date_by_due_input(tax):
    """A commit changed what the due reads (the notice's reply_by, corrected): the due runs again, and its new
    answer is clock.moved {by: 'due'}, re-armed by due.input."""
    r = tax.api.post(f"/subjects/{tax.subject}/events", {"type": "notice.received", "key": "CP2000-9",
                                                         "data": {"reply_by": "2028-05-19"}})
    job = Job.objects.get(pk=r.body["data"][0]["id"])
    clock = tax.clock(job, "reply")
    assert ClockItem.objects.get(clock=clock).due_date.isoformat() == "2028-05-19"
    r = tax.api.post(f"/clocks/{clock.id}/inputs", {"inputs": {"reply_by": "2028-06-02"}})
    assert r.status == 200 and r.body["items"][0]["due_date"] == "2028-06-02"
    moved = Event.objects.get(domain=tax.tc, type="clock.moved", subject=f"{clock.id}#US")
    assert moved.data["by"] == "due"
    assert set(Timer.objects.filter(domain=tax.tc, owner=f"{clock.id}#US", status="superseded")
               .values_list("by", flat=True)) == {"due.input"}


def test_a_penalty_notice_over_http_is_credited_up_to_the_guarantees_cap_once_per_notice(tax, globex):
    from services.models import MoneyLine

    job = tax.job()
    pay, file = tax.clock(job, "pay"), tax.clock(job, "file")
    Clock.objects.filter(pk=pay.id).update(guarantee={"cap_usd": 500})
    # Ada Lovelace (the customer's) answers for it: the brand's guarantee does not cover her date.
    r = tax.api.post(f"/clocks/{pay.id}/penalties", {"notice": "CP14", "amount": 30_000})
    assert r.status == 409 and r.body["error"]["code"] == "guarantee_not_brands", r.body
    Clock.objects.filter(pk=pay.id).update(answers_for="the brand", assigned=True, contact=None)  # handed to the brand
    got = [tax.api.post(f"/clocks/{pay.id}/penalties", {"notice": n, "amount": 30_000, "currency": "usd"})
           for n in ("CP14", "CP501", "CP503")]
    assert [r.status for r in got] == [201, 201, 201], [r.body for r in got]
    assert [r.body["credited_cents"] for r in got] == [30_000, 20_000, 0]  # capped at $500
    assert (got[0].body["amount"], got[0].body["currency"]) == (30_000, "usd")  # cents, never read as dollars
    assert got[0].body["guarantee_cap_cents"] == 50_000 and got[0].body["period"] == "2027"
    assert got[2].body["money_line"] is None
    lines = MoneyLine.objects.filter(job=job, kind="credit")
    assert sorted(lines.values_list("amount_cents", flat=True)) == [20_000, 30_000]
    # The same notice again: its first credit, and nothing more recorded.
    again = tax.api.post(f"/clocks/{pay.id}/penalties", {"notice": "CP14", "amount": 30_000})
    assert again.status == 201 and again.body["money_line"] == got[0].body["money_line"]
    assert Event.objects.filter(domain=tax.tc, type="clock.penalty", subject=pay.id).count() == 3
    assert lines.count() == 2
    # No guarantee: recorded, nothing credited.
    r = tax.api.post(f"/clocks/{file.id}/penalties", {"notice": "CP2000", "amount": 10_000})
    assert r.status == 201 and r.body["credited_cents"] == 0 and r.body["guarantee_cap_cents"] == 0
    # Bad input and other brands' clocks: a clear error, nothing recorded.
    for body, param, code in (({"notice": "CP1", "amount": -5}, "amount", "invalid_amount"),
                              ({"amount": 5}, "notice", "invalid_request"),
                              ({"notice": "CP1", "amount": "lots"}, "amount", "invalid_amount"),
                              ({"notice": "CP1", "amount": "300.00"}, "amount", "invalid_amount"),
                              ({"notice": "CP1", "amount": 300.0}, "amount", "invalid_amount"),
                              ({"notice": "CP1", "amount": 300.5}, "amount", "invalid_amount"),
                              ({"notice": "CP1", "amount": True}, "amount", "invalid_amount"),
                              ({"notice": "CP1", "amount": 5, "currency": "eur"}, "currency", "invalid_currency")):
        r = tax.api.post(f"/clocks/{pay.id}/penalties", body)
        assert r.status == 400 and (r.body["error"]["param"], r.body["error"]["code"]) == (param, code), r.body
    assert tax.api.post("/clocks/clk_nope/penalties", {"notice": "CP1", "amount": 5}).status == 404
    assert globex.post(f"/clocks/{pay.id}/penalties", {"notice": "CP1", "amount": 5}).status == 404
    assert Event.objects.filter(domain=tax.tc, type="clock.penalty").count() == 4
    # The credits are collected by their money timers, as any line.
    call_command("tick", "--to", "2028-02-02T00:00Z", "--test-clock", tax.tc, stdout=StringIO())
    assert set(lines.values_list("status", flat=True)) == {"collected"}
