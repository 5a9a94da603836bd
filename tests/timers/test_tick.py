"""The tick on PostgreSQL: order, passes, runaway, lateness, the gate, redelivery, gaps, batches."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import override_settings

from tests.conftest import T0, at
from timers import transports
from timers.advance import advance
from timers.arming import timer_hold, timer_resume, timer_wake
from timers.clock import VirtualWallClock
from timers.compare import compare
from timers.errors import Refused, TestClockBackward
from timers.live import live_step
from timers.models import LIVE, Commit, Event, Outbox, Timer, live_domain
from timers.rearm import Rearm
from timers.record import record_hash
from timers.worker import Worker


def record(domain: str) -> list[tuple[str, str]]:
    return list(Event.objects.filter(domain=domain).exclude(type__startswith="test_clock.")
                .order_by("seq").values_list("type", "key"))


def fired_keys(domain: str) -> list[str]:
    return [k for t, k in record(domain) if t == "timer.fired"]


# -- order -----------------------------------------------------------------------------------------
def test_order_at_one_instant_is_owed_place_opened_key_bytes(arm, clock):
    t = "2026-11-25T14:00Z"
    # Keys that sort differently under a locale (en_US puts "alpha" before "Zeta"): bytes put Z first.
    arm("job_2:task:alpha:1", t, opened_at=T0)
    arm("job_2:task:Zeta:1", t, opened_at=T0)
    arm("job_1:money:charge:1", t, opened_at=T0)  # place 8: last
    arm("job_9:cycle:renew:1", t, opened_at=T0)  # place 1: first
    arm("job_3:task:a:1", t, opened_at=T0 - timedelta(days=1))  # opened earlier: before the other tasks
    arm("job_0:deadline:late:1", "2026-11-25T13:59Z")  # owed earlier: before everything
    advance(clock.id, at("2026-11-26T00:00Z"))
    assert fired_keys(clock.id) == [
        "job_0:deadline:late:1",
        "job_9:cycle:renew:1",
        "job_3:task:a:1",
        "job_2:task:Zeta:1",
        "job_2:task:alpha:1",
        "job_1:money:charge:1",
    ]


def test_database_sorts_keys_byte_by_byte(arm, clock):
    for k in ["job_2:task:alpha:1", "job_2:task:Zeta:1", "job_2:task:a-b:1", "job_2:task:ab:1", "job_2:task:é:1"]:
        arm(k, "2026-11-25T14:00Z", opened_at=T0)
    keys = list(Timer.objects.filter(domain=clock.id).order_by("key").values_list("key", flat=True))
    assert keys == sorted(keys, key=str.encode)


def test_timers_fire_at_their_instants_in_order(arm, clock):
    arm("job_1:deadline:b:1", "2026-11-26T10:00Z")
    arm("job_1:deadline:a:1", "2026-11-25T10:00Z")
    arm("job_1:deadline:c:1", "2026-12-26T10:00Z")  # after `to`: stays armed
    stats = advance(clock.id, at("2026-12-01T00:00Z"))
    assert stats.fired == 2
    assert fired_keys(clock.id) == ["job_1:deadline:a:1", "job_1:deadline:b:1"]
    fired = Timer.objects.get(key="job_1:deadline:a:1")
    assert fired.fired_at == at("2026-11-25T10:00Z") and fired.late_by == timedelta(0)
    assert Timer.objects.get(key="job_1:deadline:c:1").status == "armed"
    clock.refresh_from_db()
    assert clock.frozen_time == at("2026-12-01T00:00Z")


# -- passes ------------------------------------------------------------------------------------------
def arm_back(f):
    f.record("timer.fired")
    for child in f.timer.data.get("children", []):
        f.arm(child, owed_at=f.instant - timedelta(hours=1), handler="noop")


def test_a_firing_that_arms_a_timer_owed_by_now_fires_it_in_a_further_pass(arm, clock, handler):
    handler("t.arm_back", arm_back)
    arm("job_1:deadline:parent:1", "2026-11-25T14:00Z", handler="t.arm_back",
        data={"children": ["job_1:rung:child:1"]})
    arm("job_1:money:charge:1", "2026-11-25T14:00Z")  # place 8, pass 1: before the child of pass 2
    stats = advance(clock.id, at("2026-11-26T00:00Z"), trace=True)
    assert fired_keys(clock.id) == ["job_1:deadline:parent:1", "job_1:money:charge:1", "job_1:rung:child:1"]
    assert stats.passes == 2 and stats.fired == 3 and stats.armed == 1
    rows = [(r.pass_no, r.owner, r.timer_kind) for r in stats.trace]
    assert rows == [(1, "job_1", "deadline"), (1, "job_1", "money"), (2, "job_1", "rung")]
    assert [c.kind for c in stats.trace[0].children] == ["armed"]
    child = Timer.objects.get(key="job_1:rung:child:1")
    # Armed after its owed time: fires at once, in place, and is never late.
    assert child.fired_at == at("2026-11-25T14:00Z") and child.late_by == timedelta(0)
    assert child.armed_by == Timer.objects.get(key="job_1:deadline:parent:1").id


def forever(f):
    n = int(f.key.occurrence)
    f.record("timer.fired")
    f.arm(f"{f.key.owner}:{f.key.kind}:{f.key.name}:{n + 1}", owed_at=f.instant, handler="t.forever")


def test_a_chain_deeper_than_32_passes_stops_with_tick_runaway(arm, clock, handler):
    handler("t.forever", forever)
    arm("job_1:task:loop:1", "2026-11-25T14:00Z", handler="t.forever")
    arm("job_2:task:after:1", "2026-11-26T14:00Z")  # the tick goes on past the runaway instant
    stats = advance(clock.id, at("2026-11-27T00:00Z"))
    assert stats.runaways == 1
    assert stats.passes == 32
    assert len([k for k in fired_keys(clock.id) if k.startswith("job_1")]) == 32
    runaway = Event.objects.get(domain=clock.id, type="tick.runaway")
    assert runaway.data["passes"] == 32 and runaway.owed_at == at("2026-11-25T14:00Z")
    held = Timer.objects.get(key="job_1:task:loop:33")
    assert held.status == "held" and held.held_by == "tick.runaway"
    assert "job_2:task:after:1" in fired_keys(clock.id)


# -- lateness, live --------------------------------------------------------------------------------
def test_live_timers_fired_late_record_late_by(brand, handler, caplog):
    from timers.arming import timer_arm

    timer_arm(brand=brand, key="job_L:deadline:a:1", owed_at=at("2026-11-20T10:00Z"), domain=LIVE, handler="noop")
    # The worker was down: it runs ten minutes after the owed time.
    Timer.objects.filter(key="job_L:deadline:a:1").update(armed_at=at("2026-11-20T09:00Z"))
    live_step(VirtualWallClock(at("2026-11-20T10:10Z")))
    t = Timer.objects.get(key="job_L:deadline:a:1")
    assert t.status == "fired" and t.fired_at == at("2026-11-20T10:10Z")
    assert t.late_by == timedelta(minutes=10)
    # Its event carries owed, fired and late_by too, and a timer more than 5 minutes late is logged.
    e = Event.objects.get(key="job_L:deadline:a:1", type="timer.fired")
    assert (e.owed_at, e.fired_at, e.late_by) == (at("2026-11-20T10:00Z"), at("2026-11-20T10:10Z"),
                                                  timedelta(minutes=10))
    late = [r for r in caplog.records if r.name == "timers.engine" and r.levelname == "WARNING"]
    assert len(late) == 1 and "job_L:deadline:a:1" in late[0].getMessage() and "0:10:00" in late[0].getMessage()


def test_a_timer_armed_after_its_owed_time_is_never_late(brand):
    from timers.arming import timer_arm

    Timer.objects.filter(domain=live_domain(brand.id)).delete()
    t = timer_arm(brand=brand, key="job_L:deadline:b:1", owed_at=at("2020-01-01T00:00Z"), domain=LIVE,
                  handler="noop")
    live_step(VirtualWallClock(t.armed_at + timedelta(seconds=2)))
    t.refresh_from_db()
    assert t.status == "fired" and t.late_by == timedelta(seconds=2)  # the gap since arming, not since 2020
    assert Event.objects.get(key="job_L:deadline:b:1", type="timer.fired").late_by == timedelta(seconds=2)


# -- the gate ------------------------------------------------------------------------------------------
def test_gate_commits_each_key_once_and_a_second_wake_replays(arm, clock):
    timer = arm("job_1:deadline:a:1", "2026-11-25T10:00Z")
    advance(clock.id, at("2026-11-26T00:00Z"))
    timer.refresh_from_db()
    first = timer_wake(timer=timer)
    assert first["replayed"] is True
    second = timer_wake(timer=Timer.objects.get(pk=timer.pk))
    assert second["commit"]["id"] == first["commit"]["id"]
    timer.refresh_from_db()
    assert timer.wakes == 3 and timer.attempt == 1
    assert Commit.objects.filter(domain=clock.id, key=timer.key).count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        Commit.objects.create(domain=clock.id, key=timer.key, timer_id=timer.id, outcome="committed", at=T0)


def refuse(f):
    raise Refused("date_passed", "the date to pay has passed")


def test_the_gate_refuses_a_proposal_and_commits_the_refusal(arm, clock, handler):
    handler("t.refuse", refuse)
    arm("job_1:task:file:1", "2026-11-25T10:00Z", handler="t.refuse")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.refused == 1
    ev = Event.objects.get(domain=clock.id, key="job_1:task:file:1")
    assert ev.type == "gate.refused" and ev.data["code"] == "date_passed"
    assert Commit.objects.get(domain=clock.id, key="job_1:task:file:1").outcome == "refused"


def boom(f):
    raise RuntimeError("bad row")


def test_a_failing_handler_is_pushed_out_not_crash_looped(arm, clock, handler):
    handler("t.boom", boom)
    arm("job_1:task:bad:1", "2026-11-25T10:00Z", handler="t.boom")
    arm("job_1:task:good:1", "2026-11-25T11:00Z")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.failed == 1 and stats.fired == 1
    bad = Timer.objects.get(key="job_1:task:bad:1")
    assert bad.status == "held" and bad.held_by == "error"
    assert Event.objects.get(domain=clock.id, type="timer.failed").data["error"].startswith("RuntimeError")
    assert advance(clock.id, at("2026-11-27T00:00Z")).fired == 0  # not retried in a loop


def send(f):
    f.record("timer.fired")
    f.send("recording", {"what": f.timer.key})


def test_redelivery_replays_every_wake_and_never_sends_twice(arm, clock, handler):
    handler("t.send", send)
    for i in range(5):
        arm(f"job_{i}:task:efile:2027", f"2026-11-25T1{i}:00Z", handler="t.send")
    transport = transports.RecordingTransport()
    transports.register("recording", transport)
    stats = advance(clock.id, at("2026-11-26T00:00Z"), redeliver=True)
    assert stats.fired == 5 and stats.replayed == 5
    assert set(Timer.objects.filter(domain=clock.id).values_list("wakes", flat=True)) == {2}
    assert Commit.objects.filter(domain=clock.id).count() == 5
    assert Outbox.objects.filter(domain=clock.id, status="sent").count() == 5
    assert len(transport.received) == 5 and transport.sent_twice() == 0


# -- test clocks --------------------------------------------------------------------------------------
def test_advancing_to_where_the_clock_is_fires_nothing(arm, clock):
    arm("job_1:deadline:a:1", "2026-11-25T10:00Z")
    advance(clock.id, at("2026-11-26T00:00Z"))
    before = record(clock.id)
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    assert stats.fired == 0 and record(clock.id) == before


def test_a_test_clock_never_moves_backward(clock):
    with pytest.raises(TestClockBackward) as err:
        advance(clock.id, T0 - timedelta(seconds=1))
    assert err.value.code == "test_clock_backward" and "POST /test_clocks" in err.value.message


# -- holds ----------------------------------------------------------------------------------------------
def test_a_held_timer_keeps_its_remaining_time_and_resumes_under_its_key(arm, clock):
    t = arm("job_1:deadline:at_risk:2027", "2026-11-30T09:00Z")
    t = timer_hold(timer=t, by="organizer", now=at("2026-11-25T09:00Z"))
    assert t.status == "held" and t.remaining == timedelta(days=5) and t.owed_at is None
    assert advance(clock.id, at("2026-12-10T00:00Z")).fired == 0  # held: the time is kept, not spent
    t = timer_resume(timer=t, now=at("2026-12-10T00:00Z"))
    assert t.owed_at == at("2026-12-15T00:00Z") and t.key == "job_1:deadline:at_risk:2027"
    t = timer_hold(timer=t, by="organizer", now=at("2026-12-10T00:00Z"))
    t = timer_resume(timer=t, now=at("2026-12-10T00:00Z"), cap=at("2026-12-12T00:00Z"))
    assert t.owed_at == at("2026-12-12T00:00Z")  # re-arms at the earlier of now + remaining and the cap


# -- batches, gaps and the four ways ----------------------------------------------------------------
def mixed(f):
    """A little of everything: records, chains in the same instant, arms ahead, supersedes, holds."""
    n = int(f.key.occurrence)
    f.record("timer.fired", data={"n": n})
    base = f"{f.key.owner}:{f.key.kind}:{f.key.name}"
    if n % 3 == 0 and n < 60:
        f.arm(f"{base}:{n + 100}", owed_at=f.instant - timedelta(minutes=n), handler="t.mixed")
    if n % 4 == 1 and n < 60:
        f.arm(f"{base}:{n + 1000}", owed_at=f.instant + timedelta(hours=n), handler="t.mixed")
    if n % 7 == 0:
        f.supersede(f"{base}:{n + 1}", by="test")  # no successor: it only ends the timer
    if n % 11 == 0 and f.key.kind != "rung":  # a rung's hold is refused (rung_not_holdable)
        f.hold(f"{base}:{n + 2}", by=Rearm.HOLD)


def build_mixed(arm, n=60):
    for i in range(n):
        arm(f"job_{i % 5}:{['task', 'deadline', 'rung', 'money'][i % 4]}:m:{i}",
            T0 + timedelta(hours=(i * 7) % 50), handler="t.mixed")


def run_mixed(arm, clock, handler, batch):
    handler("t.mixed", mixed)
    build_mixed(arm)
    with override_settings(KEEPING_TIME={"BATCH_SIZE": batch, "MAX_PASSES": 32, "LATE_AFTER_SECONDS": 300}):
        advance(clock.id, T0 + timedelta(days=30))
    return record(clock.id)


@pytest.mark.parametrize("batch", [1, 2, 3, 7])
def test_small_batches_give_the_same_record_as_one_batch(arm, clock, handler, batch):
    expected = None
    with transaction.atomic():
        expected = run_mixed(arm, clock, handler, 10_000)
        transaction.set_rollback(True)
    Timer.objects.filter(domain=clock.id).delete()
    Event.objects.filter(domain=clock.id).delete()
    Commit.objects.filter(domain=clock.id).delete()
    clock.frozen_time = T0
    clock.save()
    got = run_mixed(arm, clock, handler, batch)
    assert len(got) > 60
    assert got == expected


def test_the_live_loop_after_an_outage_fires_in_test_clock_order(arm, clock, handler):
    handler("t.mixed", mixed)
    build_mixed(arm)
    with transaction.atomic():
        advance(clock.id, T0 + timedelta(days=30))
        expected = record_hash(clock.id)
        transaction.set_rollback(True)
    # One wake, three days late: every instant in the gap is visited in turn, with the wall as "now".
    worker = Worker(VirtualWallClock(T0 + timedelta(days=3)), domain=clock.id, until=T0 + timedelta(days=30),
                    test_clocks=False)
    worker.run()
    assert record_hash(clock.id) == expected
    late = Timer.objects.filter(domain=clock.id, late_by__gt=timedelta(minutes=5)).count()
    assert late > 0


def test_compare_four_ways_agree(arm, clock, handler):

    handler("t.mixed", mixed)
    handler("t.send", send)
    build_mixed(arm)
    arm("job_x:task:efile:2027", T0 + timedelta(days=2), handler="t.send")
    arm("job_x:task:last:2027", T0 + timedelta(days=30))  # owed exactly at the end of the span
    ways = compare(clock.id, T0 + timedelta(days=30), redeliver=True)
    assert len(ways) == 4
    assert len({w.sha256 for w in ways}) == 1, [(w.label, w.events, w.sha256) for w in ways]
    assert ways[0].events > 60
    assert ways[3].replayed == ways[0].fired and ways[3].sent_twice == 0
    clock.refresh_from_db()
    assert clock.frozen_time == T0  # each way was rolled back
    assert not Event.objects.filter(domain=clock.id).exists()


def _drop_the_gates_once_per_key(cur) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite keeps the constraint inside its CREATE TABLE: it cannot be dropped alone")
    cur.execute("ALTER TABLE timers_commit DROP CONSTRAINT commit_key_once_per_domain")


def test_redelivered_wakes_reach_the_gate_so_the_fourth_way_can_disagree(arm, clock, handler):
    """The mutation check: with the gate's once-per-key constraint gone, a redelivered wake commits
    again and fires again, and the fourth way's hash (and its double sends) must show it."""
    handler("t.mixed", mixed)
    handler("t.send", send)
    build_mixed(arm)
    arm("job_x:task:efile:2027", T0 + timedelta(days=2), handler="t.send")
    transport = transports.RecordingTransport()
    transports.register("recording", transport)
    to = T0 + timedelta(days=30)
    with transaction.atomic():
        with connection.cursor() as cur:
            _drop_the_gates_once_per_key(cur)
        ways = compare(clock.id, to, redeliver=True)
        assert len({w.sha256 for w in ways[:3]}) == 1
        assert ways[3].sha256 != ways[0].sha256 and ways[3].events > ways[0].events
        assert ways[3].replayed == 0 and ways[3].sent_twice == 1
        transaction.set_rollback(True)
    # With the constraint in place, the same wakes are answered replayed: true by the gate.
    ways = compare(clock.id, to, redeliver=True)
    assert len({w.sha256 for w in ways}) == 1 and ways[3].replayed == ways[0].fired and ways[3].sent_twice == 0
    assert not transport.received  # every way's sends went to its own far end, never outside


def test_a_redelivered_wake_is_answered_by_the_gate_with_the_first_commit(arm, clock):
    timer = arm("job_1:deadline:a:1", "2026-11-25T10:00Z")
    advance(clock.id, at("2026-11-26T00:00Z"), redeliver=True)
    timer.refresh_from_db()
    assert timer.wakes == 2 and Commit.objects.filter(domain=clock.id, key=timer.key).count() == 1
    answer = timer_wake(timer=timer)
    first = Commit.objects.get(domain=clock.id, key=timer.key)
    assert answer["replayed"] is True and answer["commit"]["id"] == first.id
    timer.refresh_from_db()
    assert timer.wakes == 3


class Crash(BaseException):
    """The process dies: not an Exception, so no handler catches it and the batch's transaction rolls back."""


def test_a_tick_that_dies_mid_instant_resumes_in_the_same_order(arm, clock, handler):
    state = {"crash": False}

    def parent(f):
        f.record("timer.fired")
        n = int(f.key.occurrence)
        # Children owed *before* the instant: they fire in pass 2, after every pass-1 timer of the instant.
        f.arm(f"job_c:task:child:{n}", owed_at=f.instant - timedelta(hours=n), handler="noop")

    def last(f):
        if state["crash"]:
            state["crash"] = False
            raise Crash
        f.record("timer.fired")

    handler("t.parent", parent)
    handler("t.last", last)
    t = "2026-11-25T14:00Z"
    for n in range(1, 7):
        arm(f"job_{n}:task:p:{n}", t, handler="t.parent", opened_at=T0)
    arm("job_z:task:last:1", t, handler="t.last", opened_at=T0)
    to = at("2026-11-26T00:00Z")
    small = {"BATCH_SIZE": 2, "MAX_PASSES": 32, "LATE_AFTER_SECONDS": 300}
    with transaction.atomic():
        with override_settings(KEEPING_TIME=small):
            advance(clock.id, to)
        expected = record(clock.id)
        transaction.set_rollback(True)
    state["crash"] = True
    with override_settings(KEEPING_TIME=small):
        with pytest.raises(Crash):
            advance(clock.id, to)
        # Batches before the crash are committed; their pass-2 children wait, armed, with their pass.
        assert Timer.objects.filter(domain=clock.id, key__startswith="job_c", status="armed", tick_pass=2).exists()
        advance(clock.id, to)
    got = record(clock.id)
    assert got == expected
    assert [k for _, k in got][-6:] == [f"job_c:task:child:{n}" for n in range(6, 0, -1)]


def test_a_resumed_tick_killed_again_never_leaves_its_clock_past_a_timer_it_owes(arm, clock, handler):
    """A tick resumed at an instant whose pass-2 timers (owed before it) fill its first batches fires nothing in
    them, and goes on: those batches must leave the clock's frozen time where it was, never at the advance's end,
    or a kill after one of them leaves armed timers behind the clock, and the next run fires them late."""
    state = {"crashes": 0}

    def parent(f):
        f.record("timer.fired")
        n = int(f.key.occurrence)
        f.arm(f"job_c:task:child:{n}", owed_at=f.instant - timedelta(hours=n), handler="noop")

    def last(f):
        if state["crashes"]:
            state["crashes"] -= 1
            raise Crash
        f.record("timer.fired")

    handler("t.parent", parent)
    handler("t.last", last)
    t = "2026-11-25T14:00Z"
    for n in range(1, 7):
        arm(f"job_{n}:task:p:{n}", t, handler="t.parent", opened_at=T0)
    arm("job_z:task:last:1", t, handler="t.last", opened_at=T0)
    to = at("2026-11-26T00:00Z")
    small = {"BATCH_SIZE": 2, "MAX_PASSES": 32, "LATE_AFTER_SECONDS": 300}
    with transaction.atomic():
        with override_settings(KEEPING_TIME=small):
            advance(clock.id, to)
        expected = record_hash(clock.id)
        transaction.set_rollback(True)
    state["crashes"] = 2
    with override_settings(KEEPING_TIME=small):
        with pytest.raises(Crash):
            advance(clock.id, to)  # dies at job_z's timer, with the parents' batches committed
        with pytest.raises(Crash):
            advance(clock.id, to)  # resumed at t: its first batches read only children, then dies at job_z again
        clock.refresh_from_db()
        # The clock is where the children are owed from: at t, not at the advance's end.
        assert clock.frozen_time == at(t)
        advance(clock.id, to)
    assert set(Event.objects.filter(domain=clock.id, key__startswith="job_c:").values_list("fired_at", flat=True)) \
        == {at(t)}
    assert record_hash(clock.id) == expected
