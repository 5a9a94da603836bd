"""Real processes on PostgreSQL: two workers on one clock produce one record and no duplicate commits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import Count

from tests.conftest import T0
from tests.support.processes import spawn, worker_env
from timers import test_clocks
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import MAX_SLEEP
from timers.models import Commit, Event, TestClock, Timer
from timers.record import record_hash

# Kill drills and workers racing each other: on one test process (scripts/test, --dist loadgroup), one at a time.
pytestmark = [
    pytest.mark.postgresql("real processes racing on one database: PostgreSQL"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]


def _scenario(brand, clock, n: int = 400) -> None:
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{i % 17}:task:r:{i}", owed_at=T0 + timedelta(minutes=37 * i),
                  domain=clock.id, handler="repeat", data={"every": {"days": 3}, "count": 4})


def test_two_tick_processes_on_one_advance_make_one_record(brand):
    reference = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="reference")
    raced = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="raced")
    _scenario(brand, reference)
    _scenario(brand, raced)
    to = T0 + timedelta(days=40)
    advance(reference.id, to)

    env = worker_env()
    procs = [spawn("tick", "--to", "2027-01-03T09:00Z", "--test-clock", raced.id, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err

    assert record_hash(raced.id) == record_hash(reference.id)
    fired = Timer.objects.filter(domain=raced.id, status="fired").count()
    assert fired == Timer.objects.filter(domain=reference.id, status="fired").count() > 400
    # Zero duplicate commits: one per key, and every timer woken once.
    assert Commit.objects.filter(domain=raced.id).count() == fired
    assert not Commit.objects.filter(domain=raced.id).values("key").annotate(n=Count("id")).filter(n__gt=1)
    assert set(Timer.objects.filter(domain=raced.id, status="fired").values_list("wakes", flat=True)) == {1}
    # Both processes finished their advance; the clock is where they were asked to take it.
    assert TestClock.objects.get(pk=raced.id).frozen_time == to


def test_requested_advances_are_claimed_once_across_workers(brand):
    clocks = [test_clocks.test_clock_create(brand=brand, frozen_time=T0, name=f"c{i}") for i in range(4)]
    for c in clocks:
        _scenario(brand, c, n=60)
        test_clocks.test_clock_request_advance(clock=c, to=T0 + timedelta(days=10))
    env = worker_env(batch=20)
    procs = [spawn("tick", env=env) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    hashes = set()
    for c in clocks:
        c.refresh_from_db()
        assert c.status == "ready" and c.frozen_time == T0 + timedelta(days=10)
        assert Event.objects.filter(domain=c.id, type="test_clock.ready").count() == 1
        assert not Commit.objects.filter(domain=c.id).values("key").annotate(n=Count("id")).filter(n__gt=1)
        hashes.add(record_hash(c.id))
    assert len(hashes) == 1


def test_tick_forever_fires_live_timers_and_stops_on_sigterm(brand):
    import signal
    import time

    from timers.clock import wall_now

    env = worker_env()
    env["PYTHONUNBUFFERED"] = "1"
    proc = spawn("tick", "--forever", env=env)
    try:
        # Armed once the worker runs (a loaded machine takes seconds to start one), so its lateness is the
        # worker's, not its start's.
        assert proc.stdout.readline().startswith("ticking the live clock"), proc.communicate()
        time.sleep(0.5)
        timer = timer_arm(brand=brand, key="job_live:deadline:soon:1", owed_at=wall_now() + timedelta(seconds=1),
                          handler="noop")
        for _ in range(200):
            timer.refresh_from_db()
            if timer.status == "fired":
                break
            time.sleep(0.1)
        assert timer.status == "fired"
        # Within the sleep's cap (MAX_SLEEP, the poll under the wake) and a loaded step; how soon the wake
        # fires it is bench/live.py's figure, not a timed test's.
        assert timer.late_by < timedelta(seconds=MAX_SLEEP + 5)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped after" in out


def test_a_write_racing_a_test_clock_delete_lands_before_it_or_not_at_all(brand):
    """Issue 25: a write that read the clock as ready holds its row FOR SHARE until it commits, so a delete
    racing it waits, and voids what it wrote: nothing lands after test_clock.deleted. Without the lock the
    delete runs between the write's check and its record, and the write's event lands after it."""
    import threading

    from django.db import close_old_connections, transaction

    from timers.armer import DirectArmer

    clock = test_clocks.test_clock_create(brand=brand, frozen_time=T0, name="racing a delete")
    checked, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with transaction.atomic():
                armer = DirectArmer(brand=brand.id, domain=clock.id)  # checks the clock, ready
                checked.set()
                go.wait(5)  # the delete has started meanwhile (or is blocked)
                armer.record("subject.note", subject="sbj_race", data={"late": True})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            close_old_connections()

    def delete() -> None:
        try:
            checked.wait(5)
            test_clocks.test_clock_delete(clock=TestClock.objects.get(pk=clock.id))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            close_old_connections()

    writer, deleter = threading.Thread(target=write), threading.Thread(target=delete)
    writer.start()
    deleter.start()
    checked.wait(5)
    deleter.join(1.5)  # with the lock, the delete is still waiting on the writer's row lock here
    go.set()
    writer.join(30)
    deleter.join(30)
    assert not errors, errors
    types = list(Event.objects.filter(domain=clock.id).order_by("seq").values_list("type", flat=True))
    assert types[-1] == "test_clock.deleted", types
    assert "subject.note" in types
