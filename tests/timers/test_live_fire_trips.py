"""A live fire's round trips (issue 39: a live fire was ~2.6x a timer committed alone, late_by p99 16-19x a bare
LISTEN/NOTIFY wake's). A worker's step that fires one timer is eight round trips and commits three times, one with
a WAL flush: the look, the lease's take (one prepared statement, its own transaction: no BEGIN, no COMMIT), the
position, the batch (BEGIN, its fence with its read in one pipeline, its writes with the turn's position, COMMIT)
and the release (as the take). A step that finds nothing hands its look to the sleep; the take skips its look for another holder where
the step saw the domain this worker's or nobody's; and the sender is nudged only by a step whose fires left sends."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.wire import traced
from timers import lease as leases
from timers.arming import timer_arm
from timers.clock import WallClock, wall_now
from timers.models import LiveClock, Timer, live_domain
from timers.tenants import brand_get_or_create
from timers.worker import Worker

pytestmark = [pytest.mark.postgresql("the live loop's round trips: PostgreSQL"), pytest.mark.django_db(transaction=True)]

LOOK = "SELECT 1 FROM timers_lease WHERE domain"  # the take's look for another holder


class _Alive(threading.Thread):
    def is_alive(self) -> bool:  # a sender as run() starts it, without its loop
        return True


def _arm_now(brand, n: int = 1) -> str:
    domain = live_domain(brand.id)
    timer_arm(brand=brand, key=f"job_{n}:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=5),
              handler="noop")
    return domain


def _step(worker: Worker) -> list[str]:
    with CaptureQueriesContext(connection) as q:
        worker.step()
    return [x["sql"] for x in q.captured_queries]


def test_a_step_that_fires_one_timer_is_eight_round_trips_and_commits_three_times(db):
    brand = brand_get_or_create(name="trips.one")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()  # as run() starts it: the step leaves the sends to it
    worker.step()  # the first step's setup (the session's settings, the statements prepared) is not the fire's
    domain = _arm_now(brand, 0)
    worker.step()  # a fire of its own, so every statement of the next is prepared
    domain = _arm_now(brand)
    trips, _ = traced(worker.step)
    assert Timer.objects.filter(domain=domain, status="fired").count() == 2
    # The look, the take, the position, BEGIN, the fence with the read, the writes, COMMIT, the release. With the
    # take and the release each BEGIN, its statement and COMMIT, it was 13; with the read apart from the fence, 9.
    assert trips == 8, trips
    domain = _arm_now(brand, 2)
    sql = _step(worker)
    assert Timer.objects.filter(domain=domain, status="fired").count() == 3
    # One transaction begun and committed: the batch's. The take and the release are transactions of their own.
    assert sql.count("COMMIT") == 1, sql
    assert LiveClock.objects.get(pk=domain).position is not None
    # The take and the release each one statement (its settings in it), without a flush at its commit.
    flush_off = "set_config('synchronous_commit', 'off', true)"
    assert sum("INSERT INTO timers_lease " in s for s in sql) == 1
    assert sum("INSERT INTO timers_lease " in s and "timers_leaseterm" in s and flush_off in s for s in sql) == 1
    assert sum("UPDATE timers_leaseterm" in s and flush_off in s for s in sql) == 1
    assert not any(s.startswith("UPDATE timers_leaseterm") or s.startswith("INSERT INTO timers_leaseterm")
                   for s in sql)
    # The domain was nobody's: no look for another holder before the take.
    assert not any(LOOK in s for s in sql)


def test_a_step_that_finds_nothing_hands_its_look_to_the_sleep(db):
    brand = brand_get_or_create(name="trips.idle")
    timer_arm(brand=brand, key="job_1:deadline:later:1", owed_at=wall_now() + timedelta(seconds=30), handler="noop")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()
    worker.step()
    assert traced(worker.step) == (1, False)  # the look, and nothing owed
    trips, nxt = traced(worker._next_wake)
    assert trips == 0  # the step's look, not one more for the sleep
    assert nxt is not None and nxt > wall_now() + timedelta(seconds=20)
    assert traced(worker._next_wake)[0] == 1  # no step since: it looks itself


def test_the_take_looks_for_another_holder_only_where_the_step_saw_one(db):
    brand = brand_get_or_create(name="trips.theirs")
    domain = _arm_now(brand)
    leases.take(domain, as_holder="another-worker")  # held, unexpired, by a live session (this one's)
    worker = Worker(WallClock(), test_clocks=False)
    Timer.objects.filter(domain=domain).update(owed_at=wall_now() - timedelta(seconds=5))  # past the affinity
    sql = _step(worker)
    assert any(LOOK in s for s in sql)  # the look found it held: nothing written, the timer left to its holder
    assert not any("INSERT INTO timers_lease " in s for s in sql)
    assert Timer.objects.get(domain=domain).status == "armed"


@pytest.mark.parametrize("sends", [False, True])
def test_the_sender_is_nudged_by_a_step_whose_fires_left_sends(db, handler, sends):
    def fire(f):
        f.record("timer.fired")
        if sends:
            f.send("notices", {"what": f.timer.key})

    name = handler("trips.fire", fire)
    brand = brand_get_or_create(name=f"trips.sends.{sends}")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()
    timer_arm(brand=brand, key="job_1:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=5), handler=name)
    assert worker.step()
    assert worker._send_now.is_set() is sends
