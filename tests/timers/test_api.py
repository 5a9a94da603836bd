"""The REST API over real HTTP: a live server, urllib, and two brands that never see each other."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from tests.support.api import Client, Reply, new_clock
from timers.advance import run_requested_advances
from timers.models import Event, Timer

pytestmark = pytest.mark.django_db(transaction=True)

T0 = "2026-11-24T09:00:00Z"


@pytest.fixture
def acme(client_for) -> Client:
    return client_for("acme")


@pytest.fixture
def acme_live(client_for) -> Client:
    """Acme's live key: the live clock's timers (a test key sees only test clocks')."""
    return client_for("acme", live=True)


@pytest.fixture
def globex(client_for) -> Client:
    return client_for("globex")


def arm(api: Client, key: str, owed_at: str, clock: dict | None = None, **extra) -> Reply:
    body = {"key": key, "owed_at": owed_at, "handler": "noop", **extra}
    if clock is not None:
        body["test_clock"] = clock["id"]
    return api.post("/timers", body)


# -- auth -----------------------------------------------------------------------------------------------
def test_no_key_or_a_bad_key_is_401(acme):
    for key in ("", "sk_test_nope"):  # none, and a wrong one
        r = acme.get("/timers", key=key)
        assert r.status == 401, r.body
        assert r.code == "invalid_api_key"
        assert r.body["error"]["type"] == "invalid_request_error"
        assert r.headers.get("WWW-Authenticate", "").startswith("Bearer")
    r = acme.get("/timers", headers={"Authorization": "Token abc"}, key="")
    assert r.status == 401 and r.code == "invalid_api_key"


def test_basic_auth_with_the_key_as_username(acme):
    basic = base64.b64encode(f"{acme.key}:".encode()).decode()
    r = Client(acme.base, None).get("/test_clocks", headers={"Authorization": f"Basic {basic}"})
    assert r.status == 200, r.body
    assert r.body["object"] == "list"


# -- a clock's life: arm, advance, the worker, the record, wake, backward, delete ------------------------
def test_test_clock_advance_fires_and_records(acme):
    clock = new_clock(acme)
    assert clock["object"] == "test_clock" and clock["status"] == "ready"
    assert clock["frozen_time"] == T0

    r = arm(acme, "job_4Tx9:task:prepare:2027", "2026-11-25T14:00:00Z", clock, data={"what": "prepared"})
    assert r.status == 201, r.body
    timer = r.body
    assert timer["object"] == "timer" and timer["status"] == "armed"
    assert timer["test_clock"] == clock["id"] and timer["on"] == "job_4Tx9" and timer["place"] == 4
    assert timer["handler"] == "noop" and timer["commit"] is None

    r = acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-12-01T09:00:00Z"})
    assert r.status == 202, r.body
    assert r.body["status"] == "advancing"
    assert r.body["status_details"]["advancing"]["target_frozen_time"] == "2026-12-01T09:00:00Z"

    r = acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-12-02T09:00:00Z"})
    assert r.status == 409 and r.code == "test_clock_advancing", r.body

    assert run_requested_advances() == 1

    r = acme.get(f"/test_clocks/{clock['id']}")
    assert r.status == 200 and r.body["status"] == "ready", r.body
    assert r.body["frozen_time"] == "2026-12-01T09:00:00Z" and r.body["status_details"] == {}

    r = acme.get("/events?type=test_clock.ready")
    assert r.status == 200, r.body
    assert [e["subject"] for e in r.body["data"]] == [clock["id"]]
    assert r.body["data"][0]["test_clock"] == clock["id"]

    r = acme.get("/events")
    fired = [e for e in r.body["data"] if e["type"] == "timer.fired"]
    assert [e["key"] for e in fired] == ["job_4Tx9:task:prepare:2027"]
    assert fired[0]["owed_at"] == "2026-11-25T14:00:00Z"
    assert acme.get("/events?type=timer.*").body["data"] == fired
    assert acme.get(f"/events?test_clock={clock['id']}&type=timer.fired").body["data"] == fired
    assert acme.get(f"/events/{fired[0]['id']}").body == fired[0]

    r = acme.get(f"/timers?on=job_4Tx9&test_clock={clock['id']}")
    assert r.status == 200, r.body
    assert r.body["object"] == "list" and r.body["url"] == "/timers" and r.body["has_more"] is False
    [listed] = r.body["data"]
    assert listed["id"] == timer["id"] and listed["status"] == "fired"
    assert listed["fired_at"] == "2026-11-25T14:00:00Z"
    commit = listed["commit"]
    assert commit["outcome"] == "committed" and fired[0]["id"] in commit["events"]
    assert acme.get("/timers?on=job_4Tx9").body["data"] == []  # the live clock's: none

    r = acme.post(f"/timers/{timer['id']}/wake")
    assert r.status == 200, r.body
    assert r.body["replayed"] is True and r.body["commit"]["id"] == commit["id"]
    assert acme.get(f"/timers/{timer['id']}").body["wakes"] == listed["wakes"] + 1

    r = acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-11-30T09:00:00Z"})
    assert r.status == 409 and r.code == "test_clock_backward", r.body
    assert "POST /test_clocks" in r.message and "2026-11-30T09:00:00Z" in r.message


def test_advancing_to_where_it_is_is_fine(acme):
    clock = new_clock(acme)
    r = acme.post(f"/test_clocks/{clock['id']}/advance", {"to": T0, "redeliver": True})
    assert r.status == 202 and r.body["status_details"]["advancing"]["redeliver"] is True
    run_requested_advances()
    assert acme.get(f"/test_clocks/{clock['id']}").body["status"] == "ready"


def test_a_locked_database_is_503_database_busy_not_a_500(acme, monkeypatch):
    """SQLite's lock errors (another writer held it past the busy timeout, or a shared-cache table lock, which
    never waits) are a moment's busy, not a bug: 503 with Retry-After, the request did nothing."""
    from django.db import OperationalError

    import timers.test_clocks

    clock = new_clock(acme)
    for message, status, code in (("database table is locked: timers_testclock", 503, "database_busy"),
                                  ("database is locked", 503, "database_busy"),
                                  ("no such column: nope", 500, "internal_error")):
        def raises(*args, message=message, **kwargs):
            raise OperationalError(message)

        monkeypatch.setattr(timers.test_clocks, "test_clock_get", raises)
        r = acme.get(f"/test_clocks/{clock['id']}")
        assert (r.status, r.code) == (status, code)
        assert (r.headers.get("Retry-After") == "1") is (status == 503)
    monkeypatch.undo()
    assert acme.get(f"/test_clocks/{clock['id']}").status == 200


def test_an_advance_that_meets_a_locked_database_goes_on_not_failed(acme, monkeypatch):
    """SQLite's lock taken by another writer (an API read of the clock) rolls the batch back: the advance runs
    again from its last committed batch, and a lock that stays taken leaves the clock advancing, never failed."""
    from django.db import OperationalError

    import timers.advance

    monkeypatch.setattr(timers.advance, "BUSY_PAUSE", 0.001)
    real, calls = timers.advance.advance, []

    def busy_then_real(*args, busy: int, **kwargs):
        calls.append(1)
        if len(calls) <= busy:
            raise OperationalError("database table is locked: timers_testclock")
        return real(*args, **kwargs)

    clock = new_clock(acme)
    arm(acme, "job_c0:task:call:0", T0, clock)
    acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-11-25T09:00:00Z"})
    monkeypatch.setattr(timers.advance, "advance", lambda *a, **k: busy_then_real(*a, busy=2, **k))
    assert run_requested_advances() == 1
    assert acme.get(f"/test_clocks/{clock['id']}").body["status"] == "ready" and len(calls) == 3
    assert Timer.objects.get(key="job_c0:task:call:0").status == "fired"

    calls.clear()
    acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-11-26T09:00:00Z"})
    monkeypatch.setattr(timers.advance, "advance", lambda *a, **k: busy_then_real(*a, busy=99, **k))
    run_requested_advances()
    assert acme.get(f"/test_clocks/{clock['id']}").body["status"] == "advancing"
    assert len(calls) == timers.advance.BUSY_TRIES + 1


def test_delete_voids_the_clock(acme):
    clock = new_clock(acme)
    timer = arm(acme, "job_1:deadline:late:2027", "2026-12-24T09:00:00Z", clock).body
    r = acme.delete(f"/test_clocks/{clock['id']}")
    assert r.status == 200, r.body
    assert r.body == {"id": clock["id"], "object": "test_clock", "deleted": True}
    assert acme.get(f"/test_clocks/{clock['id']}").status == 404
    assert acme.get(f"/test_clocks/{clock['id']}").code == "resource_missing"
    assert acme.get("/test_clocks").body["data"] == []
    assert acme.delete(f"/test_clocks/{clock['id']}").status == 404
    r = acme.get(f"/timers/{timer['id']}")
    assert r.body["status"] == "superseded" and r.body["by"] == "test_clock.deleted"
    assert Timer.objects.get(pk=timer["id"]).owed_at is None
    assert arm(acme, "job_1:deadline:late:2028", "2026-12-24T09:00:00Z", clock).status == 404
    deleted = Event.objects.get(domain=clock["id"], type="test_clock.deleted")
    assert deleted.data == {"timers_voided": 1, "sends_voided": 0}


def test_unknown_urls_answer_json(acme):
    r = acme.get("/nope")
    assert r.status == 404 and r.code == "resource_missing"


def test_live_timers_and_on_matches_a_clocks_occurrences(acme_live):
    for key in ("clk_8Tx1#US:rung:notice 90d:2027@0", "clk_8Tx1#US-NY:rung:notice 90d:2027@0",
                "clk_8Tx10:rung:notice 90d:2027@0", "clk_8Tx1:due:file:2027"):
        r = arm(acme_live, key, "2099-01-19T14:00:00Z")
        assert r.status == 201 and r.body["test_clock"] is None, r.body
    keys = {t["key"] for t in acme_live.get("/timers?on=clk_8Tx1").body["data"]}
    assert keys == {"clk_8Tx1#US:rung:notice 90d:2027@0", "clk_8Tx1#US-NY:rung:notice 90d:2027@0",
                    "clk_8Tx1:due:file:2027"}
    r = acme_live.get("/timers?on=clk_8Tx1%23US")
    assert [t["key"] for t in r.body["data"]] == ["clk_8Tx1#US:rung:notice 90d:2027@0"]
    assert len(acme_live.get("/timers?status=armed").body["data"]) == 4
    assert acme_live.get("/timers?status=fired").body["data"] == []


# -- brands ---------------------------------------------------------------------------------------------
def test_brands_see_only_their_own(acme, globex):
    clock = new_clock(acme)
    timer = arm(acme, "job_1:task:prep:2027", "2026-11-25T09:00:00Z", clock).body
    acme.post(f"/test_clocks/{clock['id']}/advance", {"to": "2026-11-26T09:00:00Z"})
    run_requested_advances()
    assert len(acme.get("/events").body["data"]) == 2  # timer.fired, test_clock.ready

    mine = new_clock(globex, name="globex's")
    assert [c["id"] for c in globex.get("/test_clocks").body["data"]] == [mine["id"]]
    assert [c["id"] for c in acme.get("/test_clocks").body["data"]] == [clock["id"]]
    assert globex.get("/events").body["data"] == []
    assert globex.get("/timers").body["data"] == []
    for r in (
        globex.get(f"/test_clocks/{clock['id']}"),
        globex.get(f"/timers/{timer['id']}"),
        globex.post(f"/timers/{timer['id']}/wake"),
        globex.get(f"/timers?test_clock={clock['id']}"),
        globex.get(f"/events?test_clock={clock['id']}"),
        globex.post(f"/test_clocks/{clock['id']}/advance", {"to": "2027-01-01T00:00:00Z"}),
        globex.delete(f"/test_clocks/{clock['id']}"),
        arm(globex, "job_2:task:prep:2027", "2026-11-25T09:00:00Z", clock),
        acme.get(f"/test_clocks/{mine['id']}"),
    ):
        assert r.status == 404 and r.code == "resource_missing", r.body
    r = globex.get(f"/events?starting_after={acme.get('/events').body['data'][0]['id']}")
    assert r.status == 404 and r.code == "resource_missing" and r.body["error"]["param"] == "starting_after"
    assert acme.get(f"/test_clocks/{clock['id']}").body["status"] == "ready"  # untouched


# -- bad input is a 4xx with a code, never a 500 ---------------------------------------------------------
def test_arm_errors(acme):
    clock = new_clock(acme)
    r = arm(acme, "not a key", "2026-11-25T09:00:00Z", clock)
    assert r.status == 400 and r.code == "invalid_key", r.body
    r = arm(acme, " job_1:task:prep:2027", "2026-11-25T09:00:00Z", clock)
    assert r.status == 400 and r.code == "invalid_key", r.body
    r = arm(acme, "job_1:task:prep:2027", "2026-11-25T09:00:00Z", clock, handler="nope")
    assert r.status == 400 and r.code == "unknown_handler", r.body
    assert arm(acme, "job_1:task:prep:2027", "2026-11-25T09:00:00Z", clock).status == 201
    r = arm(acme, "job_1:task:prep:2027", "2026-11-26T09:00:00Z", clock)
    assert r.status == 409 and r.code == "timer_exists", r.body
    r = arm(acme, "job_1:task:prep:2028", "2026-11-25T09:00:00", clock)
    assert r.status == 400 and r.code == "invalid_time" and "owed_at" in r.message, r.body
    r = acme.post("/timers", {"owed_at": T0})
    assert r.status == 400 and r.body["error"]["param"] == "key", r.body
    r = arm(acme, "job_1:task:prep:2029", T0, clock, data={"bad": "nul\u0000"})
    assert r.status == 400 and "data" in r.message, r.body
    r = arm(acme, "job_1:task:prep:2029", T0, clock, data=[1])
    assert r.status == 400 and "data" in r.message, r.body


def test_bad_bodies_and_params(acme):
    clock = new_clock(acme, frozen_time=1796115600)  # unix seconds, as Stripe takes them
    assert clock["frozen_time"] == "2026-12-01T09:00:00Z"
    path = f"/test_clocks/{clock['id']}/advance"

    r = acme.post(path, raw=b'{"to": ')
    assert r.status == 400 and r.code == "invalid_json", r.body
    r = acme.post(path, raw=b"[" * 100_000)
    assert r.status == 400 and r.code == "invalid_json", r.body
    r = acme.post(path, {})
    assert r.status == 400 and r.code == "invalid_request" and r.message.startswith("to:"), r.body
    for bad in ("tomorrow", "2026-13-01T00:00Z", True, 1.5, None, "0001-01-01T00:00:00+01:00", 10**20):
        r = acme.post(path, {"to": bad})
        assert r.status == 400 and r.code == "invalid_time" and "to" in r.message, (bad, r.body)
    r = acme.post("/test_clocks", {"frozen_time": "2026-12-01T09:00"})
    assert r.status == 400 and "zone" in r.message, r.body

    for query in ("limit=0", "limit=101", "limit=x", "status=asleep"):
        r = acme.get(f"/timers?{query}")
        assert r.status == 400 and r.code == "invalid_request", (query, r.body)
    for path_ in ("/timers/tmr_nope", "/timers/%00", "/test_clocks/tc_nope", "/events/evt_nope",
                  "/timers?test_clock=tc_nope"):
        r = acme.get(path_)
        assert r.status == 404 and r.code == "resource_missing", (path_, r.body)
    assert acme.get("/timers?on=%00").status == 400

    r = acme.call("PUT", "/timers", {})
    assert r.status == 405 and r.code == "method_not_allowed", r.body
    r = acme.post("/timers", raw=b"key=x", headers={"Content-Type": "text/plain"})
    assert r.status == 415 and r.body["error"]["type"] == "invalid_request_error", r.body


def test_form_encoded_bodies_as_stripe_clients_send_them(acme):
    req = urllib.request.Request(acme.base + "/test_clocks", data=b"frozen_time=1796115600&name=form",
                                 method="POST", headers={"Authorization": f"Bearer {acme.key}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = json.loads(resp.read())
    assert resp.status == 201 and body["name"] == "form" and body["frozen_time"] == "2026-12-01T09:00:00Z"


# -- lists ----------------------------------------------------------------------------------------------
def test_lists_page_stripe_style(acme):
    ids = [new_clock(acme, name=f"c{i}")["id"] for i in range(3)]
    first = acme.get("/test_clocks?limit=2").body
    assert first["has_more"] is True and len(first["data"]) == 2
    rest = acme.get(f"/test_clocks?limit=2&starting_after={first['data'][-1]['id']}").body
    assert rest["has_more"] is False
    assert sorted(c["id"] for c in first["data"] + rest["data"]) == sorted(ids)

    clock = {"id": ids[0]}
    for i in range(5):
        assert arm(acme, f"job_1:task:t{i}:2027", "2026-11-25T09:00:00Z", clock).status == 201
    seen, after = [], ""
    while True:
        page = acme.get(f"/timers?test_clock={ids[0]}&limit=2{after}").body
        seen += [t["key"] for t in page["data"]]
        if not page["has_more"]:
            break
        after = f"&starting_after={page['data'][-1]['id']}"
    assert sorted(seen) == [f"job_1:task:t{i}:2027" for i in range(5)]

    acme.post(f"/test_clocks/{ids[0]}/advance", {"to": "2026-11-26T09:00:00Z"})
    run_requested_advances()
    events = acme.get("/events?limit=100").body["data"]
    assert [e["type"] for e in events] == ["timer.fired"] * 5 + ["test_clock.ready"]
    after = acme.get(f"/events?starting_after={events[2]['id']}&limit=2").body
    assert [e["id"] for e in after["data"]] == [e["id"] for e in events[3:5]] and after["has_more"] is True


# -- the schema -----------------------------------------------------------------------------------------
def test_openapi_schema_needs_no_key(live_server):
    with urllib.request.urlopen(live_server.url + "/openapi.json", timeout=30) as resp:
        doc = json.loads(resp.read())
    assert doc["openapi"].startswith("3.")
    for path in ("/timers", "/timers/{timer_id}", "/timers/{timer_id}/wake", "/test_clocks",
                 "/test_clocks/{clock_id}", "/test_clocks/{clock_id}/advance", "/events"):
        assert path in doc["paths"], path
    assert "requestBody" in doc["paths"]["/timers"]["post"]
    assert "Timer" in doc["components"]["schemas"]
