"""Rate limits (issue 25, item 9), as Stripe's: a burst over the limit is 429 rate_limited with Retry-After.

The API counts per secret key (another key, of the same brand too, is not slowed); the customer portal's
sign-in link, the delivery portal's login form and the owner console's login count per client address, and
answer an HTML page. Each test sets its own small rate (override_settings: the throttles read the rates per
request) and uses its own key or address, so no other test's calls count against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from timers.models import TestClock
from timers.tenants import api_key_create

pytestmark = pytest.mark.django_db


def rates(api: str | None = None, sign_in: str | None = None):
    return override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK,
                                             "DEFAULT_THROTTLE_RATES": {"api_key": api, "sign_in": sign_in}})


def call(client: Client, key: str, path: str = "/test_clocks", **extra):
    return client.get(path, HTTP_AUTHORIZATION=f"Bearer {key}", **extra)


def limited(r, *, most: int) -> int:
    """The API's 429: rate_limited in the error shape, Retry-After whole seconds from 1 to ``most``."""
    assert r.status_code == 429, (r.status_code, r.content[:300])
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["code"] == "rate_limited" and "retry after" in err["message"]
    seconds = int(r["Retry-After"])
    assert 1 <= seconds <= most, seconds
    return seconds


def test_a_burst_over_the_keys_rate_is_429_and_another_key_is_not_slowed(brand):
    _, first = api_key_create(brand=brand)
    _, second = api_key_create(brand=brand)  # the same brand: the limit is the key's
    client = Client()
    with rates(api="3/min"):
        assert [call(client, first).status_code for _ in range(3)] == [200, 200, 200]
        limited(call(client, first), most=60)
        limited(client.post("/test_clocks", json.dumps({"frozen_time": 1796115600}), content_type="application/json",
                            HTTP_AUTHORIZATION=f"Bearer {first}"), most=60)
        assert not TestClock.objects.exists()  # refused before the view: nothing made
        assert call(client, second).status_code == 200
        # No key, or a bad one: 401, whatever the rate (the limit is per key, and there is none).
        for _ in range(5):
            assert client.get("/test_clocks").status_code == 401
            assert call(client, "sk_test_nope").status_code == 401
    with rates(api=None):  # "off"
        assert call(client, first).status_code == 200


def test_over_real_http_the_429_carries_retry_after_and_a_refused_post_can_be_sent_again(brand, live_server):
    """A 429 is never kept as an Idempotency-Key's answer: the same POST after Retry-After is made."""
    _, key = api_key_create(brand=brand)

    def send(method: str, path: str, body: dict | None = None, headers: dict | None = None):
        req = urllib.request.Request(f"{live_server.url}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                                              **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), json.loads(e.read())

    with rates(api="2/s"):
        idem = {"Idempotency-Key": str(uuid.uuid4())}
        body = {"frozen_time": 1796115600, "name": "after the wait"}
        while True:  # two calls inside one second (a slow machine may need another try)
            started = time.monotonic()
            first, second = send("GET", "/test_clocks"), send("GET", "/test_clocks")
            status, headers, got = send("POST", "/test_clocks", body, idem)
            if time.monotonic() - started < 0.9:
                break
            time.sleep(1.1)
        assert (first[0], second[0]) == (200, 200)
        assert status == 429 and got["error"]["code"] == "rate_limited", got
        assert headers["Retry-After"] == "1" and headers["Content-Type"].startswith("application/json")
        assert not TestClock.objects.filter(name="after the wait").exists()
        time.sleep(int(headers["Retry-After"]) + 0.1)
        status, headers, got = send("POST", "/test_clocks", body, idem)
        assert status == 201 and got["name"] == "after the wait", got
        assert "Idempotent-Replayed" not in headers


def test_the_schema_documents_the_429_on_every_operation_a_key_calls():
    schema = Client().get("/openapi.json").json()
    operations = [(path, method, op) for path, item in schema["paths"].items() for method, op in item.items()
                  if isinstance(op, dict) and op.get("security")]
    assert len(operations) > 40
    for path, method, op in operations:
        answer = op["responses"].get("429")
        assert answer is not None and "Retry-After" in answer["headers"], (method, path)


# -- sign-ins, per client address ----------------------------------------------------------------------------
def page_429(r, *, most: int) -> None:
    assert r.status_code == 429, (r.status_code, r.content[:300])
    assert r["Content-Type"].startswith("text/html")
    assert 1 <= int(r["Retry-After"]) <= most
    assert b"Too many sign-in attempts" in r.content and b"<html" in r.content.lower()


def test_the_portals_sign_in_link_is_limited_per_address(db):
    client = Client()
    with rates(sign_in="3/min"):
        for _ in range(3):
            r = client.get("/portal/customer/session?token=nope", REMOTE_ADDR="10.1.0.1")
            assert r.status_code == 403  # the expired-link page
        page_429(client.get("/portal/customer/session?token=other", REMOTE_ADDR="10.1.0.1"), most=60)
        # A forwarded-for header the server was not told to trust names no new client.
        page_429(client.get("/portal/customer/session?token=nope", REMOTE_ADDR="10.1.0.1",
                            HTTP_X_FORWARDED_FOR="192.0.2.77"), most=60)
        assert client.get("/portal/customer/session?token=nope", REMOTE_ADDR="10.1.0.2").status_code == 403


def test_the_delivery_login_form_is_limited_per_address(db):
    get_user_model().objects.create_user("grace", password="a-long-enough-secret-9")
    client = Client()
    with rates(sign_in="3/min"):
        for _ in range(3):
            r = client.post("/portal/delivery/login", {"username": "grace", "password": "wrong"},
                            REMOTE_ADDR="10.2.0.1")
            assert r.status_code == 200 and "_auth_user_id" not in client.session  # the form again, its error
        # Over the rate even the right password is not checked.
        page_429(client.post("/portal/delivery/login", {"username": "grace", "password": "a-long-enough-secret-9"},
                             REMOTE_ADDR="10.2.0.1"), most=60)
        assert "_auth_user_id" not in client.session
        assert client.get("/portal/delivery/login", REMOTE_ADDR="10.2.0.1").status_code == 200  # the form is read
        r = client.post("/portal/delivery/login", {"username": "grace", "password": "a-long-enough-secret-9"},
                        REMOTE_ADDR="10.2.0.2")
        assert r.status_code == 302 and "_auth_user_id" in client.session


def test_the_owner_consoles_login_is_limited_per_address(db):
    get_user_model().objects.create_superuser("root", password="a-long-enough-secret-9")
    client = Client()
    with rates(sign_in="2/min"):
        for _ in range(2):
            r = client.post("/admin/login/", {"username": "root", "password": "wrong"}, REMOTE_ADDR="10.3.0.1")
            assert r.status_code == 200
        page_429(client.post("/admin/login/", {"username": "root", "password": "a-long-enough-secret-9"},
                             REMOTE_ADDR="10.3.0.1"), most=60)
        assert "_auth_user_id" not in client.session
        r = client.post("/admin/login/", {"username": "root", "password": "a-long-enough-secret-9"},
                        REMOTE_ADDR="10.3.0.2")
        assert r.status_code == 302 and "_auth_user_id" in client.session


# -- configuration ---------------------------------------------------------------------------------------------
def _settings_with(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = ("import json, keeping_time.settings as s; "
            "print(json.dumps([s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES'], s.REST_FRAMEWORK['NUM_PROXIES']]))")
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          cwd=settings.BASE_DIR, timeout=60)


@pytest.mark.processes
def test_the_rates_come_from_the_environment():
    done = _settings_with({"KT_RATE_LIMIT": "1000/min", "KT_SIGN_IN_RATE_LIMIT": "off", "KT_NUM_PROXIES": "1"})
    assert json.loads(done.stdout) == [{"api_key": "1000/min", "sign_in": None}, 1], done.stderr
    done = _settings_with({"KT_RATE_LIMIT": "100 per second"})
    assert done.returncode != 0 and "KT_RATE_LIMIT='100 per second': a rate is" in done.stderr


# -- one count across processes --------------------------------------------------------------------------------
TRIES = """
import os, sys, time
import django
django.setup()
from django.test import RequestFactory
from timers.api.throttles import sign_in_limited
request = RequestFactory().post("/portal/delivery/login", REMOTE_ADDR=sys.argv[1])
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))  # wall-clock ok: both processes start their tries at once
allowed = sum(sign_in_limited(request) is None for _ in range(int(sys.argv[3])))
print(allowed)
"""


@pytest.mark.processes
@pytest.mark.postgresql("two processes count one address's tries in the test database")
def test_sign_in_tries_count_once_across_processes(transactional_db):
    """Two worker processes, as gunicorn runs them, each try 15 sign-ins from one address at the same moment:
    10/min lets exactly 10 through in all, not 10 each (a process's memory) nor a few more (a lost count)."""
    from tests.support.processes import worker_env

    env = {**worker_env(), "KT_SIGN_IN_RATE_LIMIT": "10/min"}
    address = f"2001:db8::{uuid.uuid4().hex[:4]}"  # an address no other run of this test has tried from
    start = time.time() + 4  # wall-clock ok: a moment both processes are up by
    procs = [subprocess.Popen([sys.executable, "-c", TRIES, address, str(start), "15"], cwd=settings.BASE_DIR,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    allowed = [int(out) for out, _ in outs]
    assert sum(allowed) == 10, allowed
