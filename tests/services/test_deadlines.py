"""A job's deadline written before a clock ('5d before file') follows the clock's moves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from calendars.clocks import clock_step
from calendars.models import ClockItem
from services.models import Job
from tests.support.acme import tax_plan_subscribers
from timers.advance import advance
from timers.armer import DirectArmer
from timers.arming import timer_arm
from timers.errors import KeepingTimeError
from timers.models import Event, Timer
from timers.test_clocks import test_clock_create

START = datetime(2027, 1, 20, 14, tzinfo=UTC)


def _return_2027(brand):
    """The 2027 return on 2028-03-01, its books in since the mint (it opens waiting on the organizer)."""
    from services.jobs import job_resume_work

    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    advance(clock.id, datetime(2028, 2, 1, 14, tzinfo=UTC))
    job = Job.objects.get(domain=clock.id, service="annual-return", period="2027")
    assert job.waiting_on == "the organizer"
    job_resume_work(armer=DirectArmer(brand=brand, domain=clock.id), job=job)
    advance(clock.id, datetime(2028, 3, 1, 14, tzinfo=UTC))
    job.refresh_from_db()
    return clock, job


def test_an_extension_before_the_deadline_moves_it_with_the_file_date(brand):
    clock, job = _return_2027(brand)
    assert job.late_at == datetime(2028, 4, 14, 4, 0, tzinfo=UTC)  # 5d before 04-18 closes, New York
    armer = DirectArmer(brand=brand, domain=clock.id)
    for item in ClockItem.objects.filter(clock__owner_ref=job.id, clock__name="file").select_related("clock"):
        clock_step(armer=armer, item=item, step="extend")
    job.refresh_from_db()
    # The earliest extended file date is 2028-10-16 (rolled from Sunday the 15th): late 5 days before it.
    assert job.late_at == datetime(2028, 10, 12, 4, 0, tzinfo=UTC)
    moves = Event.objects.filter(domain=clock.id, type="job.deadline_moved", subject=job.id).count()
    assert moves >= 1  # once each time the earliest file date moved (NJ's 05-15 was the earliest for a while)
    old = Timer.objects.filter(domain=clock.id, owner=job.id, kind="deadline").exclude(status="armed")
    assert {(t.status, t.by) for t in old} == {("superseded", "clock.moved")} and old.count() == 2 * moves
    new = {t.key.split(":")[2]: t for t in Timer.objects.filter(domain=clock.id, owner=job.id, status="armed",
                                                                  kind="deadline")}
    assert new["late"].key.endswith(f":2027@{moves}") and new["late"].owed_at == job.late_at
    assert new["at_risk"].owed_at == (job.opened_at + (job.late_at - job.opened_at) * 3 / 4).replace(microsecond=0)
    assert all(o.superseded_by for o in old)
    advance(clock.id, datetime(2028, 6, 1, tzinfo=UTC))
    job.refresh_from_db()
    assert not job.late and not Event.objects.filter(domain=clock.id, type="job.late", subject=job.id).exists()
    advance(clock.id, datetime(2028, 10, 13, tzinfo=UTC))
    job.refresh_from_db()
    assert job.late
    late = Event.objects.get(domain=clock.id, type="job.late", subject=job.id)
    assert late.owed_at == datetime(2028, 10, 12, 4, 0, tzinfo=UTC) and late.key.endswith(f"@{moves}")


def _extends_in_the_tick(f):
    from calendars.clock_reads import batch_item
    from timers.armer import FiringArmer

    for name in f.timer.data["items"]:  # each as the batch has it: read ahead, changes kept
        clock_step(armer=FiringArmer(f), item=batch_item(f, (f.timer.data["clock"], name)), step="extend")


def test_an_extension_in_the_tick_moves_the_deadline_as_one_outside_it_does(brand, handler):
    clock, job = _return_2027(brand)
    file = ClockItem.objects.filter(clock__owner_ref=job.id, clock__name="file").select_related("clock")
    handler("t.extends", _extends_in_the_tick, atomic=True)
    timer_arm(brand=brand, key=f"{job.id}:task:extend:1", owed_at=datetime(2028, 3, 2, 14, tzinfo=UTC),
              domain=clock.id, handler="t.extends",
              data={"clock": file[0].clock_id, "items": sorted(i.item for i in file)})
    advance(clock.id, datetime(2028, 3, 3, tzinfo=UTC))
    job.refresh_from_db()
    assert job.late_at == datetime(2028, 10, 12, 4, 0, tzinfo=UTC)  # as in the test above, outside the tick
    assert Event.objects.filter(domain=clock.id, type="job.deadline_moved", subject=job.id).exists()
    late = Timer.objects.get(domain=clock.id, owner=job.id, kind="deadline", status="armed", key__contains=":late:")
    assert late.owed_at == job.late_at


def test_a_move_of_another_clock_leaves_the_deadline(brand):
    clock, job = _return_2027(brand)
    before = list(Timer.objects.filter(domain=clock.id, owner=job.id, kind="deadline").values_list("key", "status"))
    armer = DirectArmer(brand=brand, domain=clock.id)
    pay = ClockItem.objects.select_related("clock").get(clock__owner_ref=job.id, clock__name="pay")
    from calendars.clocks import clock_move

    clock_move(armer=armer, item=pay, civil=datetime(2028, 5, 1).date(), by="test")
    after = list(Timer.objects.filter(domain=clock.id, owner=job.id, kind="deadline").values_list("key", "status"))
    assert after == before


def test_a_deadline_that_came_stays_when_the_date_moves_after_it(brand):
    clock, job = _return_2027(brand)
    # The run rung files the extension on 2028-04-15, a day after the return went late: late stays late.
    advance(clock.id, datetime(2028, 4, 16, tzinfo=UTC))
    job.refresh_from_db()
    moved = Event.objects.filter(domain=clock.id, type="clock.moved")
    assert moved.exists() and job.late
    assert not Event.objects.filter(domain=clock.id, type="job.deadline_moved", subject=job.id).exists()
    assert not Timer.objects.filter(domain=clock.id, owner=job.id, kind="deadline", by="clock.moved").exists()


def _at_risk(clock, job) -> Timer:
    return Timer.objects.filter(domain=clock.id, owner=job.id, kind="deadline", key__contains=":at_risk:") \
        .exclude(status="superseded").get()


def test_the_deadline_counts_only_while_the_work_is_the_brands(brand):
    from services.jobs import job_resume_work, job_wait

    clock, job = _return_2027(brand)  # on 2028-03-01 14:00Z; at risk 2028-03-27 00:30Z, late 2028-04-14 04:00Z
    late_at = job.late_at
    risk = _at_risk(clock, job)
    assert risk.status == "armed"
    job_wait(armer=DirectArmer(brand=brand, domain=clock.id), job=job, on="the organizer")
    risk.refresh_from_db()
    assert (risk.status, risk.held_by, risk.owed_at) == ("held", "the organizer", None)
    assert risk.remaining == datetime(2028, 3, 27, 0, 30, tzinfo=UTC) - datetime(2028, 3, 1, 14, tzinfo=UTC)
    late = Timer.objects.get(domain=clock.id, owner=job.id, key__contains=":late:")
    assert late.status == "armed" and late.owed_at == late_at  # only the at-risk timer waits
    advance(clock.id, datetime(2028, 3, 11, 14, tzinfo=UTC))  # ten days with the organizer
    assert not Event.objects.filter(domain=clock.id, type="job.at_risk", subject=job.id).exists()
    job.refresh_from_db()
    job_resume_work(armer=DirectArmer(brand=brand, domain=clock.id), job=job)
    risk.refresh_from_db()
    assert risk.status == "armed" and risk.owed_at == datetime(2028, 4, 6, 0, 30, tzinfo=UTC) and risk.by == "resume"
    job.refresh_from_db()
    assert job.late_at == late_at and job.waiting_on == ""


def test_a_resume_is_capped_at_late_and_one_whose_time_passed_fires_at_once(brand):
    from services.jobs import job_resume_work, job_wait

    clock, job = _return_2027(brand)
    job_wait(armer=DirectArmer(brand=brand, domain=clock.id), job=job, on="the organizer")
    advance(clock.id, datetime(2028, 4, 1, 14, tzinfo=UTC))
    job.refresh_from_db()
    job_resume_work(armer=DirectArmer(brand=brand, domain=clock.id), job=job)
    risk = _at_risk(clock, job)
    assert risk.owed_at == job.late_at  # now + 25½ days would be after late: capped at late_at
    job_wait(armer=DirectArmer(brand=brand, domain=clock.id), job=job, on="the organizer")
    advance(clock.id, datetime(2028, 4, 20, tzinfo=UTC))  # late came and went while it waited
    job.refresh_from_db()
    assert job.late
    job_resume_work(armer=DirectArmer(brand=brand, domain=clock.id), job=job)
    advance(clock.id, datetime(2028, 4, 20, tzinfo=UTC))
    fired = Event.objects.get(domain=clock.id, type="job.at_risk", subject=job.id)
    assert fired.fired_at == datetime(2028, 4, 20, tzinfo=UTC)  # at the resume, in place
    with pytest.raises(KeepingTimeError) as exc:
        job_resume_work(armer=DirectArmer(brand=brand, domain=clock.id), job=job)
    assert exc.value.code == "job_not_waiting"


def test_waiting_twice_is_refused(brand):
    from services.jobs import job_wait

    clock, job = _return_2027(brand)
    job_wait(armer=DirectArmer(brand=brand, domain=clock.id), job=job, on="the organizer")
    with pytest.raises(KeepingTimeError) as exc:
        job_wait(armer=DirectArmer(brand=brand, domain=clock.id), job=job, on="the buyer")
    assert exc.value.code == "job_waiting"


def test_the_example_return_waits_on_the_books_from_the_mint(brand):
    from django.core.management import call_command

    from timers.models import TestClock

    call_command("loadexample", "apis_tax", stdout=open("/dev/null", "w"))  # noqa: SIM115
    clock = TestClock.objects.get(name="Acme Robotics", status="ready")
    advance(clock.id, datetime(2028, 2, 1, 20, tzinfo=UTC))
    job = Job.objects.get(domain=clock.id, service="annual-return", period="2027")
    risk = _at_risk(clock, job)
    assert (job.waiting_on, risk.status, risk.held_by) == ("the organizer", "held", "the organizer")
    assert risk.held_since == datetime(2028, 2, 1, 14, tzinfo=UTC)
    advance(clock.id, datetime(2028, 2, 21, tzinfo=UTC))  # the books arrive on 2028-02-20 14:00Z
    risk.refresh_from_db()
    job.refresh_from_db()
    assert job.waiting_on == "" and risk.status == "armed"
    # 54d 10h 30m were left at the mint: resumed + remaining is 04-15 00:30, after late_at, so late_at it is.
    remaining = datetime(2028, 3, 27, 0, 30, tzinfo=UTC) - datetime(2028, 2, 1, 14, tzinfo=UTC)
    assert risk.owed_at == min(datetime(2028, 2, 20, 14, tzinfo=UTC) + remaining, job.late_at) == job.late_at
    assert Event.objects.filter(domain=clock.id, type="job.resumed", subject=job.id).count() == 1
