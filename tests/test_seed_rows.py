"""The seed's last partial rows (issue 27): schedule names, a hard date that only a postponement moves, a proposal
near the close, versions as the seed prints them, and docs/kinds/. Each test fails when its row is taken out."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from timers.models import Schedule
from timers.schedules import ScheduleError, schedule_create
from timers.services import api_key_create, brand_get_or_create, test_clock_create

HOOK = {"url": "https://example.com/hooks/fire"}


# -- schedules: a name pattern, unique per brand and clock -------------------------------------------------
@pytest.fixture
def api(brand):
    _, key = api_key_create(brand=brand)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.mark.parametrize("name", ["Nightly", "9am", "-x", "nightly report", "a" * 64, "nightly_report", "é",
                                  "nightly\n", 5, ["x"]])
def test_a_schedule_name_off_the_pattern_is_400_invalid_name(api, clock, name):
    r = api.post("/schedules", {"test_clock": clock.id, "name": name, "spec": {"every": "1h"}, "target": HOOK},
                 format="json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["code"] == "invalid_name" and r.json()["error"]["param"] == "name"
    assert not Schedule.objects.exists()


def test_a_schedule_name_on_the_pattern_is_taken(api, clock):
    for name in ("n", "nightly-report", "a" + "b" * 62, ""):
        r = api.post("/schedules", {"test_clock": clock.id, "name": name, "spec": {"every": "1h"}, "target": HOOK},
                     format="json")
        assert r.status_code == 200, r.content
        assert r.json()["name"] == name


def test_a_schedule_name_is_unique_per_brand_and_clock(api, brand, clock):
    body = {"test_clock": clock.id, "name": "nightly", "spec": {"every": "1h"}, "target": HOOK}
    assert api.post("/schedules", body, format="json").status_code == 200
    r = api.post("/schedules", {**body, "spec": {"cron": "30 2 * * *"}}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "schedule_name_taken", r.content
    assert Schedule.objects.filter(name="nightly").count() == 1
    # Another clock of the brand, and another brand on the live clock, each may use the name.
    other = test_clock_create(brand=brand, frozen_time=clock.frozen_time, name="other")
    assert api.post("/schedules", {**body, "test_clock": other.id}, format="json").status_code == 200
    schedule_create(brand=brand, domain="live", spec={"every": "1h"}, target=HOOK, name="nightly")
    schedule_create(brand=brand_get_or_create(name="apis.other"), domain="live", spec={"every": "1h"},
                    target=HOOK, name="nightly")
    with pytest.raises(ScheduleError) as exc:
        schedule_create(brand=brand, domain="live", spec={"every": "1h"}, target=HOOK, name="nightly")
    assert exc.value.code == "schedule_name_taken" and exc.value.status == 409
    # Unnamed schedules are many.
    for _ in range(2):
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target=HOOK)


def test_the_database_keeps_a_schedule_name_once_not_a_check_before(brand, clock):
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target=HOOK, name="nightly")
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.create(id="sch_twin", brand=brand, domain=clock.id, name="nightly", spec=sch.spec,
                                target_kind=sch.target_kind, target=sch.target, created_at=sch.created_at)
