"""Nothing created or lost (issue 27): Hypothesis drives random sequences of takes, extends, acts, lapses,
cancels, penalties and renewals through the gate, and after each step the ledger is checked against a model
of what should have moved and against itself.

Each example runs in one transaction, rolled back at its end, on one test clock set up once: a monthly plan
($49.00, renewed by the tick) and jobs that hold $1,000.00 whose two acts (draft $200.00, pay $150.00 to the
member; review $300.00, pay $100.00) are done by ann or bob, and whose filing date the brand answers for with a
$250.00 guarantee (tests/support/money_fixtures.py). A refused step (the gate's or the domain's) must leave every
line as it was.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calendars.models import Clock, Subject
from services import registry
from services.acts import step_done
from services.guarantees import penalty_notice
from services.jobs import job_end, job_open
from services.ledger import brand_balance, job_ledgers
from services.members import pool_add
from services.models import Job, MoneyLine, Subscription, Task
from services.subscriptions import subscription_create
from services.tasks import task_extend, task_take
from timers.advance import advance
from timers.armer import DirectArmer
from timers.domains import domain_now
from timers.errors import KeepingTimeError, Refused
from timers.models import Membership
from timers.test_clocks import test_clock_create

HOLD, CAP = 100_000, 25_000
ACTS = {"draft": (20_000, 15_000), "review": (30_000, 10_000)}  # charge, the member's pay
MEMBERS = ("ann", "bob")

# An act is the commonest step (it is what moves money); a renewal runs the tick a month on, so it is rare.
KINDS = ("act",) * 4 + ("take", "extend", "end", "end", "penalty", "penalty", "open", "renew")
op = st.tuples(st.sampled_from(KINDS), st.integers(0, 2), st.sampled_from(MEMBERS), st.integers(1, 20_000),
               st.integers(0, 2), st.sampled_from(["lapsed", "canceled"]))


@pytest.fixture
def world(brand):
    registry.load(["tests.support.money_fixtures"])
    tc = test_clock_create(brand=brand, frozen_time=datetime(2027, 6, 1, 12, tzinfo=UTC), name="money")
    subject = Subject.objects.create(brand=brand, domain=tc.id, kind="account", key_name="domain",
                                     key="acme.example", name="Acme", created_at=tc.frozen_time)
    for username in MEMBERS:
        user = get_user_model().objects.create_user(username)
        pool_add(brand=brand, pool="crew",
                 membership=Membership.objects.create(user=user, brand=brand, role="member", name=username))
    sub = subscription_create(brand=brand, domain=tc.id, subject=subject, service="m-plan", now=tc.frozen_time)
    # Two jobs open before any example (each example's changes roll back): most steps have a job to act on.
    jobs = [open_job(brand, tc.id, subject, n).id for n in range(2)]
    return brand, tc.id, subject, sub, jobs


def open_job(brand, domain: str, subject, n: int) -> Job:
    return job_open(armer=DirectArmer(brand=brand, domain=domain), brand_id=brand.id, domain=domain, service="m-job",
                    subject=subject, period=f"p{n}", input={}, price_cents=HOLD)


class Model:
    """What should have moved, kept apart from the ledger's code."""

    def __init__(self, jobs: list[str]):
        self.jobs: list[str] = list(jobs)
        self.ended: dict[str, str] = {}
        self.acts: Counter = Counter()  # job -> charged by its acts
        self.pay: Counter = Counter()  # member -> pay
        self.notices: dict[str, dict[int, int]] = {}  # job -> notice -> amount first asked
        self.cycles = 1


def lines_now(domain: str) -> list[tuple]:
    return sorted(MoneyLine.objects.filter(domain=domain).values_list(
        "id", "kind", "amount_cents", "status", "member_id", "job_id", "subscription_id"))


def check(brand, domain: str, m: Model, users: dict[int, str]) -> list[tuple]:
    """The ledger against the model and against itself; returns the lines, for the next step's comparison."""
    lines = lines_now(domain)
    assert all(status != "void" and cents > 0 or kind == "charge" and cents == 0
               for _, kind, cents, status, *_ in lines), lines
    raw, pay, plan = Counter(), Counter(), []
    for _, kind, cents, _, member_id, job_id, _ in lines:
        raw[kind] += cents
        # Only a pay line names a member, and every pay line does (the database's constraint too).
        assert (member_id is not None) == (kind == "pay")
        if kind == "pay":
            pay[users[member_id]] += cents
        if job_id is None and kind == "charge":
            plan.append(cents)
    # Every member's pay is what their acts earned: never taken back by a lapse, a cancel or a credit.
    assert pay == +m.pay, (pay, m.pay)
    assert plan == [4_900] * m.cycles  # the plan: one charge each cycle
    # Per job: the hold is the buyer's 1,000.00; charges are the acts done (all of the hold once delivered);
    # ended, hold = charges + release; open, nothing released.
    for ledger in job_ledgers(Job.objects.filter(pk__in=m.jobs)):
        assert ledger.held == HOLD, ledger
        status = m.ended.get(ledger.job, "open")
        if status == "delivered":
            assert (ledger.charged, ledger.released) == (HOLD, 0), ledger
        else:
            assert ledger.charged == m.acts[ledger.job], ledger
            assert ledger.released == (HOLD - m.acts[ledger.job] if status != "open" else 0), ledger
        assert ledger.balanced and ledger.still_held == (0 if status != "open" else HOLD - ledger.charged)
        # Credits: each notice once, at most the cap, from the brand's line.
        asked = sum((m.notices.get(ledger.job) or {}).values())
        assert ledger.credited == min(asked, CAP), (ledger, m.notices.get(ledger.job))
    # The brand's balance adds up from the lines, whatever the ledger's own arithmetic.
    b = brand_balance(brand_id=brand.id, domain=domain)
    assert (b.charged, b.credited, b.refunded, b.pay) == (raw["charge"], raw["credit"], raw["refund"], raw["pay"])
    assert b.balanced and b.net == raw["charge"] - raw["credit"] - raw["refund"] - raw["pay"]
    # Nothing created or lost: the buyer's money is the plan's charges and the holds; it went to the brand
    # (charges), came back (releases) or is still held; what the brand keeps, its members' pay and its
    # credits back are its charges.
    assert raw["hold"] + 4_900 * m.cycles == raw["charge"] + raw["release"] + b.held
    assert b.net + raw["pay"] + raw["credit"] + raw["refund"] == raw["charge"]
    return lines


def run(brand, domain: str, subject, sub, m: Model, step: tuple) -> None:
    armer = DirectArmer(brand=brand, domain=domain)
    kind, which, member, amount, notice, ends = step
    if kind == "renew":
        advance(domain, domain_now(domain=domain) + timedelta(days=32))
        m.cycles = Subscription.objects.get(pk=sub.pk).cycle
        return
    if kind == "open":
        m.jobs.append(open_job(brand, domain, subject, len(m.jobs)).id)
        return
    job = Job.objects.get(pk=m.jobs[which % len(m.jobs)])
    task = Task.objects.filter(job=job, entry=job.step_entry).select_related("member").first()
    if kind in ("take", "extend", "act") and task is None:
        raise KeepingTimeError(f"{job.id} has no Task now", code="task_not_open")
    if kind == "take":
        task_take(armer=armer, task=task, member=member)
    elif kind == "extend":
        task_extend(armer=armer, task=task, member=task.member.username if task.member else member)
    elif kind == "act":  # by whoever holds the Task; an open one is taken first, in the same transaction
        if task.status == Task.Status.OPEN:
            task = task_take(armer=armer, task=task, member=member)
        by = task.member.username if task.member else member
        step_name = job.step
        step_done(armer=armer, job=job, step=step_name, member=by)
        charge, pay = ACTS[step_name]
        m.acts[job.id] += charge
        m.pay[by] += pay
        if Job.objects.get(pk=job.pk).status == Job.Status.DELIVERED:
            m.ended[job.id] = "delivered"
    elif kind == "end":
        job_end(armer=armer, job=job, status=ends)
        m.ended[job.id] = ends
    elif kind == "penalty":
        clock = Clock.objects.get(owner_ref=job.id, name="filing")
        penalty_notice(armer=armer, clock=clock, amount_cents=amount, notice=f"CP{notice}")
        m.notices.setdefault(job.id, {}).setdefault(notice, amount)


@pytest.mark.django_db
@settings(max_examples=int(__import__("os").environ.get("MONEY_EXAMPLES", 500)), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(op, max_size=6))
def test_money_is_neither_created_nor_lost(world, steps):
    brand, domain, subject, sub, jobs = world
    users = dict(get_user_model().objects.filter(username__in=MEMBERS).values_list("pk", "username"))
    with transaction.atomic():
        m = Model(jobs)
        before = lines_now(domain)
        for step in steps:
            try:
                with transaction.atomic():  # the gate: one transaction, all of it or none
                    run(brand, domain, subject, sub, m, step)
            except (KeepingTimeError, Refused):
                assert lines_now(domain) == before, step  # refused: nothing moved
            before = check(brand, domain, m, users)
        transaction.set_rollback(True)
