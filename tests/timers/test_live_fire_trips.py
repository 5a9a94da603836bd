"""A live fire's round trips (issue 39: a live fire was ~2.6x a timer committed alone, late_by p99 16-19x a bare
LISTEN/NOTIFY wake's). A worker's step that fires one timer commits three times, one with a WAL flush (the
lease's take, the batch, the lease's release: the turn's position is the batch's, not a fourth transaction);
the take and the release are a statement each; a step that finds nothing hands its look to the sleep; the take
skips its look for another holder where the step saw the domain this worker's or nobody's; and the sender is
nudged only by a step whose fires left sends."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from timers import lease as leases
from timers.arming import timer_arm
from timers.clock import WallClock, wall_now
from timers.models import LiveClock, Timer, live_domain
from timers.tenants import brand_get_or_create
from timers.worker import Worker

pytestmark = [pytest.mark.postgresql("the live loop's round trips: PostgreSQL"), pytest.mark.django_db(transaction=True)]

LOOK = "SELECT 1 FROM timers_lease WHERE domain"  # the take's look for another holder
NEXT = '"timers_liveclock"."id" AS "id", (SELECT'  # live_next: each domain's next owed instant


def _arm_now(brand, n: int = 1) -> str:
    domain = live_domain(brand.id)
    timer_arm(brand=brand, key=f"job_{n}:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=5),
              handler="noop")
    return domain


def _step(worker: Worker) -> list[str]:
    with CaptureQueriesContext(connection) as q:
        worker.step()
    return [x["sql"] for x in q.captured_queries]


def test_a_step_that_fires_one_timer_commits_three_times_and_writes_its_position_once(db):
    brand = brand_get_or_create(name="trips.one")
    worker = Worker(WallClock(), test_clocks=False)
    worker.step()  # the first step's setup (the session's settings) is not the fire's
    domain = _arm_now(brand)
    sql = _step(worker)
    assert Timer.objects.get(domain=domain).status == "fired"
    # The take, the batch, the release: the batch ran to now and wrote it, so no fence and position again.
    assert sql.count("COMMIT") == 3, sql
    assert LiveClock.objects.get(pk=domain).position is not None
    # The take and the release each one statement (its settings sent with it), beside its commit.
    assert sum("INSERT INTO timers_lease " in s for s in sql) == 1
    assert sum("INSERT INTO timers_lease " in s and "timers_leaseterm" in s and "synchronous_commit" in s
               for s in sql) == 1
    assert sum("UPDATE timers_leaseterm" in s and "synchronous_commit" in s for s in sql) == 1
    assert not any(s.startswith("UPDATE timers_leaseterm") or s.startswith("INSERT INTO timers_leaseterm")
                   for s in sql)
    # The domain was nobody's: no look for another holder before the take.
    assert not any(LOOK in s for s in sql)


def test_a_step_that_finds_nothing_hands_its_look_to_the_sleep(db):
    brand = brand_get_or_create(name="trips.idle")
    timer_arm(brand=brand, key="job_1:deadline:later:1", owed_at=wall_now() + timedelta(seconds=30), handler="noop")
    worker = Worker(WallClock(), test_clocks=False)
    worker.step()
    with CaptureQueriesContext(connection) as q:
        assert not worker.step()
        nxt = worker._next_wake()
    assert sum(NEXT in x["sql"] for x in q.captured_queries) == 1  # the step's look, not one more for the sleep
    assert nxt is not None and nxt > wall_now() + timedelta(seconds=20)
    with CaptureQueriesContext(connection) as q:
        worker._next_wake()  # no step since: it looks itself
    assert sum(NEXT in x["sql"] for x in q.captured_queries) == 1


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


class _Alive(threading.Thread):
    def is_alive(self) -> bool:  # a sender as run() starts it, without its loop
        return True


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
