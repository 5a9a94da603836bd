"""A live fire's round trips (issue 39: a live fire was ~2.6x a timer committed alone, late_by p99 16-19x a bare
LISTEN/NOTIFY wake's). A worker's step that fires one timer in a domain whose lease it kept from its last turn is
five round trips and commits once, with the WAL flush: the look (which reads the position too), the batch (BEGIN,
its fence with its read in one pipeline, its writes with the turn's position, COMMIT). Where it takes the lease, two more: the take
(one prepared statement, its own transaction, no flush) and the position read under it; the release is one more
again, before a longer sleep. A kept lease taken over
stops the next turn and is let go. A step that finds nothing hands its look to the sleep; the take skips its look
for another holder where the step saw the domain this worker's or nobody's; and the sender is nudged only by a
step whose fires left sends."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.wire import traced
from timers import lease as leases
from timers.arming import timer_arm
from timers.clock import WallClock, wall_now
from timers.models import Lease, LiveClock, Timer, live_domain
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


def test_a_step_that_fires_one_timer_under_its_kept_lease_is_five_round_trips_and_commits_once(db):
    brand = brand_get_or_create(name="trips.one")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()  # as run() starts it: the step leaves the sends to it
    worker.step()  # the first step's setup (the session's settings, the statements prepared) is not the fire's
    domain = _arm_now(brand, 0)
    worker.step()  # a fire of its own (it takes the lease and keeps it), so every statement of the next is prepared
    assert domain in worker._kept
    domain = _arm_now(brand)
    trips, _ = traced(worker.step)
    assert Timer.objects.filter(domain=domain, status="fired").count() == 2
    # The look (with the position, which nobody else could move while the lease was kept), BEGIN, the fence with
    # the read (one pipeline), the writes, COMMIT. With the read apart from the fence it was 6; with a take, the
    # position's read and a release around each turn, 9; with the take and the release each BEGIN, its statement
    # and COMMIT, 13.
    assert trips == 5, trips
    domain = _arm_now(brand, 2)
    sql = _step(worker)
    assert Timer.objects.filter(domain=domain, status="fired").count() == 3
    assert sql.count("COMMIT") == 1, sql  # the batch's, with its WAL flush
    # Only the batch's fence touches the lease: no take, no release, no term written; the position is not read.
    assert not any("INSERT INTO timers_lease" in s or "timers_leaseterm" in s for s in sql), sql
    assert not any(s.startswith("SELECT position FROM timers_liveclock") for s in sql), sql
    assert LiveClock.objects.get(pk=domain).position is not None


def test_a_turn_that_takes_its_lease_is_seven_round_trips_and_the_release_one(db):
    brand = brand_get_or_create(name="trips.take")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()
    worker.step()
    _arm_now(brand, 0)
    worker.step()
    worker._kept.release()  # as before a longer sleep
    assert traced(worker._kept.release)[0] == 0  # nothing kept: nothing sent
    domain = _arm_now(brand)
    trips, _ = traced(worker.step)
    # The look, the take, the position (read under the lease just taken), BEGIN, the fence with the read (one
    # pipeline), the writes, COMMIT; the lease kept after.
    assert trips == 7, trips
    assert Timer.objects.filter(domain=domain, status="fired").count() == 2
    assert traced(worker._kept.release)[0] == 1
    domain = _arm_now(brand, 2)
    sql = _step(worker)
    worker._kept.release()
    # The take and the release each one statement (its settings in it), without a flush at its commit.
    flush_off = "set_config('synchronous_commit', 'off', true)"
    assert sum("INSERT INTO timers_lease " in s for s in sql) == 1
    assert sum("INSERT INTO timers_lease " in s and "timers_leaseterm" in s and flush_off in s for s in sql) == 1
    assert not any(s.startswith("UPDATE timers_leaseterm") or s.startswith("INSERT INTO timers_leaseterm")
                   for s in sql)
    # The domain was nobody's: no look for another holder before the take.
    assert not any(LOOK in s for s in sql)
    assert Lease.objects.get(domain=domain).expires <= wall_now()  # released: free for whoever is owed there


def test_a_kept_lease_taken_over_stops_the_next_turn_and_is_let_go(db):
    brand = brand_get_or_create(name="trips.taken")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()
    domain = _arm_now(brand, 0)
    worker.step()
    assert domain in worker._kept
    # Its session is taken for dead meanwhile (a long pause): the lease expires and another worker takes it.
    Lease.objects.filter(domain=domain).update(expires=wall_now() - timedelta(seconds=1))
    assert leases.take(domain, as_holder="another-worker", look=False) is not None
    _arm_now(brand)
    Timer.objects.filter(domain=domain, status="armed").update(owed_at=wall_now() - timedelta(seconds=5))  # past the affinity
    worker.step()
    assert worker.lost == [domain] and domain not in worker._kept
    assert Timer.objects.filter(domain=domain, status="armed").count() == 1  # the fence stopped it: not fired
    assert Lease.objects.get(domain=domain).holder == "another-worker"
    # Once the other lets go, this worker takes the domain anew (the lost lease was let go, not kept as this
    # thread's: its stale epoch would have fenced every turn after).
    Lease.objects.filter(domain=domain).update(expires=wall_now() - timedelta(seconds=1))
    worker.step()
    assert not Timer.objects.filter(domain=domain, status="armed").exists()
    assert domain in worker._kept and worker.lost == [domain]


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


def test_a_worker_lets_its_kept_leases_go_before_a_longer_sleep(db):
    brand = brand_get_or_create(name="trips.sleep")
    domain = live_domain(brand.id)
    worker = Worker(WallClock(), test_clocks=False)

    def run() -> None:
        try:
            worker.run()
        finally:
            connection.close()

    loop = threading.Thread(target=run, daemon=True)
    loop.start()
    try:
        _arm_now(brand)
        deadline = time.monotonic() + 10
        while Timer.objects.filter(domain=domain, status="armed").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not Timer.objects.filter(domain=domain, status="armed").exists()
        # Nothing more is owed: the worker sleeps, and lets the domain go first (kept, its lease would run for
        # LEASE_SECONDS, and a timer owed there meanwhile would wait on a worker that sleeps).
        while Lease.objects.get(domain=domain).expires > wall_now() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert Lease.objects.get(domain=domain).expires <= wall_now()
        assert loop.is_alive() and worker.fired == 1
        # Owed there again: the lease is taken again, and let go again as the worker sleeps.
        worker.woken.append(domain)
        _arm_now(brand, 2)
        while worker.fired < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        worker.stop.set()
        loop.join(timeout=10)
    assert not loop.is_alive() and worker.fired == 2
    assert Lease.objects.get(domain=domain).expires <= wall_now()


def test_a_turn_that_takes_its_lease_starts_from_the_position_read_under_it(db, handler, monkeypatch):
    """The look's position is used only under a lease kept since: a take after the look reads it again, as
    another worker's turn may have moved it between the two (a timer owed before the position fires at it)."""
    import timers.worker as worker_module

    seen = []
    name = handler("trips.instant", lambda f: seen.append(f.instant))
    brand = brand_get_or_create(name="trips.position")
    worker = Worker(WallClock(), test_clocks=False)
    worker._sender = _Alive()
    timer_arm(brand=brand, key="job_1:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=50), handler=name)
    domain = live_domain(brand.id)
    moved = Timer.objects.get(domain=domain).owed_at + timedelta(milliseconds=10)
    looked = worker_module.live_next

    def look_then_another_turn(*args):
        rows = looked(*args)
        LiveClock.objects.filter(pk=domain).update(position=moved)  # another worker's turn, committed after the look
        return rows

    monkeypatch.setattr(worker_module, "live_next", look_then_another_turn)
    worker.step()
    assert Timer.objects.get(domain=domain).status == "fired"
    assert seen == [moved]  # fired at the position its turn started from, not at its owed time
