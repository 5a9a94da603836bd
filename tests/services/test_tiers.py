"""Plans (issue 13): every key runs on every plan in test; live, the brand's tier decides which time runs,
and a Service whose time the tier does not cover is refused with a code that names the tier."""

from __future__ import annotations

import pytest

from calendars.models import Calendar, Subject
from services import registry
from services.subscriptions import subscription_create
from services.tiers import needs
from tests.conftest import T0
from timers.errors import KeepingTimeError
from timers.models import Brand, live_domain
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create


def test_each_example_service_needs_the_plan_its_time_runs_on():
    assert needs(registry.get("estimate")) == ("free", "")  # a date on the job, and its deadline
    assert needs(registry.get("tax-plan"))[0] == "launch"  # schedules and a yearly cycle
    assert needs(registry.get("annual-return")) == ("launch", "clocks.carryforward.lives_on")  # past the job
    assert needs(registry.get("deal")) == ("team", "deliver.appraise.pool")  # a market of people


def _subject(brand: Brand, domain: str) -> Subject:
    cal = Calendar.objects.create(brand=brand, name=f"cal {domain}", zone="America/New_York")
    return Subject.objects.create(brand=brand, domain=domain, kind="taxpayer", key_name="ein", key="12-3456789",
                                  name="Acme", calendar=cal, created_at=T0)


@pytest.mark.parametrize("tier, service, refused", [
    ("free", "tax-plan", "plan_launch_required"),
    ("launch", "tax-plan", None),
    ("launch", "deal-desk", "plan_team_required"),
    ("team", "deal-desk", None),
])
def test_live_the_tier_decides_and_a_refusal_names_the_tier(db, tier, service, refused):
    brand = brand_get_or_create(name="plans.test")
    Brand.objects.filter(pk=brand.pk).update(tier=tier)
    brand.refresh_from_db()
    subject = _subject(brand, live_domain(brand.id))
    if refused is None:
        assert subscription_create(brand=brand, domain=live_domain(brand.id), subject=subject, service=service, now=T0,
                                   input={"entity": "C corp", "states": []} if service == "tax-plan" else {})
        return
    with pytest.raises(KeepingTimeError) as exc:
        subscription_create(brand=brand, domain=live_domain(brand.id), subject=subject, service=service, now=T0,
                            input={"entity": "C corp", "states": []} if service == "tax-plan" else {})
    assert exc.value.code == refused and exc.value.status == 403
    assert not subject.subscriptions.exists()


def test_on_a_test_clock_every_key_runs_on_every_plan(db):
    brand = brand_get_or_create(name="plans.test")
    Brand.objects.filter(pk=brand.pk).update(tier="free")
    brand.refresh_from_db()
    clock = test_clock_create(brand=brand, frozen_time=T0, name="free brand")
    subject = _subject(brand, clock.id)
    assert subscription_create(brand=brand, domain=clock.id, subject=subject, service="deal-desk", now=T0)
