"""Live and test modes kept apart, as Stripe keeps them: a live key (sk_live_…) sees and acts on the live
clock's objects only, a test key (sk_test_…) on the test clocks and their objects only. Another mode's id
answers the same 404 as another brand's, lists leave the other mode out, and nothing is created across."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from calendars.models import Calendar, Clock, Subject
from services.jobs import job_open
from services.models import Job, Subscription
from services.subscriptions import subscription_create
from tests.conftest import at
from timers.armer import DirectArmer
from timers.models import Event, TestClock, Timer, live_domain
from timers.tenants import api_key_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

INPUT = {"entity": "C corp", "states": ["CA"]}


@dataclass
class World:
    """One clock domain's objects: a subject, its subscription, a job with its clocks, timers and events."""

    domain: str
    subject: Subject
    sub: Subscription
    job: Job
    clock: Clock

    def timers(self) -> set[str]:
        return set(Timer.objects.filter(domain=self.domain).values_list("id", flat=True))

    def events(self) -> set[str]:
        return set(Event.objects.filter(domain=self.domain).values_list("id", flat=True))


def _world(brand, domain: str) -> World:
    cal, _ = Calendar.objects.get_or_create(brand=brand, name="apis.tax", defaults={
        "zone": "America/New_York", "holiday_country": "US", "holiday_subdiv": "DC"})
    subject = Subject.objects.create(brand=brand, domain=domain, kind="taxpayer", key_name="ein", key="12-3456789",
                                     name="Acme Robotics", calendar=cal, input={"entity": "C corp"},
                                     created_at=datetime(2027, 1, 20, 14, tzinfo=UTC))
    sub = subscription_create(brand=brand, domain=domain, subject=subject, service="tax-plan", input=INPUT)
    job = job_open(armer=DirectArmer(brand=brand, domain=domain), brand_id=brand.id, domain=domain,
                   service="annual-return", subject=subject, period="2027", input=INPUT, subscription=sub)
    clock = Clock.objects.get(domain=domain, owner_ref=job.id, name="file")
    return World(domain, subject, sub, job, clock)


@dataclass
class Modes:
    tc: TestClock
    live: World
    test: World
    keys: dict[str, str]  # "live" / "test" -> the brand's secret key of that mode


@pytest.fixture
def modes(brand) -> Modes:
    tc = test_clock_create(brand=brand, frozen_time=at("2027-01-20T14:00Z"), name="modes")
    return Modes(tc=tc, live=_world(brand, live_domain(brand.id)), test=_world(brand, tc.id),
                 keys={"live": api_key_create(brand=brand, live=True)[1], "test": api_key_create(brand=brand)[1]})


def call(client, key: str, method: str, path: str, body: dict | None = None):
    kw = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    if method == "GET":
        return client.get(path, **kw)
    return client.generic(method, path, data=json.dumps(body or {}), content_type="application/json",
                          **kw)


def ids(r) -> list[str]:
    assert r.status_code == 200, r.content
    return [row["id"] for row in r.json()["data"]]


def other_paths(w: World, tc: TestClock) -> list[tuple[str, str, dict | None]]:
    """Every read and write of the API on world ``w``'s objects."""
    timer = Timer.objects.filter(domain=w.domain, owner=w.sub.id).order_by("id").first()
    event = Event.objects.filter(domain=w.domain).order_by("seq").first()
    return [
        ("GET", f"/timers/{timer.id}", None),
        ("POST", f"/timers/{timer.id}/wake", None),
        ("GET", f"/events/{event.id}", None),
        ("GET", f"/subscriptions/{w.sub.id}", None),
        ("POST", f"/subscriptions/{w.sub.id}/cancel", None),
        ("POST", f"/subscriptions/{w.sub.id}/update", {"input": {"states": ["NY"]}}),
        ("POST", f"/subscriptions/{w.sub.id}/pause", {"note": "x"}),
        ("POST", f"/subscriptions/{w.sub.id}/resume", None),
        ("POST", f"/subjects/{w.subject.id}/events", {"type": "notice.received", "key": "CP2000-1",
                                                     "data": {"reply_by": "2027-03-01"}}),
        ("GET", f"/subjects/{w.subject.id}/calendar", None),
        ("GET", f"/jobs/{w.job.id}", None),
        ("POST", f"/jobs/{w.job.id}/deliver", None),
        ("POST", f"/jobs/{w.job.id}/cancel", None),
        ("POST", f"/jobs/{w.job.id}/activity", None),
        ("GET", f"/clocks/{w.clock.id}", None),
        ("POST", f"/clocks/{w.clock.id}/items/US/choose", {"option": "file late"}),
        ("POST", f"/clocks/{w.clock.id}/items/US/satisfy", None),
        # A brand's first day (issue 23): its customers, and putting them to work.
        ("GET", f"/subjects/{w.subject.id}", None),
        ("POST", f"/subjects/{w.subject.id}", {"name": "Renamed", "metadata": {"crm": "1"}}),
        ("POST", "/subscriptions", {"subject": w.subject.id, "plan": "tax-plan", "input": INPUT}),
        ("POST", "/jobs", {"subject": w.subject.id, "service": "estimate", "period": "2027-Q2"}),
        ("POST", "/portal_sessions", {"subject": w.subject.id}),
    ]


def state(w: World) -> tuple:
    """What a write could change in a world."""
    sub, job = Subscription.objects.get(pk=w.sub.pk), Job.objects.get(pk=w.job.pk)
    subject = Subject.objects.get(pk=w.subject.pk)
    return (subject.name, subject.metadata, Subscription.objects.filter(subject=subject).count(),
            Job.objects.filter(subject=subject).count(),
            sub.status, sub.cancel_at_period_end, sub.paused_at, sub.input, job.status,
            sorted(w.clock.items.values_list("item", "status")), w.timers(), w.events(),
            sorted(Timer.objects.filter(domain=w.domain).values_list("id", "status", "wakes")))


@pytest.mark.parametrize("mode", ["live", "test"])
def test_a_key_reads_and_acts_only_on_its_modes_objects(client, modes, mode):
    mine, theirs = (modes.live, modes.test) if mode == "live" else (modes.test, modes.live)
    key = modes.keys[mode]
    before = state(theirs)

    # Another mode's ids answer 404 resource_missing, the same as another brand's, for reads and writes.
    for method, path, body in other_paths(theirs, modes.tc):
        r = call(client, key, method, path, body)
        assert r.status_code == 404, (mode, path, r.content)
        assert r.json()["error"]["code"] == "resource_missing", (mode, path, r.content)
    assert state(theirs) == before  # nothing the calls reached changed

    # Its own ids answer.
    for method, path, _ in other_paths(mine, modes.tc):
        if method == "GET":
            assert call(client, key, "GET", path).status_code == 200, (mode, path)

    # Lists carry only its mode's objects; a cursor from the other mode is unknown.
    scope = "" if mode == "live" else f"?test_clock={modes.tc.id}"
    assert ids(call(client, key, "GET", f"/subscriptions{scope}")) == [mine.sub.id]
    assert ids(call(client, key, "GET", f"/jobs{scope}")) == [mine.job.id]
    assert ids(call(client, key, "GET", f"/subjects{scope}")) == [mine.subject.id]
    timers = ids(call(client, key, "GET", f"/timers{scope}{'&' if scope else '?'}limit=100"))
    assert timers and set(timers) == mine.timers()
    events = ids(call(client, key, "GET", "/events?limit=100"))
    assert events and set(events) == mine.events()
    sep = "&" if scope else "?"
    for path in (f"/timers{scope}{sep}starting_after={sorted(theirs.timers())[0]}",
                 f"/subscriptions{scope}{sep}starting_after={theirs.sub.id}",
                 f"/jobs{scope}{sep}starting_after={theirs.job.id}",
                 f"/subjects{scope}{sep}starting_after={theirs.subject.id}",
                 f"/events?starting_after={sorted(theirs.events())[0]}"):
        r = call(client, key, "GET", path)
        # As for a cursor that names nothing (its status is page()'s to choose): the other mode's is unknown.
        assert r.status_code in (400, 404), (path, r.content)
        assert (r.json()["error"]["code"], r.json()["error"]["param"]) == ("resource_missing", "starting_after")


def test_a_live_key_has_no_test_clocks(client, modes):
    key, tc = modes.keys["live"], modes.tc
    assert ids(call(client, key, "GET", "/test_clocks")) == []
    for method, path, body in [("GET", f"/test_clocks/{tc.id}", None),
                               ("POST", f"/test_clocks/{tc.id}/advance", {"to": "2027-02-01T00:00:00Z"}),
                               ("DELETE", f"/test_clocks/{tc.id}", None)]:
        r = call(client, key, method, path, body)
        assert r.status_code == 404 and r.json()["error"]["code"] == "resource_missing", (path, r.content)
    # Naming one in a list or an arm is the same 404, on the parameter.
    for path in ("timers", "subscriptions", "jobs", "events"):
        r = call(client, key, "GET", f"/{path}?test_clock={tc.id}")
        assert r.status_code == 404 and r.json()["error"]["param"] == "test_clock", (path, r.content)
    r = call(client, key, "GET", f"/subjects/{modes.live.subject.id}/calendar?test_clock={tc.id}")
    assert r.status_code == 404 and r.json()["error"]["param"] == "test_clock", r.content
    r = call(client, key, "POST", "/timers", {"key": "job_1:task:prep:2027", "owed_at": "2027-02-01T00:00:00Z",
                                              "handler": "noop", "test_clock": tc.id})
    assert r.status_code == 404 and r.json()["error"]["param"] == "test_clock", r.content
    # Creating one is refused with its code; nothing is made.
    count = TestClock.objects.count()
    r = call(client, key, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00:00Z"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "test_mode_only", r.content
    assert "sk_test_" in r.json()["error"]["message"]
    assert TestClock.objects.count() == count
    assert TestClock.objects.get(pk=tc.pk).status == tc.status  # the advance and delete above did nothing


def test_a_test_key_sees_nothing_of_the_live_clock_and_cannot_arm_on_it(client, modes):
    key = modes.keys["test"]
    # No test_clock is the live clock's (Stripe lists leave test-clock objects out unless asked): none here.
    for path in ("/timers", "/subscriptions", "/jobs"):
        assert ids(call(client, key, "GET", path)) == [], path
    assert modes.tc.id in ids(call(client, key, "GET", "/test_clocks"))
    live_timers = modes.live.timers()
    r = call(client, key, "POST", "/timers", {"key": "job_1:task:prep:2027", "owed_at": "2027-02-01T00:00:00Z",
                                              "handler": "noop"})
    assert r.status_code == 403, r.content
    assert r.json()["error"]["code"] == "live_mode_only" and r.json()["error"]["param"] == "test_clock"
    assert modes.live.timers() == live_timers
    r = call(client, key, "POST", "/timers", {"key": "job_1:task:prep:2027", "owed_at": "2027-02-01T00:00:00Z",
                                              "handler": "noop", "test_clock": modes.tc.id})
    assert r.status_code == 201 and r.json()["test_clock"] == modes.tc.id, r.content


def test_a_live_key_arms_on_the_live_clock(client, modes):
    r = call(client, modes.keys["live"], "POST", "/timers",
             {"key": "job_1:task:prep:2027", "owed_at": "2099-02-01T00:00:00Z", "handler": "noop"})
    assert r.status_code == 201 and r.json()["test_clock"] is None, r.content
    assert Timer.objects.get(pk=r.json()["id"]).domain == live_domain(modes.tc.brand_id)
    # and the test key does not see it
    r = call(client, modes.keys["test"], "GET", f"/timers/{r.json()['id']}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "resource_missing"
