"""Quotas per brand and mode (issue 36, item 1): a test key's test clocks, each mode's schedules and webhook
endpoints, the shortest period a schedule fires at, the furthest one advance moves a clock. Past one, a create
is 429 quota_exceeded naming the quota in param and the message, and nothing is written; the CLI says the same
in one line. Each test sets its own small quota."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

from tests.support.cli import one_line
from timers.models import Schedule, TestClock, WebhookEndpoint
from timers.tenants import api_key_create

pytestmark = pytest.mark.django_db

URL = "https://hooks.example.com/kt"


@pytest.fixture
def quota(settings):
    def set_(**limits):
        settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ALLOW_TARGETS": ["0.0.0.0/0", "::/0"],
                                 "QUOTAS": {**settings.KEEPING_TIME["QUOTAS"], **limits}}
    set_()
    return set_


@pytest.fixture
def keys(brand):
    return api_key_create(brand=brand)[1], api_key_create(brand=brand, live=True)[1]


def call(key: str, method: str, path: str, body: dict | None = None):
    return Client().generic(method, path, data=json.dumps(body or {}), content_type="application/json",
                            HTTP_AUTHORIZATION=f"Bearer {key}")


def exceeded(r, quota: str) -> str:
    assert r.status_code == 429, (r.status_code, r.content[:300])
    err = r.json()["error"]
    assert err["code"] == "quota_exceeded" and err["param"] == quota and quota in err["message"], err
    assert "Retry-After" not in r  # no wait makes room: removing one does
    return err["message"]


def test_a_test_keys_test_clocks_are_counted(quota, keys):
    quota(test_clocks=2)
    test, _ = keys
    made = [call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}) for _ in range(2)]
    assert all(r.status_code == 201 for r in made)
    message = exceeded(call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}), "test_clocks")
    assert "KT_QUOTA_TEST_CLOCKS" in message and "2" in message
    assert TestClock.objects.count() == 2
    one_line(["testclocks", "create", "--frozen-time", "2027-01-01T00:00Z"], "quota_exceeded")
    assert call(test, "DELETE", f"/test_clocks/{made[0].json()['id']}").status_code == 200
    assert call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).status_code == 201


def test_each_modes_schedules_and_webhook_endpoints_are_counted(quota, keys):
    quota(schedules=1, webhook_endpoints=1)
    test, live = keys
    clock = call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).json()["id"]
    schedule = {"spec": {"every": "1h"}, "target": {"url": URL}}
    assert call(test, "POST", "/schedules", {**schedule, "test_clock": clock}).status_code == 200
    exceeded(call(test, "POST", "/schedules", {**schedule, "test_clock": clock, "name": "two"}), "schedules")
    assert call(live, "POST", "/schedules", schedule).status_code == 200  # the live mode's own
    exceeded(call(live, "POST", "/schedules", {**schedule, "name": "two"}), "schedules")
    assert Schedule.objects.count() == 2
    endpoint = {"url": URL, "enabled_events": ["*"]}
    assert call(test, "POST", "/webhook_endpoints", endpoint).status_code == 201
    exceeded(call(test, "POST", "/webhook_endpoints", endpoint), "webhook_endpoints")
    assert call(live, "POST", "/webhook_endpoints", endpoint).status_code == 201
    message = exceeded(call(live, "POST", "/webhook_endpoints", endpoint), "webhook_endpoints")
    assert "live mode" in message and "KT_QUOTA_WEBHOOK_ENDPOINTS" in message
    assert WebhookEndpoint.objects.count() == 2


@pytest.mark.parametrize("spec", [{"every": "30s"}, {"every": "59s"}, {"cron": "* * * * *"},
                                  {"cron": "0,2 * * * *"}])
def test_a_schedule_may_fire_no_more_often_than_the_shortest_period(quota, keys, spec):
    quota(schedule_period="5m")
    test, _ = keys
    clock = call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).json()["id"]
    message = exceeded(call(test, "POST", "/schedules", {"spec": spec, "target": {"url": URL}, "test_clock": clock}),
                       "schedule_period")
    assert "5 minutes" in message
    assert not Schedule.objects.exists()
    quota(schedule_period="10s")  # a setting lowers it
    r = call(test, "POST", "/schedules", {"spec": spec, "target": {"url": URL}, "test_clock": clock})
    assert r.status_code == 200, r.content


def test_the_default_shortest_period_is_a_minute_for_test_and_live_keys(quota, keys):
    test, live = keys
    clock = call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).json()["id"]
    for key, body in ((test, {"test_clock": clock}), (live, {})):
        exceeded(call(key, "POST", "/schedules", {**body, "spec": {"every": "1s"}, "target": {"url": URL}}),
                 "schedule_period")
        r = call(key, "POST", "/schedules", {**body, "spec": {"every": "1m"}, "target": {"url": URL}})
        assert r.status_code == 200, r.content


def test_an_advance_moves_a_test_clock_at_most_the_furthest_span_a_call(quota, keys):
    test, _ = keys
    clock = call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).json()["id"]
    message = exceeded(call(test, "POST", f"/test_clocks/{clock}/advance", {"span": "11y"}), "advance")
    assert "10 years" in message and "KT_QUOTA_ADVANCE" in message
    exceeded(call(test, "POST", f"/test_clocks/{clock}/advance", {"to": "2037-01-01T00:00:01Z"}), "advance")
    assert TestClock.objects.get(pk=clock).status == "ready"
    quota(advance="1mo")
    exceeded(call(test, "POST", f"/test_clocks/{clock}/advance", {"span": "32d"}), "advance")
    assert call(test, "POST", f"/test_clocks/{clock}/advance", {"span": "1mo"}).status_code == 202


def test_a_quota_set_off_counts_nothing(quota, keys):
    quota(test_clocks=0, schedule_period="", advance="")
    test, _ = keys
    for _ in range(3):
        assert call(test, "POST", "/test_clocks", {"frozen_time": "2027-01-01T00:00Z"}).status_code == 201


def _quotas_with(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import json, keeping_time.settings as s; print(json.dumps(s.KEEPING_TIME['QUOTAS']))"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          cwd=settings.BASE_DIR, timeout=60)


@pytest.mark.processes
def test_the_quotas_come_from_the_environment_with_sane_defaults():
    done = _quotas_with({})
    assert json.loads(done.stdout) == {"test_clocks": 100, "schedules": 1000, "webhook_endpoints": 16,
                                       "schedule_period": "1m", "advance": "10y"}, done.stderr
    done = _quotas_with({"KT_QUOTA_TEST_CLOCKS": "5", "KT_QUOTA_SCHEDULE_PERIOD": "10s", "KT_QUOTA_ADVANCE": "off"})
    got = json.loads(done.stdout)
    assert got["test_clocks"] == 5 and got["schedule_period"] == "10s" and got["advance"] == "", got
    done = _quotas_with({"KT_QUOTA_SCHEDULE_PERIOD": "a minute"})
    assert done.returncode != 0 and "KT_QUOTA_SCHEDULE_PERIOD='a minute'" in done.stderr
