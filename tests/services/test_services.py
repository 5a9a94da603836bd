"""Services, subscriptions, schedules, cycles and money on PostgreSQL, and the Tax Plan's year."""

from __future__ import annotations

import importlib
import sys
import types
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError, transaction

from calendars.models import Calendar, Subject
from services import registry
from services.declare import Price, Schedule, Service, ServiceError, SubjectSpec, clock
from services.jobs import job_open
from services.models import Job, MoneyLine, Subscription
from services.subscriptions import subscription_cancel, subscription_create
from tests.conftest import at
from timers.advance import advance
from timers.arming import timer_wake
from timers.clock import VirtualWallClock
from timers.errors import KeepingTimeError
from timers.models import Event, Membership, Timer
from timers.test_clocks import test_clock_create
from timers.worker import Worker


@pytest.fixture(autouse=True)
def fixtures_loaded():
    registry.load(["tests.support.svc_fixtures"])


@pytest.fixture
def world(brand):
    def make(start: str, service: str):
        tc = test_clock_create(brand=brand, frozen_time=at(start), name=service)
        cal = Calendar.objects.create(brand=brand, name=f"ny {tc.id}", zone="America/New_York")
        subject = Subject.objects.create(brand=brand, domain=tc.id, kind="account", key_name="domain",
                                         key="acme.example", name="Acme", calendar=cal, created_at=at(start))
        sub = subscription_create(brand=brand, domain=tc.id, subject=subject, service=service)
        return tc, sub

    return make


def types_in(domain: str, *types_: str) -> list[tuple[str, str]]:
    return list(Event.objects.filter(domain=domain, type__in=types_).order_by("seq").values_list("type", "key"))


def test_renewal_comes_before_the_mint_in_one_instant(world):
    tc, sub = world("2027-01-02T14:00Z", "t-monthly")  # 09:00 New York: the cycle and the mint share 14:00Z
    advance(tc.id, at("2027-02-03T00:00Z"))
    feb2 = Event.objects.filter(domain=tc.id, owed_at=at("2027-02-02T14:00Z")).order_by("seq")
    kinds = [e.type for e in feb2 if e.type in ("subscription.renewed", "schedule.minted")]
    assert kinds == ["subscription.renewed", "schedule.minted"]


def test_allowances_reset_on_renewal(world):
    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    advance(tc.id, at("2027-01-03T00:00Z"))  # January's job
    sub.refresh_from_db()
    assert sub.usage == {"t-task": 1}
    advance(tc.id, at("2027-02-02T13:59Z"))
    sub.refresh_from_db()
    assert sub.usage == {"t-task": 1} and sub.cycle == 1
    advance(tc.id, at("2027-02-02T14:00Z"))  # renewed (usage reset), then February's job takes 1 of 1
    sub.refresh_from_db()
    assert sub.cycle == 2 and sub.usage == {"t-task": 1}
    renewed = Event.objects.get(domain=tc.id, type="subscription.renewed")
    assert renewed.data["cycle"] == 2
    charges = MoneyLine.objects.filter(subscription=sub, kind="charge").order_by("owed_at")
    assert [(c.amount_cents, c.status) for c in charges] == [(4900, "collected"), (4900, "collected")]


def test_a_mint_woken_twice_opens_one_job(world):
    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    advance(tc.id, at("2027-01-04T00:00Z"), redeliver=True)
    assert Job.objects.filter(subscription=sub).count() == 1
    mint = Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:job:2027-01")
    assert mint.wakes == 2
    assert timer_wake(timer=mint)["replayed"] is True
    assert Job.objects.filter(subscription=sub).count() == 1
    job = Job.objects.get(subscription=sub)
    with pytest.raises(IntegrityError), transaction.atomic():  # period_taken is a constraint
        Job.objects.create(brand_id=job.brand_id, domain=job.domain, service=job.service, subject=job.subject,
                           subscription=sub, schedule="job", period="2027-01", opened_at=job.opened_at)


@pytest.mark.parametrize("taken_by", ["job", "run"])
def test_a_mint_whose_period_is_taken_opens_nothing_and_the_batch_goes_on(world, caplog, taken_by):
    from timers.models import Schedule, ScheduleRun

    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    mint = Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:job:2027-01")
    # The period's job is there already (opened some other way), or its Run started: the mint must not open a
    # second one, nor any of the clocks, deadlines or money a second job would bring; the rest of the batch
    # (the cycle) lands. The batch asks once for what is taken: it is not lost and run again.
    taken = None
    if taken_by == "job":
        taken = Job.objects.create(brand_id=sub.brand_id, domain=tc.id, service="t-task", subject=sub.subject,
                                   subscription=sub, schedule="job", period="2027-01", opened_at=mint.owed_at)
    else:
        ScheduleRun.objects.create(id="run_taken", schedule=Schedule.objects.get(domain=tc.id, owner_ref=f"{sub.id}:job"),
                                   intended_at=mint.owed_at, state=ScheduleRun.State.OPEN, started_at=mint.owed_at)
    advance(tc.id, at("2027-02-03T00:00Z"))
    assert "runs again" not in caplog.text
    jobs = Job.objects.filter(subscription=sub).order_by("period")
    if taken is None:
        assert [j.period for j in jobs] == ["2027-02"]
        assert Event.objects.filter(domain=tc.id, type="schedule.period_taken", key=mint.key).count() == 1
        return
    assert [(j.id == taken.id, j.period) for j in jobs] == [(True, "2027-01"), (False, "2027-02")]
    assert Event.objects.filter(domain=tc.id, type="schedule.period_taken", key=mint.key).count() == 1
    assert not Event.objects.filter(domain=tc.id, type="job.opened", key=mint.key).exists()
    assert Event.objects.filter(domain=tc.id, type="subscription.renewed").count() == 1


@pytest.mark.parametrize(("service", "periods"), [("t-yearly-open", ["2027", "2028", "2029"]),
                                                  ("t-yearly-latest", ["2029"])])
def test_a_three_year_gap_mints_each_period_or_only_the_latest(world, service, periods):
    tc, sub = world("2027-06-01T14:00Z", service)
    # The worker is down for three years and wakes once, in March 2030.
    Worker(VirtualWallClock(at("2030-03-01T12:00Z")), domain=tc.id, until=at("2030-03-01T12:00Z"),
           test_clocks=False).run()
    assert sorted(Job.objects.filter(subscription=sub).values_list("period", flat=True)) == periods
    skipped = Event.objects.filter(domain=tc.id, type="schedule.skipped").count()
    assert skipped == 3 - len(periods)
    renewals = Event.objects.filter(domain=tc.id, type="subscription.renewed").count()
    assert renewals == 2  # 2028-06 and 2029-06: every owed cycle, in order
    collected = MoneyLine.objects.filter(subscription=sub, status="collected").count()
    assert collected == 3  # cycle 1, 2 and 3: money collects every owed line


def test_a_late_jobs_charge_is_reduced_by_price_late(world):
    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    armer_job = None
    advance(tc.id, at("2027-01-03T00:00Z"))
    with transaction.atomic():
        from timers.armer import DirectArmer

        armer = DirectArmer(brand=sub.brand_id, domain=tc.id)
        armer_job = job_open(armer=armer, brand_id=sub.brand_id, domain=tc.id, service="t-task",
                             subject=sub.subject, period="2027-01-extra", input={}, subscription=sub,
                             price_cents=10_000)
    advance(tc.id, at("2027-01-20T00:00Z"))
    armer_job.refresh_from_db()
    assert armer_job.late
    credit = MoneyLine.objects.get(job=armer_job, kind="credit")
    assert credit.amount_cents == 3_000 and credit.status == "collected"
    assert Event.objects.get(domain=tc.id, type="job.late", subject=armer_job.id).data["credit"] == 3_000
    # The included job (in the plan, $0.00) is late too, but nothing comes off a charge of nothing.
    included = Job.objects.get(subscription=sub, period="2027-01")
    assert included.late and not MoneyLine.objects.filter(job=included).exists()


def test_cancel_at_the_cycles_end_stops_the_next_renewal_not_this_periods_jobs(world):
    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    advance(tc.id, at("2027-01-05T00:00Z"))
    from timers.armer import DirectArmer

    subscription_cancel(armer=DirectArmer(brand=sub.brand_id, domain=tc.id), sub=sub)
    advance(tc.id, at("2027-04-01T00:00Z"))
    sub.refresh_from_db()
    assert sub.status == "ended"
    assert Event.objects.filter(domain=tc.id, type="subscription.renewed").count() == 0
    assert Event.objects.get(domain=tc.id, type="subscription.ended").owed_at == at("2027-02-02T14:00Z")
    jobs = Job.objects.filter(subscription=sub)
    assert [j.period for j in jobs] == ["2027-01"]  # February's mint came after the end: nothing minted
    # January's job runs on: its deadline still fires after the subscription ended.
    assert Event.objects.filter(domain=tc.id, type="job.late", subject=jobs[0].id).exists()
    assert MoneyLine.objects.filter(subscription=sub, kind="charge").count() == 1


def _module(name: str, **services) -> str:
    mod = types.ModuleType(name)
    mod.__file__ = str(importlib.import_module("tests.support.svc_fixtures").__file__)
    for k, v in services.items():
        setattr(mod, k, v)
    sys.modules[name] = mod
    return name


def test_a_malformed_offset_or_unknown_clock_is_an_error_at_load_naming_file_and_field():
    subject = SubjectSpec(kind="account", key="domain")
    bad_within = Service(name="t-bad", subject=subject, price=Price(within="5d before fiel"),
                         clocks={"file": clock("file", due=lambda x: None)})
    with pytest.raises(ServiceError, match=r"tests/support/svc_fixtures.py: price.within: '5d before fiel' names 'fiel'"):
        registry.load([_module("tests._bad1", s=bad_within)])
    bad_at = Service(name="t-bad2", subject=subject,
                     schedule={"x": Schedule(order="t-task", each="month", at="ten days after end")})
    with pytest.raises(ServiceError, match=r"deliver.schedule.x.at: 'ten days after end'"):
        registry.load([_module("tests._bad2", s=bad_at), "tests.support.svc_fixtures"])
    with pytest.raises(ServiceError, match=r"clocks.file.rungs: 'notice soon'"):
        clock("file", due=lambda x: None, rungs=("notice soon",))


def test_the_tax_plans_year_agrees_four_ways_and_mints_the_2027_return(db):
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    sub = Subscription.objects.get(domain=tc)
    out = StringIO()
    call_command("tick", "1y", "--compare", "--redeliver", "--test-clock", tc, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("all 4 agree · sha256:")
    assert "0 submissions sent twice" in lines[4]
    out = StringIO()
    call_command("tick", "--to", "2028-02-01T20:00Z", "--test-clock", tc, stdout=out)
    job = Job.objects.get(subscription=sub, period="2027")
    assert job.opened_at == at("2028-02-01T14:00Z")
    # The mint's notice 90d rungs (owed 2028-01-19) fired in the same instant; NJ's and Texas's wait.
    fired = Timer.objects.filter(domain=tc, status="fired", key__contains="notice 90d:2027@0")
    assert sorted(t.owner.split("#")[1] for t in fired) == ["US", "US-CA", "US-NY"]
    assert all(t.fired_at == at("2028-02-01T14:00Z") and t.owed_at == at("2028-01-19T14:00Z") for t in fired)
    waiting = Timer.objects.filter(domain=tc, status="armed", key__contains="notice 90d:2027@0")
    assert sorted(t.owner.split("#")[1] for t in waiting) == ["US-NJ", "US-TX"]
    assert {t.owed_at for t in waiting} == {at("2028-02-15T14:00Z")}
    est = Job.objects.filter(subscription=sub, service="estimate").values_list("period", flat=True)
    assert sorted(est) == ["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]
    assert Event.objects.filter(domain=tc, type="schedule.minted", owed_at=at("2027-04-05T13:00Z")).exists()
    assert timedelta(0) == Timer.objects.get(domain=tc, key=f"{sub.id}:schedule:annual:2027").late_by


def test_the_subject_calendar_lists_mints_and_renewals(db):
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    tc = text.split("test clock ")[1].split()[0]
    subject = text.split("subject ")[1].split()[0]
    call_command("tick", "1y", "--test-clock", tc, stdout=StringIO())
    out = StringIO()
    call_command("subjects", "calendar", subject, "--from", "2027-01-01", "--test-clock", tc, stdout=out)
    rows = [line.split("  ")[0:2] for line in out.getvalue().splitlines()[2:]]
    job = Job.objects.get(domain=tc, period="2026")
    assert any(line.startswith("2027-02-01  the 2026 return is minted") and f"the brand minted {job.id}" in line
               for line in out.getvalue().splitlines())
    assert any(line.startswith("2028-02-01  the 2027 return is minted") and line.rstrip().endswith("ahead")
               for line in out.getvalue().splitlines())
    assert any(r[0] == "2028-01-20" for r in rows)


def test_a_guarantee_credits_a_penalty_notice_up_to_its_cap(brand):
    from calendars.acts import clock_reassign
    from services.guarantees import penalty_notice
    from tests.support.acme import acme_subject
    from timers.armer import DirectArmer

    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="g")
    subject = acme_subject(brand, tc.id)
    armer = DirectArmer(brand=brand, domain=tc.id)
    job = job_open(armer=armer, brand_id=brand.id, domain=tc.id, service="annual-return", subject=subject,
                   period="2027", input={"states": ["CA"]})
    job_clocks = {c.name: c for c in job.subject.clocks.filter(owner_ref=job.id)}
    assert set(job_clocks) == {"file", "pay"}
    pay = job_clocks["pay"]
    pay.guarantee = {"cap_usd": 500}
    pay.save()
    # The customer answers for it: the brand's guarantee covers it only once one of the brand's people does.
    with pytest.raises(KeepingTimeError) as refused:
        penalty_notice(armer=armer, clock=pay, amount_cents=30_000, notice="CP14")
    assert (refused.value.code, refused.value.status) == ("guarantee_not_brands", 409)
    assert not Event.objects.filter(domain=tc.id, type="clock.penalty").exists()
    ada = get_user_model().objects.create_user("ada")
    member = Membership.objects.create(user=ada, brand=brand, role="member", name="Ada Lovelace")
    clock_reassign(armer=armer, clock=pay, to=member, by="the owner", why="assigned in the owner console")
    first = penalty_notice(armer=armer, clock=pay, amount_cents=30_000, notice="CP14")
    second = penalty_notice(armer=armer, clock=pay, amount_cents=30_000, notice="CP501")
    third = penalty_notice(armer=armer, clock=pay, amount_cents=30_000, notice="CP503")
    assert (first.amount_cents, second.amount_cents, third) == (30_000, 20_000, None)  # capped at $500
    advance(tc.id, at("2027-06-02T00:00Z"))
    assert MoneyLine.objects.filter(job=job, kind="credit", status="collected").count() == 2
    file = job_clocks["file"]
    assert penalty_notice(armer=armer, clock=file, amount_cents=10_000, notice="CP2000") is None  # no guarantee


def test_cancel_before_delivery_returns_the_hold_and_stops_the_jobs_timers(brand):
    from services.jobs import job_end
    from services.money import post_money
    from tests.support.acme import acme_subject
    from timers.armer import DirectArmer

    tc = test_clock_create(brand=brand, frozen_time=at("2027-06-01T12:00Z"), name="c")
    subject = acme_subject(brand, tc.id)
    armer = DirectArmer(brand=brand, domain=tc.id)
    job = job_open(armer=armer, brand_id=brand.id, domain=tc.id, service="annual-return", subject=subject,
                   period="2027", input={"states": ["NY"]}, price_cents=120_000)
    post_money(armer=armer, brand_id=brand.id, domain=tc.id, kind="hold", cents=120_000, memo="hold",
               owed_at=armer.now, key_owner=job.id, occurrence="hold", job=job)
    assert Timer.objects.filter(domain=tc.id, status="armed", owner__startswith="clk_").count() > 10
    job_end(armer=armer, job=job, status="canceled", reason="client left")
    advance(tc.id, at("2029-01-01T00:00Z"))
    release = MoneyLine.objects.get(job=job, kind="release")
    assert release.amount_cents == 120_000 and release.status == "collected"
    assert not Timer.objects.filter(domain=tc.id, status="armed").exclude(owner=job.id).exists()
    assert not Event.objects.filter(domain=tc.id, type__in=["clock.notice", "job.late", "clock.passed"]).exists()
    assert Event.objects.get(domain=tc.id, type="job.canceled").data["released"] == 120_000


def test_every_timer_is_pinned_to_the_bundle_it_was_armed_under(db):
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2027-02-02T00:00Z", "--test-clock", tc, stdout=StringIO())
    job = Job.objects.get(domain=tc, service="annual-return", period="2026")
    sub = Subscription.objects.get(domain=tc)
    assert job.version == registry.bundle("annual-return").version and job.version.startswith("sha256:")
    assert "services/examples/apis_tax/tax.py" in registry.bundle("annual-return").files  # what it imports
    clocks = Timer.objects.filter(domain=tc, owner__startswith="clk_")
    assert clocks and {t.version for t in clocks} == {job.version}
    assert {t.version for t in Timer.objects.filter(domain=tc, owner=sub.id)} == {sub.version}
    assert {t.version for t in Timer.objects.filter(domain=tc, owner=job.id)} == {job.version}


def test_a_quiet_job_reads_its_last_activity_when_the_silent_timer_fires(world):
    """Activity is not on the closed re-arm list: it moves no timer. The silent timer, when it fires, reads
    the last activity: some within the span arms the next check (@1) from it and raises nothing; with none
    since, the check raises the signal."""
    from services.jobs import job_activity
    from timers.armer import DirectArmer

    tc, sub = world("2027-11-01T14:00Z", "t-monthly")
    armer = DirectArmer(brand=sub.brand_id, domain=tc.id)
    deal = job_open(armer=armer, brand_id=sub.brand_id, domain=tc.id, service="t-deal", subject=sub.subject,
                    period="2027-11", input={})
    key = f"{deal.id}:deadline:gone_dark:2027-11"
    before = Timer.objects.get(domain=tc.id, key=key)
    assert before.owed_at == at("2027-11-15T14:00Z")
    advance(tc.id, at("2027-11-03T14:00Z"))
    job_activity(armer=DirectArmer(brand=sub.brand_id, domain=tc.id), job=deal, what="the account replied")
    after = Timer.objects.get(domain=tc.id, key=key)
    assert (after.status, after.owed_at, after.by) == ("armed", before.owed_at, "")  # activity moved nothing
    deal.refresh_from_db()
    assert deal.last_activity_at == at("2027-11-03T14:00Z")
    activity = Event.objects.get(domain=tc.id, type="job.activity")
    assert activity.data == {"what": "the account replied"} and activity.owed_at == at("2027-11-03T14:00Z")

    advance(tc.id, at("2027-11-16T00:00Z"))
    assert Timer.objects.get(domain=tc.id, key=key).status == "fired"
    assert not Event.objects.filter(domain=tc.id, type="signal.raised").exists()  # there was activity
    nxt = Timer.objects.get(domain=tc.id, key=f"{key}@1")
    assert (nxt.status, nxt.owed_at, nxt.armed_by) == ("armed", at("2027-11-17T14:00Z"), after.id)
    advance(tc.id, at("2027-11-30T00:00Z"))
    raised = Event.objects.get(domain=tc.id, type="signal.raised")
    assert raised.owed_at == at("2027-11-17T14:00Z") and raised.data["goto"] == "dark"
    assert raised.key == f"{key}@1"
    assert not Timer.objects.filter(domain=tc.id, key=f"{key}@2").exists()  # quiet since: no further check


def test_delivering_a_job_carries_what_the_subject_keeps(world):
    from services.jobs import job_deliver
    from timers.armer import DirectArmer
    from timers.errors import KeepingTimeError

    tc, sub = world("2027-01-02T14:00Z", "t-monthly")
    advance(tc.id, at("2027-01-03T00:00Z"))
    job = Job.objects.get(subscription=sub, period="2027-01")
    armer = DirectArmer(brand=sub.brand_id, domain=tc.id)
    with pytest.raises(KeepingTimeError) as err:
        job_deliver(armer=armer, job=job, keeps={"secrets": 1})
    assert err.value.code == "unknown_keeps"
    job_deliver(armer=armer, job=job, keeps={"carryforwards": {"nol": 120_000}})
    sub.subject.refresh_from_db()
    assert sub.subject.keeps == {"carryforwards": {"nol": 120_000}}
    assert not Timer.objects.filter(domain=tc.id, owner=job.id, kind="deadline", status="armed").exists()
    advance(tc.id, at("2027-01-31T00:00Z"))
    assert not Event.objects.filter(domain=tc.id, type="job.late", subject=job.id).exists()


def test_timers_list_on_a_job_shows_its_mint_its_clocks_and_the_next_armed(db):
    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2028-02-02T14:00Z", "--test-clock", tc, stdout=StringIO())
    job = Job.objects.get(domain=tc, service="annual-return", period="2027")
    out = StringIO()
    call_command("timers", "list", "--on", job.id, "--test-clock", tc, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{job.id} · annual-return · period 2027 · on 2027-06 · ")  # the deploy's name
    assert " · at 2028-02-02 14:00Z · UTC · 4 fired · 1 held · " in lines[0]  # the at-risk waits on the books
    assert lines[0].endswith("armed, the next 6 below")
    assert f"{job.subscription_id}:schedule:annual:2027" in lines[2]  # the mint that opened it
    # Its at-risk timer is held from the mint: the return waits on the organizer's books.
    assert lines[3].split()[1] == "held" and lines[3].endswith(f"{job.id}:deadline:at_risk:2027")
    assert all("notice 90d:2027@0" in line for line in lines[4:7])
    assert len(lines) == 2 + 5 + 6


def test_a_minted_return_carries_carryforwards_to_the_subject(db):
    from services.jobs import job_deliver
    from timers.armer import DirectArmer

    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2027-03-01T00:00Z", "--test-clock", tc, stdout=StringIO())
    job = Job.objects.select_related("subject", "subscription").get(domain=tc, service="annual-return")
    job_deliver(armer=DirectArmer(brand=job.brand_id, domain=tc), job=job, keeps={"carryforwards": {"nol": 5_000}})
    job.subject.refresh_from_db()
    assert job.subject.keeps == {"carryforwards": {"nol": 5_000}}


@pytest.mark.parametrize(("service", "minted_at_resume"), [("t-yearly-open", ["2028", "2029"]),
                                                           ("t-yearly-latest", ["2029"])])
def test_a_paused_schedule_mints_nothing_and_resume_follows_catch_up(world, service, minted_at_resume):
    from services.subscriptions import subscription_pause, subscription_resume
    from timers.armer import DirectArmer

    tc, sub = world("2027-06-01T14:00Z", service)
    advance(tc.id, at("2028-03-01T00:00Z"))  # the 2027 period is minted on 2028-02-01
    subscription_pause(armer=DirectArmer(brand=sub.brand_id, domain=tc.id), sub=sub, note="client on leave")
    mint = Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:job:2028")
    assert mint.status == "held" and mint.held_by == "subscription.paused"
    advance(tc.id, at("2030-03-01T00:00Z"))  # the 2028 and 2029 mints (2029-02, 2030-02) pass while paused
    assert list(Job.objects.filter(subscription=sub).values_list("period", flat=True)) == ["2027"]
    assert Event.objects.filter(domain=tc.id, type="subscription.renewed").count() == 2  # billing goes on
    sub.refresh_from_db()
    subscription_resume(armer=DirectArmer(brand=sub.brand_id, domain=tc.id), sub=sub)
    advance(tc.id, at("2030-03-01T00:00Z"))
    periods = sorted(Job.objects.filter(subscription=sub).values_list("period", flat=True))
    assert periods == sorted(["2027", *minted_at_resume])
    resumed = Timer.objects.get(domain=tc.id, key=f"{sub.id}:schedule:job:2028")
    assert resumed.status == "fired" and resumed.owed_at == at("2029-02-01T14:00Z")  # its own time, not moved
    assert resumed.late_by == timedelta(0)  # a test clock: fired at once on resume, in place
    with pytest.raises(Exception) as err:
        subscription_resume(armer=DirectArmer(brand=sub.brand_id, domain=tc.id), sub=sub)
    assert getattr(err.value, "code", "") == "subscription_not_paused"


def test_a_notice_received_mints_its_reply_once_within_the_plans_allowance(db):
    from services.subject_events import subject_event
    from timers.armer import DirectArmer

    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    text = out.getvalue()
    tc = text.split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2027-08-01T12:00Z", "--test-clock", tc, stdout=StringIO())
    subject = Subject.objects.get(domain=tc)
    armer = DirectArmer(brand=subject.brand_id, domain=tc)
    (job,) = subject_event(armer=armer, subject=subject, type="notice.received", key="CP2000-1",
                           data={"reply_by": "2027-09-30", "notice": "CP2000"})
    assert subject_event(armer=armer, subject=subject, type="notice.received", key="CP2000-1",
                         data={"reply_by": "2027-09-30"}) == []  # the same notice again: one job
    reply = job.subject.clocks.get(owner_ref=job.id, name="reply").items.get()
    assert reply.due_date.isoformat() == "2027-09-30"
    assert Timer.objects.get(domain=tc, key=f"{reply.owner_key}:rung:notice 14d:CP2000-1@0").owed_at == \
        at("2027-09-16T13:00Z")  # 09:00 New York
    subject_event(armer=armer, subject=subject, type="notice.received", key="CP14-2", data={"reply_by": "2027-10-15"})
    (third,) = subject_event(armer=armer, subject=subject, type="notice.received", key="CP501-3",
                             data={"reply_by": "2027-10-29"})
    assert job.price_cents == 0 and third.price_cents == 45_000  # notice-response: 2 in the plan
    sub = Subscription.objects.get(domain=tc)
    assert sub.usage["notice-response"] == 3


def test_a_job_opened_past_its_own_deadline_records_at_risk_then_late_in_order(db):
    from services.subject_events import subject_event
    from timers.armer import DirectArmer
    from timers.models import Event

    out = StringIO()
    call_command("loadexample", "apis_tax", "--reset", stdout=out)
    tc = out.getvalue().split("test clock ")[1].split()[0]
    call_command("tick", "--to", "2027-08-01T12:00Z", "--test-clock", tc, stdout=StringIO())
    subject = Subject.objects.get(domain=tc)
    # "3d before reply", and the reply is due the day after tomorrow: the job is late as it opens.
    (job,) = subject_event(armer=DirectArmer(brand=subject.brand_id, domain=tc), subject=subject,
                           type="notice.received", key="CP14-9", data={"reply_by": "2027-08-03"})
    at_risk, late = (Timer.objects.get(domain=tc, key=f"{job.id}:deadline:{p}:{job.period}") for p in ("at_risk", "late"))
    assert late.owed_at < at("2027-08-01T12:00Z") and at_risk.owed_at == late.owed_at
    call_command("tick", "--to", "2027-08-01T12:05Z", "--test-clock", tc, stdout=StringIO())
    types = list(Event.objects.filter(domain=tc, subject=job.id, type__in=["job.at_risk", "job.late"])
                 .order_by("seq").values_list("type", flat=True))
    assert types == ["job.at_risk", "job.late"]


def test_a_schedule_mints_at_its_declared_local_time(world):
    """Not always 09:00: a schedule's ``time`` is the local minute its mints fire, in the subject's zone, and a
    time that is not one is refused at load naming the file and field."""
    from services.declare import Schedule as Sch
    from services.declare import Service, ServiceError
    from tests.support.svc_fixtures import SUBJECT, task_job

    tc, sub = world("2027-01-10T12:00Z", "t-evening")
    mint = Timer.objects.get(domain=tc.id, owner=sub.id, kind="schedule", status="armed")
    assert mint.owed_at == at("2027-02-02T22:30Z")  # 17:30 in New York (EST) on 02-02, a day after 02-01
    bad = Service(name="t-bad-mint", subject=SUBJECT, where="brand/plan.py",
                  schedule={"job": Sch(order="t-task", each="month", at="1d after start", time="25:00")})
    with pytest.raises(ServiceError, match="brand/plan.py: deliver.schedule.job.time"):
        bad.check({"t-task": task_job})
