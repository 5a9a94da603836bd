"""What an arming over the API costs the database (issue 26): POST /timers is the key's lookup, the INSERT and
one statement for the rest (the key's history, the brand's LiveClock row, the workers' wake), prepared once per
PostgreSQL connection. And what the cheaper path must still do: a revoked key stops at its next request, and a
LiveClock row that is gone is made again."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from timers.api.serializers import timer_json
from timers.clock import wall_now
from timers.models import ApiKey, LiveClock, Timer, live_domain
from timers.tenants import api_key_create, brand_get_or_create
from timers.timeutil import iso_z
from timers.wakes import WAKE_HORIZON

pytestmark = pytest.mark.django_db

TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


@pytest.fixture
def live_key():
    brand = brand_get_or_create(name="arm.statements")
    key, secret = api_key_create(brand=brand, live=True)
    return brand, key, secret


def _arm(client, secret: str, key: str, owed_at):
    return client.post("/timers", data=json.dumps({"key": key, "owed_at": iso_z(owed_at), "handler": "noop"}),
                       content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")


def _statements(q: CaptureQueriesContext) -> list[str]:
    return [x["sql"] for x in q.captured_queries if not x["sql"].upper().startswith(TRANSACTION)]


@pytest.mark.parametrize("ahead", [timedelta(hours=1), timedelta(seconds=1)], ids=["far", "near"])
def test_an_arming_over_the_api_is_three_statements_prepared(client, live_key, ahead):
    brand, _, secret = live_key
    assert _arm(client, secret, "job_1:task:tick:0", wall_now() + ahead).status_code == 201
    with CaptureQueriesContext(connection) as q:
        r = _arm(client, secret, "job_1:task:tick:1", wall_now() + ahead)
    assert r.status_code == 201
    # The answer is the stored row's, as the ORM's create gave it; and the row is found by its owed time, as the
    # tick's claim finds it (SQLite compares datetimes as text: an offset written after them misorders them).
    stored = Timer.objects.get(domain=live_domain(brand.id), key="job_1:task:tick:1")
    assert r.json() == timer_json(stored)
    assert Timer.objects.filter(pk=stored.pk, owed_at__lte=stored.owed_at, armed_at__gte=stored.armed_at).exists()
    sql = _statements(q)
    if connection.vendor != "postgresql":
        assert len(sql) == 4, sql  # the key, the INSERT, history, the LiveClock row
        return
    # The key; the INSERT; history with the LiveClock upsert (and a near timer's NOTIFY) in one statement.
    assert len(sql) == 3, sql
    assert ("pg_notify" in sql[2]) == (ahead < WAKE_HORIZON)
    with connection.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        prepared = " ".join(row[0] for row in cur.fetchall())
    if settings.KEEPING_TIME.get("API_PREPARE", True):  # KT_API_PREPARE=0 (a pooler) sends them as text
        assert "timers_apikey" in prepared and "INSERT INTO \"timers_timer\"" in prepared
        assert "timers_liveclock" in prepared
    else:
        assert "timers_apikey" not in prepared


def test_a_revoked_key_stops_at_its_next_request(client, live_key):
    brand, key, secret = live_key
    assert _arm(client, secret, "job_1:task:tick:0", wall_now() + timedelta(hours=1)).status_code == 201
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=wall_now())
    r = _arm(client, secret, "job_1:task:tick:1", wall_now() + timedelta(hours=1))
    assert (r.status_code, r.json()["error"]["code"]) == (401, "invalid_api_key")
    assert list(Timer.objects.filter(domain=live_domain(brand.id)).values_list("key", flat=True)) == [
        "job_1:task:tick:0"]


def test_an_arming_names_its_live_clock_again_when_the_row_is_gone(client, live_key):
    brand, _, secret = live_key
    assert _arm(client, secret, "job_1:task:tick:0", wall_now() + timedelta(hours=1)).status_code == 201
    assert LiveClock.objects.filter(pk=live_domain(brand.id)).exists()
    LiveClock.objects.all().delete()
    assert _arm(client, secret, "job_1:task:tick:1", wall_now() + timedelta(hours=1)).status_code == 201
    assert LiveClock.objects.filter(pk=live_domain(brand.id)).exists()  # else the live loop never runs it
