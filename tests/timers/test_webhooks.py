"""Webhook endpoints: the API (Stripe's shapes, the secret once, modes and brands apart), the fan-out from every
path that writes the record, delivery through the outbox (signed, in record order, retried with backoff for
three days, logged, resent), the CLI, the owner console, and the drill: a real receiver that answers 500 for
a while, a real worker killed with SIGKILL mid-batch and started again, every event arriving once, in order.

Deliveries are counted at a real HTTP receiver (``Receiver``), never read back from the outbox's own rows.
"""

from __future__ import annotations

import json
import random
import re
import signal
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.contrib.admin.utils import quote
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.urls import reverse

from tests.conftest import admin_url
from tests.support import ROOT
from timers import outbox, transports, webhooks
from timers.advance import advance, run_requested_advances
from timers.arming import timer_arm
from timers.models import Event, Outbox, TestClock, WebhookAttempt, WebhookEndpoint, live_domain
from timers.record import event_json
from timers.schedules import schedule_create, schedule_pause
from timers.signing import SIGNATURE_HEADER, verify
from timers.tenants import api_key_create, brand_get_or_create
from timers.test_clocks import test_clock_create, test_clock_delete, test_clock_request_advance

T0 = datetime(2027, 1, 20, 14, tzinfo=UTC)


# -- a brand's receiver: a real HTTP server that keeps every POST it gets ------------------------------------
@dataclass
class Post:
    key: str  # the Idempotency-Key
    body: bytes
    signature: str
    answered: int


@dataclass
class Receiver:
    """Answers 500 while ``failing`` (or until ``fail_for`` seconds after its first POST), else 200; keeps every
    POST raw, in arrival order. ``delay`` is how long each takes to process, after it is counted."""

    delay: float = 0.0
    failing: bool = False
    fail_for: float | None = None
    posts: list[Post] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._first: float | None = None
        me = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with me._lock:
                    now = time.monotonic()
                    me._first = me._first if me._first is not None else now
                    failing = me.failing or (me.fail_for is not None and now - me._first < me.fail_for)
                    code = 500 if failing else 200
                    me.posts.append(Post(self.headers.get("Idempotency-Key", ""), body,
                                         self.headers.get(SIGNATURE_HEADER, ""), code))
                time.sleep(me.delay)
                answer = b'{"error": "down"}' if code == 500 else b'{"received": true}'
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[Post]:
        with self._lock:
            return [p for p in self.posts if p.answered == 200]

    def first_arrivals(self) -> list[str]:
        """The events it processed, in the order it first processed each (a 2xx)."""
        return list(dict.fromkeys(p.key for p in self.accepted()))

    def raw(self) -> int:
        with self._lock:
            return len(self.posts)


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def deliver(endpoint: WebhookEndpoint) -> outbox.DeliverStats:
    return outbox.deliver(endpoint.id)


def due_now(endpoint: WebhookEndpoint) -> None:
    """A backoff waited out (the tests' wall clock does not jump)."""
    Outbox.objects.filter(domain=endpoint.id).update(next_try_at=None)


def hearing(brand, receiver: Receiver, events: tuple[str, ...] = ("*",)) -> WebhookEndpoint:
    """A test-mode endpoint of the brand at the receiver."""
    return webhooks.endpoint_create(brand=brand, livemode=False, url=receiver.url, enabled_events=list(events))


def failed_once(brand, clock: TestClock, receiver: Receiver, settings, *, n: int) -> WebhookEndpoint:
    """n events owed to an endpoint whose receiver answered the first with a 500: an hour's backoff ahead."""
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "WEBHOOK_RETRY_BASE_SECONDS": 3600.0}
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, n))
    receiver.failing = True
    deliver(endpoint)
    return endpoint


def owed(endpoint: WebhookEndpoint) -> int:
    return Outbox.objects.filter(domain=endpoint.id, status__in=["pending", "sending"]).count()


def noop_fires(brand, clock: TestClock, n: int, *, start: datetime = T0 + timedelta(minutes=1)) -> datetime:
    for i in range(n):
        timer_arm(brand=brand, key=f"job_w{i % 7}:task:w:{i}", owed_at=start + timedelta(minutes=i),
                  domain=clock.id, handler="noop", data={"i": i})
    return start + timedelta(minutes=n)


def events_of(domain: str, types: tuple[str, ...] = ("timer.fired",)) -> list[str]:
    return list(Event.objects.filter(domain=domain, type__in=types).order_by("seq").values_list("id", flat=True))


@pytest.fixture
def clock(brand):
    return test_clock_create(brand=brand, frozen_time=T0, name="hooks")


@pytest.fixture
def keys(brand) -> dict[str, str]:
    return {"test": api_key_create(brand=brand)[1], "live": api_key_create(brand=brand, live=True)[1]}


def api(client, key: str, method: str, path: str, body=None, *, raw: bytes | None = None,
        content_type: str = "application/json"):
    kw = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    if method == "GET":
        return client.get(path, **kw)
    data = raw if raw is not None else json.dumps(body if body is not None else {})
    return client.generic(method, path, data=data, content_type=content_type, **kw)


def code_of(r) -> str | None:
    return (r.json().get("error") or {}).get("code")


# == the API ====================================================================================================
def test_create_shows_the_secret_once_and_reads_never(client, keys):
    r = api(client, keys["test"], "POST", "/webhook_endpoints",
            {"url": "https://example.com/hooks", "enabled_events": ["clock.due", "job.*", "clock.due"],
             "description": "our CRM", "metadata": {"team": "ops"}})
    assert r.status_code == 201, r.content
    made = r.json()
    assert made["object"] == "webhook_endpoint" and made["id"].startswith("we_")
    assert made["secret"].startswith("whsec_") and len(made["secret"]) > 30
    assert made["enabled_events"] == ["clock.due", "job.*"]  # a repeat is dropped
    assert made["status"] == "enabled" and made["livemode"] is False
    assert made["description"] == "our CRM" and made["metadata"] == {"team": "ops"}
    got = api(client, keys["test"], "GET", f"/webhook_endpoints/{made['id']}").json()
    assert "secret" not in got and {k: v for k, v in made.items() if k != "secret"} == got
    listed = api(client, keys["test"], "GET", "/webhook_endpoints").json()
    assert listed["object"] == "list" and listed["url"] == "/webhook_endpoints" and listed["has_more"] is False
    assert [e["id"] for e in listed["data"]] == [made["id"]] and "secret" not in listed["data"][0]
    assert WebhookEndpoint.objects.get(pk=made["id"]).secret == made["secret"]  # kept: it signs every delivery


def test_list_pages_with_limit_and_starting_after(client, keys):
    made = [api(client, keys["test"], "POST", "/webhook_endpoints",
                {"url": f"https://example.com/{i}", "enabled_events": ["*"]}).json()["id"] for i in range(5)]
    first = api(client, keys["test"], "GET", "/webhook_endpoints?limit=2").json()
    assert [e["id"] for e in first["data"]] == made[:2] and first["has_more"] is True
    rest = api(client, keys["test"], "GET", f"/webhook_endpoints?limit=10&starting_after={made[1]}").json()
    assert [e["id"] for e in rest["data"]] == made[2:] and rest["has_more"] is False
    r = api(client, keys["test"], "GET", "/webhook_endpoints?starting_after=we_nope")
    assert r.status_code == 404 and code_of(r) == "resource_missing"


def test_update_changes_what_is_given_and_delete_ends_it(client, keys):
    made = api(client, keys["test"], "POST", "/webhook_endpoints",
               {"url": "https://example.com/a", "enabled_events": ["*"], "metadata": {"a": "1", "b": "2"}}).json()
    path = f"/webhook_endpoints/{made['id']}"
    r = api(client, keys["test"], "POST", path, {"enabled_events": ["clock.*"], "disabled": True,
                                                 "metadata": {"a": "", "c": "3"}})
    assert r.status_code == 200, r.content
    assert r.json()["enabled_events"] == ["clock.*"] and r.json()["status"] == "disabled"
    assert r.json()["metadata"] == {"b": "2", "c": "3"} and r.json()["url"] == "https://example.com/a"
    assert "secret" not in r.json()
    r = api(client, keys["test"], "POST", path, {"disabled": False, "url": "http://example.com/b", "description": "x"})
    assert r.json()["status"] == "enabled" and r.json()["url"] == "http://example.com/b"
    r = api(client, keys["test"], "DELETE", path)
    assert r.status_code == 200 and r.json() == {"id": made["id"], "object": "webhook_endpoint", "deleted": True}
    assert api(client, keys["test"], "GET", path).status_code == 404
    assert api(client, keys["test"], "DELETE", path).status_code == 404


def test_another_brands_or_modes_endpoint_is_the_same_404(client, brand, keys):
    other = brand_get_or_create(name="other.brand")
    other_key = api_key_create(brand=other)[1]
    theirs = api(client, other_key, "POST", "/webhook_endpoints",
                 {"url": "https://other.example/h", "enabled_events": ["*"]}).json()["id"]
    live = api(client, keys["live"], "POST", "/webhook_endpoints",
               {"url": "https://example.com/live", "enabled_events": ["*"]}).json()
    assert live["livemode"] is True
    test = api(client, keys["test"], "POST", "/webhook_endpoints",
               {"url": "https://example.com/test", "enabled_events": ["*"]}).json()
    for key, foreign in ((keys["test"], [theirs, live["id"]]), (keys["live"], [theirs, test["id"]])):
        for eid in foreign:
            for method, body in (("GET", None), ("POST", {"disabled": True}), ("DELETE", None)):
                r = api(client, key, method, f"/webhook_endpoints/{eid}", body)
                assert r.status_code == 404 and code_of(r) == "resource_missing", (method, eid, r.content)
    assert WebhookEndpoint.objects.filter(status="disabled").count() == 0  # nothing the calls reached changed
    assert WebhookEndpoint.objects.count() == 3
    assert [e["id"] for e in api(client, keys["live"], "GET", "/webhook_endpoints").json()["data"]] == [live["id"]]
    assert [e["id"] for e in api(client, keys["test"], "GET", "/webhook_endpoints").json()["data"]] == [test["id"]]
    r = api(client, keys["test"], "GET", f"/webhook_endpoints?starting_after={live['id']}")
    assert r.status_code == 404  # another mode's cursor names nothing


def test_no_key_is_401(client):
    assert client.get("/webhook_endpoints").status_code == 401


def test_the_schema_documents_the_endpoints(client):
    schema = client.get("/openapi.json").json()
    assert {"/webhook_endpoints", "/webhook_endpoints/{endpoint_id}"} <= set(schema["paths"])
    ops = schema["paths"]["/webhook_endpoints/{endpoint_id}"]
    assert {"get", "post", "delete"} <= set(ops)
    body = schema["components"]["schemas"]["WebhookEndpointCreate"]["properties"]
    assert body["url"]["pattern"] == webhooks.URL_PATTERN
    assert body["enabled_events"]["items"]["pattern"] == webhooks.event_pattern_regex()


# -- bad input: a coded 4xx, nothing written --------------------------------------------------------------------
BAD_CREATES = [
    ({"enabled_events": ["*"]}, 400, "invalid_request", "url"),
    ({"url": "https://example.com"}, 400, "invalid_request", "enabled_events"),
    ({"url": 5, "enabled_events": ["*"]}, 400, "invalid_request", "url"),
    ({"url": "ftp://example.com/x", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "example.com/x", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "https://user:pw@example.com/", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "https://exa mple.com/", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "https://example.com:99999/", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "https://example.com/\n", "enabled_events": ["*"]}, 400, "invalid_url", "url"),
    ({"url": "https://example.com/" + "a" * 2100, "enabled_events": ["*"]}, 400, "invalid_request", "url"),
    ({"url": "https://example.com", "enabled_events": []}, 400, "invalid_enabled_events", "enabled_events"),
    ({"url": "https://example.com", "enabled_events": "*"}, 400, "invalid_request", "enabled_events"),
    ({"url": "https://example.com", "enabled_events": [3]}, 400, "invalid_enabled_events", "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["Clock.Due"]}, 400, "invalid_enabled_events",
     "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["clock.*.due"]}, 400, "invalid_enabled_events",
     "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["clock.due\n"]}, 400, "invalid_enabled_events",
     "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["clocks.*"]}, 400, "unknown_event_type", "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["*"] * 101}, 400, "invalid_enabled_events",
     "enabled_events"),
    ({"url": "https://example.com", "enabled_events": ["*"], "metadata": {"k\x00": "v"}}, 400, "invalid_request",
     "metadata"),
    ({"url": "https://example.com", "enabled_events": ["*"], "metadata": ["k"]}, 400, "invalid_request",
     "metadata"),
    ({"url": "https://example.com", "enabled_events": ["*"], "metadata": {"k": "v" * 501}}, 400,
     "invalid_request", "metadata.k"),
    ({"url": "https://example.com", "enabled_events": ["*"], "metadata": {str(i): "v" for i in range(51)}}, 400,
     "invalid_request", "metadata"),
    ({"url": "https://example.com", "enabled_events": ["*"], "description": "d" * 5001}, 400, "invalid_request",
     "description"),
    ({"url": "https://example.com\x00", "enabled_events": ["*"]}, 400, "invalid_request", "url"),
]


@pytest.mark.parametrize(("body", "status", "code", "param"), BAD_CREATES)
def test_bad_input_a_bad_create_is_a_coded_400_and_writes_nothing(client, keys, body, status, code, param):
    r = api(client, keys["test"], "POST", "/webhook_endpoints", body)
    assert r.status_code == status, r.content
    assert code_of(r) == code and r.json()["error"].get("param") == param, r.content
    assert not WebhookEndpoint.objects.exists()


def test_bad_input_bodies_that_are_not_json_objects(client, keys):
    r = api(client, keys["test"], "POST", "/webhook_endpoints", raw=b'{"url": ', content_type="application/json")
    assert r.status_code == 400 and code_of(r) == "invalid_json"
    r = api(client, keys["test"], "POST", "/webhook_endpoints", raw=b"url=https://example.com&enabled_events=*",
            content_type="application/x-www-form-urlencoded")
    assert r.status_code == 415 and code_of(r) == "unsupported_media_type"
    r = api(client, keys["test"], "POST", "/webhook_endpoints", raw=b'{"url": "https://x.example"}',
            content_type="text/plain")
    assert r.status_code == 415
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(("body", "code", "param"), [
    ({"url": "gopher://example.com"}, "invalid_url", "url"),
    ({"enabled_events": ["nope.*"]}, "unknown_event_type", "enabled_events"),
    ({"enabled_events": []}, "invalid_enabled_events", "enabled_events"),
    ({"disabled": "yes"}, "invalid_request", "disabled"),
    ({"metadata": {"k": 5}}, "invalid_request", "metadata.k"),
])
def test_bad_input_a_bad_update_changes_nothing(client, keys, body, code, param):
    made = api(client, keys["test"], "POST", "/webhook_endpoints",
               {"url": "https://example.com/a", "enabled_events": ["*"]}).json()
    before = WebhookEndpoint.objects.filter(pk=made["id"]).values().get()
    r = api(client, keys["test"], "POST", f"/webhook_endpoints/{made['id']}", body)
    assert r.status_code == 400 and code_of(r) == code and r.json()["error"].get("param") == param, r.content
    assert WebhookEndpoint.objects.filter(pk=made["id"]).values().get() == before


@pytest.mark.parametrize("eid", ["we_nope", "../x", "a" * 40])
def test_bad_input_an_id_that_names_nothing_is_404(client, keys, eid):
    r = api(client, keys["test"], "GET", f"/webhook_endpoints/{eid}")
    assert r.status_code == 404 and code_of(r) == "resource_missing"


# == the fan-out: every path that writes the record ===============================================================
@pytest.fixture
def hooks(brand):
    """A test-mode endpoint hearing everything, and a live one, of the brand (not delivered: rows only)."""
    test = webhooks.endpoint_create(brand=brand, livemode=False, url="https://example.com/t", enabled_events=["*"])
    live = webhooks.endpoint_create(brand=brand, livemode=True, url="https://example.com/l", enabled_events=["*"])
    return test, live


def delivered_events(endpoint: WebhookEndpoint) -> list[str]:
    """The events an endpoint is owed or was sent, in its line's order (the outbox key)."""
    return [p["event"] for p in Outbox.objects.filter(domain=endpoint.id, attempt=1).order_by("key")
            .values_list("payload", flat=True)]


@pytest.mark.parametrize("advance_batch", [None, 1])  # 1: each batch's writes and endpoints' read pipelined
def test_the_ticks_batch_writes_fan_out_in_their_transaction(brand, clock, hooks, settings, advance_batch):
    if advance_batch:
        settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": advance_batch}
    test, live = hooks
    end = noop_fires(brand, clock, 25)
    advance(clock.id, end)
    fired = events_of(clock.id)
    assert len(fired) == 25
    assert delivered_events(test) == events_of(clock.id, ("timer.fired",)) == fired
    assert delivered_events(live) == []  # a live endpoint hears the live clock only
    rows = Outbox.objects.filter(domain=test.id).order_by("key")
    assert {r.transport for r in rows} == {"webhook"} and {r.status for r in rows} == {"pending"}
    seqs = list(Event.objects.filter(id__in=fired).order_by("seq").values_list("seq", flat=True))
    assert [r.key for r in rows] == [webhooks.delivery_key(s, e) for s, e in zip(seqs, fired, strict=True)]


def test_a_batch_that_rolls_back_leaves_no_delivery(brand, clock, hooks):
    from django.db import transaction

    test, _ = hooks
    end = noop_fires(brand, clock, 5)
    with transaction.atomic():
        advance(clock.id, end)
        assert len(delivered_events(test)) == 5
        transaction.set_rollback(True)
    assert delivered_events(test) == []


def test_every_other_writer_fans_out(brand, clock, hooks):
    from timers.armer import DirectArmer

    test, live = hooks
    # DirectArmer.record (the API's, the console's and the commands' writes outside the tick), on each clock.
    DirectArmer(brand=brand, domain=clock.id).record("job.activity", subject="job_1", data={})
    DirectArmer(brand=brand, domain=live_domain(brand.id)).record("job.activity", subject="job_2", data={})
    # Event.objects.create sites: schedules (timers/schedules.py), test_clock.ready (worker), test_clock.deleted.
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": "https://example.com/s"})
    schedule_pause(schedule=sch)
    test_clock_request_advance(clock=clock, to=T0 + timedelta(hours=1))
    assert run_requested_advances() == 1
    test_types = [Event.objects.get(id=e).type for e in delivered_events(test)]
    assert test_types[:1] == ["job.activity"] and "schedule.created" in test_types
    assert "schedule.paused" in test_types and test_types[-1] == "test_clock.ready"
    assert [Event.objects.get(id=e).type for e in delivered_events(live)] == ["job.activity"]
    # Everything the record holds for the brand's test clock and live clock, and nothing else.
    assert set(delivered_events(test)) == set(Event.objects.filter(domain=clock.id).values_list("id", flat=True))
    assert set(delivered_events(live)) == set(Event.objects.filter(domain=live_domain(brand.id))
                                              .values_list("id", flat=True))
    test_clock_delete(clock=test_clock_create(brand=brand, frozen_time=T0))
    assert Event.objects.get(id=delivered_events(test)[-1]).type == "test_clock.deleted"


def test_only_what_an_endpoint_wants_and_only_its_brand(brand, clock):
    other = brand_get_or_create(name="other.brand")
    other_clock = test_clock_create(brand=other, frozen_time=T0)
    exact = webhooks.endpoint_create(brand=brand, livemode=False, url="https://e.example/1",
                                     enabled_events=["test_clock.ready"])
    prefix = webhooks.endpoint_create(brand=brand, livemode=False, url="https://e.example/2",
                                      enabled_events=["timer.*"])
    theirs = webhooks.endpoint_create(brand=other, livemode=False, url="https://e.example/3", enabled_events=["*"])
    disabled = webhooks.endpoint_create(brand=brand, livemode=False, url="https://e.example/4", enabled_events=["*"])
    webhooks.endpoint_update(endpoint=disabled, disabled=True)
    noop_fires(brand, clock, 3)
    test_clock_request_advance(clock=clock, to=T0 + timedelta(hours=1))
    run_requested_advances()
    assert [Event.objects.get(id=e).type for e in delivered_events(exact)] == ["test_clock.ready"]
    assert [Event.objects.get(id=e).type for e in delivered_events(prefix)] == ["timer.fired"] * 3
    assert delivered_events(theirs) == [] and delivered_events(disabled) == []
    noop_fires(other, other_clock, 2)
    advance(other_clock.id, T0 + timedelta(hours=1))
    assert len(delivered_events(theirs)) == 2 and len(delivered_events(prefix)) == 3


def test_patterns():
    assert webhooks.wants(["*"], "clock.due")
    assert webhooks.wants(["clock.due"], "clock.due") and not webhooks.wants(["clock.due"], "clock.dues")
    assert webhooks.wants(["subject.*"], "subject.notice.received")
    assert not webhooks.wants(["clock.*"], "clock") and not webhooks.wants(["clock.*"], "clockwork.x")


_WRITES = re.compile(r"Event\.objects\.bulk_create|INSERT INTO timers_event|copy_in\([^)]*\"timers_event\"")
_TYPES = re.compile(r"""(?:\.record\(|type=)\s*f?["']([a-z_]+)\.""")


def _sources():
    for app in ("timers", "calendars", "services", "portals"):
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path


def test_no_writer_of_the_record_bypasses_the_fan_out():
    """Every event reaches the record through Event.objects.create (post_save fans it out) or the store's batch
    writes (which call fan_out): a bulk insert anywhere else would write events no endpoint hears."""
    bulk = sorted(str(p.relative_to(ROOT)) for p in _sources() if _WRITES.search(p.read_text()))
    assert bulk == ["timers/store.py"], bulk


def test_every_family_the_record_writes_is_one_an_endpoint_may_ask_for():
    families = {m.group(1) for p in _sources() for m in _TYPES.finditer(p.read_text())}
    assert families, "the scan found no types"
    assert families <= webhooks.EVENT_FAMILIES, families - webhooks.EVENT_FAMILIES


# == delivery ======================================================================================================
def test_a_delivery_is_the_event_signed_with_its_id_as_idempotency_key(client, brand, clock, keys, receiver):
    made = api(client, keys["test"], "POST", "/webhook_endpoints",
               {"url": receiver.url, "enabled_events": ["timer.fired"]}).json()
    endpoint = WebhookEndpoint.objects.get(pk=made["id"])
    advance(clock.id, noop_fires(brand, clock, 3))
    stats = deliver(endpoint)
    assert stats.sent == 3 and owed(endpoint) == 0
    fired = events_of(clock.id)
    assert receiver.first_arrivals() == fired
    for post, event_id in zip(receiver.posts, fired, strict=True):
        assert verify(made["secret"], post.body, post.signature)
        assert not verify("whsec_wrong", post.body, post.signature)
        assert json.loads(post.body) == event_json(Event.objects.get(id=event_id))
        # The same object GET /events/<id> answers.
        assert json.loads(post.body) == api(client, keys["test"], "GET", f"/events/{event_id}").json()
        t = int(dict(p.split("=", 1) for p in post.signature.split(","))["t"])
        assert abs(t - time.time()) < 60
    log = list(WebhookAttempt.objects.filter(endpoint=endpoint).order_by("id"))
    assert [(a.event_id, a.status, a.attempt) for a in log] == [(e, 200, 1) for e in fired]
    assert all(a.answer == '{"received": true}' and a.duration_ms >= 0 for a in log)
    assert set(Outbox.objects.filter(domain=endpoint.id).values_list("status", flat=True)) == {"sent"}


def test_a_failing_receiver_holds_the_line_then_gets_everything_in_order(brand, clock, receiver, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "WEBHOOK_RETRY_BASE_SECONDS": 30.0}
    endpoint = hearing(brand, receiver, ("timer.*",))
    advance(clock.id, noop_fires(brand, clock, 6))
    receiver.failing = True
    stats = deliver(endpoint)
    # The first failed; nothing was sent past it (head of line), and nothing is held by a sender.
    assert (stats.sent, stats.in_doubt, receiver.raw()) == (0, 1, 1)
    rows = list(Outbox.objects.filter(domain=endpoint.id).order_by("key"))
    assert rows[0].status == "sending" and rows[0].tries == 1 and rows[0].next_try_at is not None
    assert "HTTP 500" in rows[0].error
    assert all(r.status == "pending" and r.claimed_by == "" for r in rows[1:])
    assert deliver(endpoint).done == 0 and receiver.raw() == 1  # waiting out its backoff: nothing leaves
    due_now(endpoint)
    assert deliver(endpoint).in_doubt == 1 and receiver.raw() == 2
    receiver.failing = False
    due_now(endpoint)
    assert deliver(endpoint).sent == 6 and owed(endpoint) == 0
    assert receiver.first_arrivals() == events_of(clock.id)
    log = list(WebhookAttempt.objects.filter(endpoint=endpoint).order_by("id"))
    assert [(a.status, a.attempt) for a in log[:3]] == [(500, 1), (500, 2), (200, 3)]
    assert log[0].answer == '{"error": "down"}'


def test_retries_back_off_exponentially_to_the_cap(brand, clock, receiver, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "WEBHOOK_RETRY_BASE_SECONDS": 10.0,
                             "WEBHOOK_RETRY_CAP_SECONDS": 35.0}
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 1))
    receiver.failing = True
    waits = []
    for _ in range(4):
        due_now(endpoint)
        before = datetime.now(UTC)
        deliver(endpoint)
        row = Outbox.objects.get(domain=endpoint.id)
        waits.append(round((row.next_try_at - before).total_seconds()))
    assert waits == [10, 20, 35, 35]
    assert Outbox.objects.get(domain=endpoint.id).tries == 4


def test_after_three_days_a_delivery_fails_and_the_line_moves_on(brand, clock, receiver, settings):
    endpoint = failed_once(brand, clock, receiver, settings, n=3)
    head = Outbox.objects.filter(domain=endpoint.id).order_by("key").first()
    # Its last try falls at the window's end, never after it.
    Outbox.objects.filter(pk=head.pk).update(created_at=datetime.now(UTC) - timedelta(days=3, minutes=-10),
                                             next_try_at=None)
    deliver(endpoint)
    head.refresh_from_db()
    assert head.status == "sending" and head.next_try_at <= head.created_at + timedelta(days=3, seconds=1)
    Outbox.objects.filter(pk=head.pk).update(created_at=datetime.now(UTC) - timedelta(days=3, seconds=1),
                                             next_try_at=None)
    # The head's three days are over: this failure is its last, and the next in line is tried.
    stats = deliver(endpoint)
    head.refresh_from_db()
    assert head.status == "failed" and head.tries == 3 and stats.failed == 1 and stats.in_doubt == 1
    receiver.failing = False
    due_now(endpoint)
    assert deliver(endpoint).sent == 2  # the rest go, in order
    fired = events_of(clock.id)
    assert receiver.first_arrivals() == fired[1:]


def test_a_delivery_in_doubt_is_sent_again_only_if_no_2xx_is_logged(brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 2))
    deliver(endpoint)
    assert len(receiver.posts) == 2
    first, second = Outbox.objects.filter(domain=endpoint.id).order_by("key")
    dead = "pg:1:1" if connection.vendor == "postgresql" else f"os:{socket.gethostname()}:999999999"
    # A sender killed after the POST of `first` was logged, before its receipt; and one killed mid-POST of `second`.
    Outbox.objects.filter(pk__in=[first.pk, second.pk]).update(status="sending", claimed_by=dead,
                                                              lease_until=datetime.now(UTC) + timedelta(hours=1))
    WebhookAttempt.objects.filter(submission=second.pk).delete()
    stats = deliver(endpoint)
    assert (stats.confirmed, stats.sent) == (1, 1)
    assert Counter(p.key for p in receiver.posts) == Counter({first.key.split(".")[1]: 1,
                                                              second.key.split(".")[1]: 2})
    assert receiver.posts[2].key == receiver.posts[1].key  # the same Idempotency-Key


def test_resend_sends_a_settled_delivery_once_more_with_the_same_key(brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 2))
    deliver(endpoint)
    first = events_of(clock.id)[0]
    said = webhooks.delivery_resend(endpoint=endpoint, event_id=first)
    assert "sent again" in said
    assert deliver(endpoint).sent == 1
    assert [p.key for p in receiver.posts] == [*events_of(clock.id), first]
    assert list(WebhookAttempt.objects.filter(event_id=first).order_by("id").values_list("attempt", "status")) == [
        (1, 200), (2, 200)]
    # A resend that fails is not retried: it does not hold the line for three days.
    receiver.failing = True
    webhooks.delivery_resend(endpoint=endpoint, event_id=first)
    assert deliver(endpoint).failed == 1 and owed(endpoint) == 0


def test_resend_of_a_delivery_still_owed_tries_it_now(brand, clock, receiver, settings):
    endpoint = failed_once(brand, clock, receiver, settings, n=2)
    receiver.failing = False
    assert deliver(endpoint).done == 0  # an hour's backoff
    assert "tried again now" in webhooks.delivery_resend(endpoint=endpoint, event_id=events_of(clock.id)[0])
    assert deliver(endpoint).sent == 2
    assert receiver.first_arrivals() == events_of(clock.id)
    assert Outbox.objects.filter(domain=endpoint.id).count() == 2  # no second delivery was made


def test_a_disabled_endpoint_hears_nothing_new_and_its_owed_waits(brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    end = noop_fires(brand, clock, 2)
    advance(clock.id, end - timedelta(seconds=90))  # the first
    webhooks.endpoint_update(endpoint=endpoint, disabled=True)
    advance(clock.id, end)  # the second: not heard
    assert deliver(endpoint).done == 0 and receiver.raw() == 0 and owed(endpoint) == 1
    webhooks.endpoint_update(endpoint=endpoint, disabled=False)
    assert deliver(endpoint).sent == 1
    assert receiver.first_arrivals() == events_of(clock.id)[:1]


def test_a_deleted_endpoints_owed_deliveries_are_voided(brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 3))
    eid = endpoint.id
    assert webhooks.endpoint_delete(endpoint=endpoint) == 3
    assert set(Outbox.objects.filter(domain=eid).values_list("status", flat=True)) == {"voided"}
    assert outbox.deliver(eid).done == 0 and receiver.raw() == 0


def test_a_deleted_test_clocks_deliveries_are_voided_but_its_deletion_is_heard(brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 3))
    test_clock_delete(clock=clock)
    deliver(endpoint)
    assert [Event.objects.get(id=k).type for k in receiver.first_arrivals()] == ["test_clock.deleted"]
    assert Outbox.objects.filter(domain=endpoint.id, status="voided").count() == 3


def test_a_refused_address_is_a_failed_try_with_its_reason(brand, clock, settings):
    """Made while the allowance named loopback, then sent after it no longer does: the send is refused at the
    resolved address, a failed try with its reason (tests/timers/test_targets.py covers the rule itself)."""
    endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url="http://127.0.0.1:9/x", enabled_events=["*"])
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ALLOW_TARGETS": []}
    advance(clock.id, noop_fires(brand, clock, 1))
    deliver(endpoint)
    a = WebhookAttempt.objects.get(endpoint=endpoint)
    assert a.status is None and a.error.startswith("refused: ") and "loopback" in a.error, a.error


# == the CLI =========================================================================================================
def test_cli_create_prints_the_secret_once_and_list_one_line_each(brand):
    out = StringIO()
    call_command("webhooks", "create", "--brand", brand.name, "--url", "https://example.com/h", "--events",
                 "clock.due, job.*", stdout=out)
    head, secret = out.getvalue().strip().splitlines()
    endpoint = WebhookEndpoint.objects.get()
    assert head.startswith(endpoint.id) and "test" in head and "clock.due, job.*" in head
    assert secret == endpoint.secret and endpoint.livemode is False
    call_command("webhooks", "create", "--brand", brand.name, "--url", "https://example.com/l", "--events", "*",
                 "--live", stdout=StringIO())
    out = StringIO()
    call_command("webhooks", "list", "--brand", brand.name, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert lines[0] == f"2 webhook endpoints of {brand.name}" and len(lines) == 3
    assert "whsec_" not in out.getvalue() and "owed 0" in lines[1] and "  live  " in lines[2]


@pytest.mark.parametrize(("args", "code"), [
    (["--url", "ftp://x", "--events", "*"], "invalid_url"),
    (["--url", "https://x.example", "--events", "clocks.*"], "unknown_event_type"),
    (["--url", "https://x.example", "--events", ","], "invalid_enabled_events"),
])
def test_cli_errors_are_one_line_with_a_code(brand, args, code):
    with pytest.raises(CommandError) as err:
        call_command("webhooks", "create", "--brand", brand.name, *args, stdout=StringIO())
    assert str(err.value).startswith(f"{code}: ") and "\n" not in str(err.value)
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.processes
def test_cli_as_a_process_exits_non_zero_with_one_line(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'cli.sqlite3'}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    p = subprocess.run([sys.executable, "manage.py", "webhooks", "create", "--brand", "nobody", "--url",
                        "https://x.example", "--events", "*"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert p.returncode != 0 and p.stderr.strip().splitlines() == [
        "CommandError: resource_missing: no brand 'nobody' (createapikey --brand 'nobody' makes one)"]


# == the owner console =================================================================================================
@pytest.fixture
def owner(brand, django_user_model):
    from timers.models import Membership

    user = django_user_model.objects.create_user("owner", password="pw", is_staff=True)
    Membership.objects.create(user=user, brand=brand, role="owner", name="Olive Owner")
    return user


def test_console_lists_an_endpoints_log_and_resends(client, owner, brand, clock, receiver):
    endpoint = hearing(brand, receiver)
    other = brand_get_or_create(name="other.brand")
    theirs = webhooks.endpoint_create(brand=other, livemode=False, url="https://theirs.example/h",
                                      enabled_events=["*"])
    advance(clock.id, noop_fires(brand, clock, 2))
    receiver.failing = True
    deliver(endpoint)
    receiver.failing = False
    due_now(endpoint)
    deliver(endpoint)
    client.force_login(owner)
    listing = client.get("/admin/timers/webhookendpoint/")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert receiver.url in page and "theirs.example" not in page
    assert client.get(admin_url(theirs)).status_code in (302, 404)
    detail = client.get(admin_url(endpoint)).content.decode()
    # The log, newest first: the event, when (in words), the answer.
    assert detail.index("200 OK") < detail.index("500 Internal Server Error")
    assert "timer.fired" in detail and " ago)" in detail and "Resend" in detail
    failed = WebhookAttempt.objects.get(endpoint=endpoint, status=500)
    resend = reverse("admin:timers_webhookendpoint_resend", args=[quote(endpoint.pk), failed.pk])
    # Each row's button posts the page's own form (its CSRF token) to the row's resend.
    form = detail.split('id="webhookendpoint_form"')[1].split("</form>")[0]
    assert f'formaction="{resend}"' in form and "csrfmiddlewaretoken" in form
    r = client.post(resend, follow=True)
    text = r.content.decode()
    assert r.status_code == 200 and "sent again" in text
    assert "evt_" not in re.sub(r"<[^>]+>", "", text.split("messagelist")[1].split("</ul>")[0])  # words, no ids
    assert deliver(endpoint).sent == 1
    assert [p.key for p in receiver.accepted()][-1] == failed.event_id
    # Another brand's delivery is not the owner's to resend.
    attempts = client.get("/admin/timers/webhookattempt/").content.decode()
    assert "theirs.example" not in attempts and receiver.url in attempts


def test_console_action_resends_the_selected_and_disables(client, owner, brand, clock, receiver):
    from django.contrib.admin import helpers

    endpoint = hearing(brand, receiver)
    advance(clock.id, noop_fires(brand, clock, 1))
    deliver(endpoint)
    client.force_login(owner)
    a = WebhookAttempt.objects.get(endpoint=endpoint)
    r = client.post("/admin/timers/webhookattempt/", {"action": "resend", helpers.ACTION_CHECKBOX_NAME: [a.pk]},
                    follow=True)
    assert r.status_code == 200 and "sent again" in r.content.decode()
    assert Outbox.objects.filter(domain=endpoint.id, attempt=2, status="pending").exists()
    r = client.post("/admin/timers/webhookendpoint/", {"action": "disable",
                                                       helpers.ACTION_CHECKBOX_NAME: [endpoint.pk]}, follow=True)
    assert "is disabled" in r.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled"


# == the drill: a receiver down for a while, a real worker killed with SIGKILL mid-batch ==============================
DRILL_EVENTS = 400
DRILL_KILLS = 8
DRILL_FAIL_FOR = 12.0  # seconds the receiver answers 500 after its first POST: "an hour", compressed


def _drill_env() -> dict:
    from tests.support.processes import worker_env

    env = worker_env(batch=40)
    # The backoff, compressed as the outage is: 0.25 s doubling to 1 s, within ten minutes.
    env.update(KT_WEBHOOK_RETRY_BASE_SECONDS="0.25", KT_WEBHOOK_RETRY_CAP_SECONDS="1",
               KT_WEBHOOK_RETRY_WINDOW_SECONDS="600", LOG_LEVEL="ERROR")
    return env


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_drill_a_receiver_down_then_up_gets_every_event_once_in_order_through_kill_9(brand):
    if connection.vendor != "postgresql":
        pytest.skip("real processes and sessions: PostgreSQL")
    from tests.support.processes import spawn

    clock = test_clock_create(brand=brand, frozen_time=T0)
    end = noop_fires(brand, clock, DRILL_EVENTS)
    rng = random.Random(20261201)
    with Receiver(delay=0.004, fail_for=DRILL_FAIL_FOR) as rx:
        endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=rx.url,
                                            enabled_events=["timer.fired", "test_clock.*"])
        env = _drill_env()
        worker = spawn("tick", "--forever", env=env)
        kills: list[tuple[int, bool]] = []  # (raw POSTs when killed, whether the receiver was still failing)
        try:
            test_clock_request_advance(clock=clock, to=end)
            # Kill points: two while it answers 500, the rest spread over the drain.
            levels = sorted({2, 3, *rng.sample(range(20, DRILL_EVENTS), DRILL_KILLS - 2)})
            deadline = time.monotonic() + 240
            for level in levels:
                while rx.raw() < level:
                    assert worker.poll() is None, worker.communicate()
                    assert time.monotonic() < deadline, f"stuck at {rx.raw()} POSTs before kill {len(kills)}"
                    time.sleep(0.002)
                time.sleep(rng.choice((0.0, 0.0, 0.002, 0.005)))  # mid-POST, or between two
                worker.send_signal(signal.SIGKILL)
                worker.wait()
                kills.append((rx.raw(), len(rx.accepted()) == 0))
                worker = spawn("tick", "--forever", env=env)
            wanted = None
            while time.monotonic() < deadline:
                clock.refresh_from_db()
                if clock.status == "ready":
                    wanted = events_of(clock.id, ("timer.fired", "test_clock.ready"))
                    if set(rx.first_arrivals()) == set(wanted) and owed(endpoint) == 0:
                        break
                assert worker.poll() is None, worker.communicate()
                time.sleep(0.05)
            else:
                pytest.fail(f"not everything arrived: {len(rx.first_arrivals())} of "
                            f"{len(wanted) if wanted else '?'}, owed {owed(endpoint)}")
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err

        assert len(kills) == DRILL_KILLS and sum(1 for _, down in kills if down) >= 2, kills
        # Every wanted event arrived, the first arrivals in record order, each processed (2xx) once but for at
        # most the one POST in flight at each kill, which carried the same Idempotency-Key.
        assert len(wanted) == DRILL_EVENTS + 1
        firsts = rx.first_arrivals()
        assert firsts == wanted, next((i, firsts[i], wanted[i]) for i in range(len(wanted)) if firsts[i] != wanted[i])
        accepted = Counter(p.key for p in rx.accepted())
        twice = {k: n for k, n in accepted.items() if n > 1}
        assert sum(n - 1 for n in twice.values()) <= len(kills), twice
        failed_posts = [p for p in rx.posts if p.answered == 500]
        assert failed_posts and all(p.key == wanted[0] for p in failed_posts)  # the line held at its head
        secret = endpoint.secret
        assert all(verify(secret, p.body, p.signature) for p in rx.posts)
        for key in twice:
            bodies = {p.body for p in rx.accepted() if p.key == key}
            assert len(bodies) == 1  # the same event, the same body
        # Each try is logged but for the one cut short at a kill.
        logged = WebhookAttempt.objects.filter(endpoint=endpoint).count()
        assert len(rx.posts) - len(kills) <= logged <= len(rx.posts)
        down_kills = sum(1 for _, down in kills if down)
        assert WebhookAttempt.objects.filter(endpoint=endpoint, status=500).count() >= len(failed_posts) - down_kills
        print(f"drill: {len(wanted)} events, {len(rx.posts)} POSTs ({len(failed_posts)} answered 500), "
              f"{len(kills)} kills at {[k for k, _ in kills]}, {sum(n - 1 for n in twice.values())} processed twice")


def test_a_set_of_deliveries_reads_its_events_endpoints_and_log_once_not_once_a_send(brand, receiver):
    """What each send needs (its event, its endpoint, its tries so far, a 2xx already logged) is read for the
    claimed set in four queries: a delivery costs its POST, its log row and its receipt, whatever the set's
    size (issue 26: no query per send where a set query would do). Counted from the statements run."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def statements(n: int) -> int:
        clock = test_clock_create(brand=brand, frozen_time=T0, name=f"set of {n}")
        endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=receiver.url,
                                            enabled_events=["timer.fired"])
        advance(clock.id, noop_fires(brand, clock, n))
        with CaptureQueriesContext(connection) as q:
            stats = deliver(endpoint)
        assert stats.sent == n
        webhooks.endpoint_delete(endpoint=endpoint)
        return len(q.captured_queries)

    few, many = statements(3), statements(23)
    per_send = (many - few) / 20
    # The log row (its INSERT, inside a savepoint in a test's transaction: 3 statements) and the receipt's
    # UPDATE. Read a send at a time, it was 8.
    assert per_send <= 4, f"{per_send:.1f} statements a send"
    assert len(receiver.posts) == 26


def _show(name: str) -> str:
    with connection.cursor() as cur:
        cur.execute(f"SHOW {name}")
        return cur.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_webhook_receipt_is_one_statement_with_its_log_row_and_commits_without_waiting_for_its_flush(
        brand, receiver):
    """Webhooks are at least once, with the event id as Idempotency-Key: a delivery's log row and its receipt are
    one statement (one commit: a kill -9 after the POST leaves both or neither), and the line's session commits
    it with synchronous_commit off (the server's crash alone could lose the last few, sent again once), set once
    for the claim and reset after it (issue 39: four statements and two commits a delivery were one). Any other
    transport's receipt waits for its flush, as before."""
    from timers.sql import sessions
    from timers.sql import webhooks as webhook_sql

    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit: PostgreSQL")
    clock = test_clock_create(brand=brand, frozen_time=T0, name="relaxed")
    endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=receiver.url, enabled_events=["timer.fired"])
    advance(clock.id, noop_fires(brand, clock, 3))
    seen: list[str] = []

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        assert deliver(endpoint).sent == 3
    on, off = seen.index(sessions.SESSION_UNFLUSHED), seen.index(sessions.SESSION_FLUSHED)
    writes = [q for q in seen[on:off] if not q.lstrip().startswith("SELECT")]
    assert writes == [sessions.SESSION_UNFLUSHED] + [webhook_sql.LOGGED_RECEIPT] * 3, writes
    assert not any(q.startswith("SET LOCAL synchronous_commit") for q in seen)
    assert _show("synchronous_commit") == "on"
    logged = WebhookAttempt.objects.filter(endpoint=endpoint, status=200)
    assert logged.count() == 3 and set(logged.values_list("submission", flat=True)) == set(
        Outbox.objects.filter(domain=endpoint.id, status="sent").values_list("id", flat=True))
    # An outside system's receipt (the recording transport here, e-file in production) keeps its flush.
    Outbox.objects.create(id="sub_relaxed_1", domain=clock.id, brand=brand, key="job_9:ask:x:1", attempt=1,
                          transport="recording", created_at=T0)
    seen.clear()
    with connection.execute_wrapper(watch), transports.capture(transports.RecordingTransport()) as far:
        outbox.deliver(clock.id)
    assert far.received["sub_relaxed_1"] == 1
    assert any(q.startswith("UPDATE timers_outbox o SET status = 'sent'") for q in seen)
    assert not any("synchronous_commit" in q for q in seen)


@pytest.mark.django_db(transaction=True)
def test_the_line_s_session_waits_for_its_flush_again_after_a_claim_that_raised(brand, receiver, monkeypatch):
    """The session's synchronous_commit off is the claim's alone: a claim that raised (its receipt's write
    failed) leaves it on again, so the worker's next transaction (a tick's batch) waits for its flush."""
    from timers.sql import webhooks as webhook_sql

    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit: PostgreSQL")
    clock = test_clock_create(brand=brand, frozen_time=T0, name="raised")
    endpoint = webhooks.endpoint_create(brand=brand, livemode=False, url=receiver.url, enabled_events=["timer.fired"])
    advance(clock.id, noop_fires(brand, clock, 2))

    def broken(*args, **kwargs):
        assert _show("synchronous_commit") == "off"
        raise RuntimeError("the receipt's write failed")

    monkeypatch.setattr(webhook_sql, "logged_receipt", broken)
    with pytest.raises(RuntimeError):
        deliver(endpoint)
    assert _show("synchronous_commit") == "on"


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_deleted_while_its_post_was_out_still_gets_the_receipt_without_a_log(brand, clock, receiver,
                                                                                          monkeypatch):
    """The log row goes with its endpoint: one deleted while its POST was out leaves the receipt alone written
    (the combined statement's INSERT fails on the endpoint's key), not a claim that raised."""
    from timers.http import Response

    endpoint = hearing(brand, receiver, ("timer.fired",))
    advance(clock.id, noop_fires(brand, clock, 1))

    def post_while_deleted(method, url, **kwargs):
        webhooks.endpoint_delete(endpoint=WebhookEndpoint.objects.get(pk=endpoint.id))
        return Response(200, "OK", {}, b"ok")

    monkeypatch.setattr(webhooks, "send", post_while_deleted)
    stats = deliver(endpoint)
    assert stats.sent == 1
    assert Outbox.objects.get(domain=endpoint.id).status == "sent"
    assert not WebhookAttempt.objects.filter(endpoint_id=endpoint.id).exists()
