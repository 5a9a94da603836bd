"""A clock per brand, and leases as rows: keys per brand's live clock, one brand's backlog never holding
another's owed timer back, a lease one holder's at a time, and a holder whose lease was taken over fenced
out of writing anything."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.conftest import at
from timers import lease as leases
from timers.advance import LeaseLost
from timers.arming import timer_arm
from timers.clock import VirtualWallClock
from timers.live import live_step, turn
from timers.models import Commit, Event, Lease, LeaseTerm, LiveClock, Timer, live_domain
from timers.tenants import brand_get_or_create
from timers.worker import Worker

NOW = at("2026-11-20T10:00Z")


@pytest.fixture
def two(db):
    return brand_get_or_create(name="a.test"), brand_get_or_create(name="b.test")


# -- a clock per brand ---------------------------------------------------------------------------------------
def test_two_brands_arm_the_same_key_live_and_each_fires_on_its_own_clock(two):
    a, b = two
    ta = timer_arm(brand=a, key="job_1:deadline:file:2027", owed_at=NOW, handler="noop")
    tb = timer_arm(brand=b, key="job_1:deadline:file:2027", owed_at=NOW, handler="noop")
    assert (ta.domain, tb.domain) == (live_domain(a.id), live_domain(b.id)) and ta.id != tb.id
    assert set(LiveClock.objects.values_list("id", flat=True)) == {ta.domain, tb.domain}
    stats = live_step(VirtualWallClock(NOW + timedelta(seconds=1)))  # the one-shot tick: every brand's clock
    assert stats.fired == 2
    assert Commit.objects.filter(key="job_1:deadline:file:2027").count() == 2


def test_a_brands_backlog_does_not_hold_back_anothers_owed_timer(two, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "BATCH_SIZE": 5, "LIVE_TURN_BATCHES": 1}
    a, b = two
    for i in range(40):  # brand A's backlog: owed before B's one timer
        timer_arm(brand=a, key=f"job_{i}:deadline:a:1", owed_at=NOW - timedelta(hours=2, minutes=-i), handler="noop")
    timer_arm(brand=b, key="job_b:deadline:b:1", owed_at=NOW - timedelta(hours=1), handler="noop")
    worker = Worker(VirtualWallClock(NOW), test_clocks=False)

    assert worker.step()  # one step: a turn for each owed domain
    assert Timer.objects.get(brand=b).status == "fired"
    left = Timer.objects.filter(brand=a, status="armed").count()
    assert left == 35, "A ran one batch in its turn, then B had its turn"

    while worker.step():  # the backlog drains over the next steps, each timer once
        pass
    # B's firing is in the record before most of A's backlog, not after all of it.
    b_seq = Event.objects.get(domain=live_domain(b.id), key="job_b:deadline:b:1").seq
    assert Event.objects.filter(domain=live_domain(a.id), seq__gt=b_seq).count() == 35
    assert Timer.objects.filter(brand=a, status="fired").count() == 40
    assert Commit.objects.filter(domain=live_domain(a.id)).count() == 40
    assert worker.turns[live_domain(a.id)] == 8  # a batch of 5 in each turn


# -- leases as rows --------------------------------------------------------------------------------------
def test_a_lease_is_one_holders_until_it_expires_and_each_take_bumps_the_epoch(db):
    first = leases.take("live_x", as_holder="w1")
    assert first is not None and first.epoch == 1
    assert leases.take("live_x", as_holder="w2") is None  # held and unexpired
    again = leases.take("live_x", as_holder="w1")  # the holder itself may take it again: a new epoch
    assert again.epoch == 2 and not first.fence() and again.fence()
    Lease.objects.filter(domain="live_x").update(expires=at("2000-01-01T00:00Z"))
    taken = leases.take("live_x", as_holder="w2")
    assert taken.epoch == 3 and taken.holder == "w2" and not again.fence()
    taken.release()  # let go: the next taker needs no wait
    assert leases.take("live_x", as_holder="w1").epoch == 4
    terms = list(LeaseTerm.objects.filter(domain="live_x").order_by("epoch").values_list("epoch", "holder"))
    assert terms == [(1, "w1"), (2, "w1"), (3, "w2"), (4, "w1")]


def test_a_lease_is_reentrant_in_its_thread(db):
    with leases.lease("live_y") as outer, leases.lease("live_y", wait=False) as inner:
        assert inner is outer and outer.fence()
    assert Lease.objects.get(domain="live_y").epoch == 1


def test_a_paused_holder_whose_lease_was_taken_over_writes_nothing(two):
    a, _ = two
    domain = live_domain(a.id)
    for i in range(6):
        timer_arm(brand=a, key=f"job_{i}:deadline:p:1", owed_at=NOW - timedelta(minutes=i), handler="noop")
    paused = leases.take(domain, as_holder="paused")
    # The paused holder's lease expires while it is away, and another worker takes the domain.
    Lease.objects.filter(domain=domain).update(expires=NOW - timedelta(days=1))
    successor = leases.take(domain, as_holder="successor")
    assert successor.epoch == paused.epoch + 1

    with pytest.raises(LeaseLost) as lost:  # it wakes and writes a batch: the fence stops it first
        turn(VirtualWallClock(NOW), domain, paused)
    assert lost.value.code == "lease_lost"
    assert not Commit.objects.filter(domain=domain).exists()
    assert Timer.objects.filter(domain=domain, status="armed").count() == 6
    assert LiveClock.objects.get(pk=domain).position is None

    stats = turn(VirtualWallClock(NOW), domain, successor)
    assert stats.fired == 6 == Commit.objects.filter(domain=domain).count()


# -- the data migration ------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_the_shared_live_domain_to_each_brands(request):
    if connection.vendor != "postgresql":
        pytest.skip("migrating a schema back and forth inside the test database: PostgreSQL")
    executor = MigrationExecutor(connection)
    leaf = executor.loader.graph.leaf_nodes()  # every app: a step back in timers steps back what needs it
    executor.migrate([("timers", "0008_brand_tier")])
    try:
        apps = executor.loader.project_state([("timers", "0008_brand_tier")]).apps
        brand_m, timer_m = apps.get_model("timers", "Brand"), apps.get_model("timers", "Timer")
        commit_m, clock_m = apps.get_model("timers", "Commit"), apps.get_model("timers", "LiveClock")
        a = brand_m.objects.create(id="brd_a", name="a", created_at=NOW)
        b = brand_m.objects.create(id="brd_b", name="b", created_at=NOW)
        base = dict(domain="live", kind="deadline", place=5, handler="noop", opened_at=NOW, armed_at=NOW,
                    owed_at=NOW)
        timer_m.objects.create(id="tmr_a", brand=a, key="job_a:deadline:x:1", owner="job_a", **base)
        timer_m.objects.create(id="tmr_b", brand=b, key="job_b:deadline:x:1", owner="job_b", **base)
        commit_m.objects.create(id="cmt_a", domain="live", key="job_a:deadline:x:1", timer_id="tmr_a",
                                outcome="committed", at=NOW)
        clock_m.objects.create(id="live", position=NOW)

        executor = MigrationExecutor(connection)
        executor.migrate(leaf)
        assert dict(Timer.objects.values_list("id", "domain")) == {"tmr_a": "live_brd_a", "tmr_b": "live_brd_b"}
        assert Commit.objects.get(pk="cmt_a").domain == "live_brd_a"
        assert dict(LiveClock.objects.values_list("id", "position")) == {"live_brd_a": NOW, "live_brd_b": NOW}
        # And now the two brands may hold the same key live.
        timer_arm(brand=brand_get_or_create(name="b"), key="job_a:deadline:x:1", owed_at=NOW, handler="noop")
    finally:
        MigrationExecutor(connection).migrate(leaf)


def test_a_domains_lease_history_keeps_its_newest_terms_as_it_grows(db, settings):
    # A live worker takes a brand's lease every turn: a row each time, which must not pile up for ever.
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "LEASE_TERMS_KEPT": 8}
    for _ in range(40):
        leases.take("live_h", as_holder="w1").release()
    leases.take("live_other", as_holder="w1")
    epochs = list(LeaseTerm.objects.filter(domain="live_h").order_by("epoch").values_list("epoch", flat=True))
    assert epochs[-1] == 40 and 8 <= len(epochs) <= 10  # the newest 8, and at most 8/4 taken since the cut
    assert epochs == list(range(41 - len(epochs), 41))
    assert LeaseTerm.objects.filter(domain="live_other").count() == 1  # another domain's history is its own
