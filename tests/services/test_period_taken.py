"""A period's job is opened once, whoever asks first (issue 37): an order, the plan's schedule, or a Schedule whose
target is the Service. The one that comes second opens nothing and says so (``job_exists`` to an order,
``schedule.period_taken`` on the record for a mint), the same on SQLite (the embedded default) as on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from calendars.brand_calendars import calendar_create
from services.models import Job
from services.orders import job_order, subscription_start
from services.subjects import subject_create
from tests.conftest import at
from timers.advance import advance
from timers.errors import KeepingTimeError
from timers.models import DeadLetter, Event, Schedule, ScheduleTick, Timer
from timers.schedules import schedule_create
from timers.tenants import brand_get_or_create
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2027, 1, 20, 14, 0, tzinfo=UTC)


@pytest.fixture
def acme():
    brand = brand_get_or_create(name="apis.tax")
    cal = calendar_create(brand=brand, name="New York office", zone="America/New_York", holiday_country="US",
                          holiday_subdivision="DC", now=T0)
    tc = test_clock_create(brand=brand, frozen_time=T0, name="trial")
    subject = subject_create(brand=brand, domain=tc.id, kind="taxpayer", key="12-3456789", name="Acme Robotics",
                             calendar=cal, now=T0)
    sub = subscription_start(brand=brand, subject=subject, plan="tax-plan",
                             input={"entity": "C corp", "states": ["CA"]})
    return brand, tc, subject, sub


def types(domain: str, *names: str) -> list[tuple[str, dict]]:
    return [(e.type, e.data) for e in Event.objects.filter(domain=domain, type__in=names).order_by("seq")]


def test_ordering_a_period_the_plan_will_mint_is_period_taken_at_the_mint_and_the_schedule_goes_on(acme, caplog):
    brand, tc, subject, sub = acme
    # The plan mints the 2026 return on 2027-02-01; the owner orders it today.
    ordered = job_order(brand=brand, subject=subject, service="annual-return", period="2026")
    advance(tc.id, at("2027-02-05T00:00Z"))
    mint = Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:annual:2026")
    assert mint.status == "fired", (mint.status, mint.held_since)  # never held as a failed timer
    assert not Event.objects.filter(domain=tc.id, type="timer.failed").exists()
    assert "runs again" not in caplog.text  # the batch knew the period's job: no kept write failed
    assert types(tc.id, "schedule.period_taken") == [("schedule.period_taken",
                                                      {"schedule": "annual", "period": "2026"})]
    assert list(Job.objects.filter(subject=subject, service="annual-return").values_list("id", flat=True)) == [
        ordered.id]
    # The next year's return is scheduled, and the owner has the refusal on the schedule's record.
    assert Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:annual:2027").status == "armed"
    sch = Schedule.objects.get(domain=tc.id, owner_ref=f"{sub.id}:annual")
    assert DeadLetter.objects.filter(schedule=sch, error="period_taken").count() == 1


def test_ordering_a_period_the_plan_minted_is_job_exists_naming_its_job(acme):
    brand, tc, subject, sub = acme
    advance(tc.id, at("2027-02-05T00:00Z"))
    minted = Job.objects.get(subscription=sub, service="annual-return", period="2026")
    with pytest.raises(KeepingTimeError) as err:
        job_order(brand=brand, subject=subject, service="annual-return", period="2026")
    assert err.value.code == "job_exists" and minted.id in err.value.message
    assert Job.objects.filter(subject=subject, service="annual-return").count() == 1


def test_orders_of_two_services_for_one_period_are_both_opened(acme):
    brand, tc, subject, sub = acme
    job_order(brand=brand, subject=subject, service="annual-return", period="2026")
    notice = job_order(brand=brand, subject=subject, service="notice-response", period="2026",
                       input={"reply_by": "2027-03-01"})
    assert notice.subscription_id == sub.id and notice.period == "2026"


@pytest.mark.parametrize("first", ["plan", "schedule"])
def test_a_schedule_whose_target_is_the_service_the_plan_mints_respects_period_taken(acme, first):
    brand, tc, subject, sub = acme
    # The plan mints each quarter's estimate 10 days before it is paid (2027-Q1's on 2027-04-05); a Schedule
    # the brand made for the same customer fires a week after each quarter ends (2027-04-08 for Q1), or a day
    # after each starts (2027-04-02 for Q2, before the plan's Q2 mint on 2027-06-05).
    at_ = "1w after end" if first == "plan" else "1d after start"
    sch = schedule_create(brand=brand, domain=tc.id, spec={"each": "quarter", "at": at_, "time": "09:00"},
                          zone="America/New_York", overlap="allow",
                          target={"service": "estimate", "subject": subject.id, "input": {}})
    advance(tc.id, at("2027-06-30T00:00Z"))
    estimates = Job.objects.filter(subject=subject, service="estimate")
    periods = sorted(estimates.values_list("period", flat=True))
    assert periods == ["2027-Q1", "2027-Q2"], periods  # one job a quarter, never two
    assert not Event.objects.filter(domain=tc.id, type="timer.failed").exists()
    taken = types(tc.id, "schedule.period_taken")
    if first == "plan":  # the Schedule's Q1 fire finds the plan's job: its tick is dead-lettered, its Run closed
        assert [d["period"] for _, d in taken] == ["2027-Q1"]
        tick = ScheduleTick.objects.get(schedule=sch, intended_at=at("2027-04-08T13:00Z"))
        assert tick.state == "dead_lettered"
        assert DeadLetter.objects.get(tick=tick).error.startswith("period_taken")
    else:  # the plan's Q2 mint finds the Schedule's job
        assert taken == [("schedule.period_taken", {"schedule": "estimate", "period": "2027-Q2"})]
        q2 = estimates.get(period="2027-Q2")
        assert q2.subscription_id == sub.id  # the plan's period: its slot is taken by the Schedule's job
