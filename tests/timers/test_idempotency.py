"""Idempotency-Key, Stripe's way (issue 36, items 4 and 5): an answer is replayed only to the API key that made
it, never with a secret it showed once; only what executed is kept (a refusal for a clock advancing, a 429 or
an unknown parameter keeps nothing, so the retry runs); parameters are compared as parameters, not bytes; and a
replay counts against the key's rate limit."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.test import Client, override_settings

from tests.support.acme import acme_subject
from timers.models import IdempotencyKey, TestClock, Timer, WebhookEndpoint
from timers.tenants import api_key_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 20, 14, tzinfo=UTC)


def post(key: str, path: str, body: object, *, idem: str, raw: str | None = None,
         content_type: str = "application/json"):
    data = raw if raw is not None else json.dumps(body)
    return Client().generic("POST", path, data=data, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {key}",
                            HTTP_IDEMPOTENCY_KEY=idem)


@pytest.fixture
def keys(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ALLOW_TARGETS": ["0.0.0.0/0", "::/0"]}
    _, first = api_key_create(brand=brand)
    _, second = api_key_create(brand=brand)
    return first, second


def test_an_answer_is_replayed_only_to_the_api_key_that_made_it(keys):
    first, second = keys
    idem = str(uuid.uuid4())
    body = {"frozen_time": "2027-01-01T00:00Z", "name": "mine"}
    made = post(first, "/test_clocks", body, idem=idem)
    assert made.status_code == 201
    other = post(second, "/test_clocks", body, idem=idem)  # the same brand and mode, another key
    assert other.status_code == 400 and other.json()["error"]["code"] == "idempotency_key_in_use", other.content
    assert made.json()["id"] not in other.content.decode()
    assert TestClock.objects.count() == 1
    again = post(first, "/test_clocks", body, idem=idem)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true" and again.json() == made.json()


def test_a_secret_shown_once_is_never_kept_and_its_replay_says_so(keys, brand):
    first, _ = keys
    idem = str(uuid.uuid4())
    body = {"url": "https://hooks.example.com/kt", "enabled_events": ["*"]}
    made = post(first, "/webhook_endpoints", body, idem=idem)
    assert made.status_code == 201 and made.json()["secret"].startswith("whsec_")
    kept = IdempotencyKey.objects.get(key=idem)
    assert b"whsec_" not in bytes(kept.body) and made.json()["secret"].encode() not in bytes(kept.body)
    again = post(first, "/webhook_endpoints", body, idem=idem)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    replayed = again.json()
    assert "secret" not in replayed and replayed["shown_once"] == ["secret"]
    assert {k: v for k, v in made.json().items() if k != "secret"} == {k: v for k, v in replayed.items()
                                                                      if k != "shown_once"}
    assert WebhookEndpoint.objects.count() == 1
    # A schedule's HTTP target signs its calls with a secret shown once too.
    clock = test_clock_create(brand=brand, frozen_time=T0)
    idem = str(uuid.uuid4())
    body = {"spec": {"every": "1h"}, "target": {"url": "https://hooks.example.com/s"}, "test_clock": clock.id}
    made = post(first, "/schedules", body, idem=idem)
    assert made.status_code == 200 and made.json()["secret"].startswith("whsec_")
    assert b"whsec_" not in bytes(IdempotencyKey.objects.get(key=idem).body)
    again = post(first, "/schedules", body, idem=idem)
    assert "secret" not in again.json() and again.json()["shown_once"] == ["secret"]
    # A customer portal link: its token is a sign-in.
    subject = acme_subject(brand, clock.id)
    idem = str(uuid.uuid4())
    link = post(first, "/portal_sessions", {"subject": subject.id}, idem=idem)
    assert link.status_code == 200 and "token=" in link.json()["url"]
    token = link.json()["url"].split("token=", 1)[1]
    assert token.encode() not in bytes(IdempotencyKey.objects.get(key=idem).body)
    again = post(first, "/portal_sessions", {"subject": subject.id}, idem=idem)
    assert again["Idempotent-Replayed"] == "true" and "url" not in again.json()
    assert again.json()["shown_once"] == ["url"] and again.json()["id"] == link.json()["id"]


def test_parameters_are_compared_as_parameters_not_bytes(keys):
    first, _ = keys
    idem = str(uuid.uuid4())
    made = post(first, "/test_clocks", None, idem=idem, raw='{"frozen_time": "2027-01-01T00:00Z", "name": "a"}')
    assert made.status_code == 201
    for raw in ('{"name":"a","frozen_time":"2027-01-01T00:00Z"}',
                '{\n  "frozen_time" :  "2027-01-01T00:00Z" ,\n\t"name": "a"\n}\n'):
        again = post(first, "/test_clocks", None, idem=idem, raw=raw)
        assert again.status_code == 201 and again["Idempotent-Replayed"] == "true", again.content
    other = post(first, "/test_clocks", None, idem=idem, raw='{"frozen_time": "2027-01-01T00:00Z", "name": "b"}')
    assert other.status_code == 400 and other.json()["error"]["code"] == "idempotency_key_in_use"
    form = str(uuid.uuid4())
    made = post(first, "/test_clocks", None, idem=form, raw="frozen_time=1798761600&name=f",
                content_type="application/x-www-form-urlencoded")
    assert made.status_code == 201, made.content
    again = post(first, "/test_clocks", None, idem=form, raw="name=f&frozen_time=1798761600",
                 content_type="application/x-www-form-urlencoded")
    assert again["Idempotent-Replayed"] == "true"
    assert TestClock.objects.count() == 2


def test_a_refusal_for_a_clock_advancing_keeps_nothing_and_the_retry_runs_when_it_is_ready(keys, brand):
    from timers.advance import run_requested_advances

    first, _ = keys
    clock = test_clock_create(brand=brand, frozen_time=T0)
    assert post(first, f"/test_clocks/{clock.id}/advance", {"to": "2027-01-21T00:00Z"},
                idem=str(uuid.uuid4())).status_code == 202
    idem = str(uuid.uuid4())
    body = {"key": "job_1:task:a:1", "owed_at": "2027-02-01T00:00Z", "handler": "noop", "test_clock": clock.id}
    busy = post(first, "/timers", body, idem=idem)
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "test_clock_advancing"
    assert not IdempotencyKey.objects.filter(key=idem).exists()
    assert run_requested_advances() == 1
    ready = post(first, "/timers", body, idem=idem)
    assert ready.status_code == 201 and "Idempotent-Replayed" not in ready, ready.content
    assert Timer.objects.filter(key="job_1:task:a:1").count() == 1


def test_an_unknown_parameter_keeps_nothing_and_the_fixed_request_runs(keys):
    first, _ = keys
    idem = str(uuid.uuid4())
    bad = post(first, "/test_clocks", {"frozen_time": "2027-01-01T00:00Z", "jitter": "1s"}, idem=idem)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "parameter_unknown"
    fixed = post(first, "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}, idem=idem)
    assert fixed.status_code == 201 and "Idempotent-Replayed" not in fixed


def test_a_replay_counts_against_the_keys_rate_limit(keys):
    first, second = keys
    idem = str(uuid.uuid4())
    body = {"frozen_time": "2027-01-01T00:00Z"}
    rates = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api_key": "3/min", "sign_in": None}}
    with override_settings(REST_FRAMEWORK=rates):
        assert post(first, "/test_clocks", body, idem=idem).status_code == 201
        for _ in range(2):
            assert post(first, "/test_clocks", body, idem=idem)["Idempotent-Replayed"] == "true"
        over = post(first, "/test_clocks", body, idem=idem)
        assert over.status_code == 429 and over.json()["error"]["code"] == "rate_limited" and over["Retry-After"]
        # A POST under an Idempotency-Key is counted once, not twice: another key's fourth is its first refused.
        for n in range(4):
            r = post(second, "/test_clocks", body, idem=str(uuid.uuid4()))
            assert r.status_code == (201 if n < 3 else 429), (n, r.content)
    assert TestClock.objects.count() == 4
