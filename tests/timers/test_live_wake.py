"""Arming live wakes only the workers that need it (issue 26: four idle workers halved the API's arming rate).

A near timer's NOTIFY rides in the arming's own transaction and names its owed time; a timer owed after every
worker's sleep ends notifies nobody; a sleeping worker sleeps through notes for timers owed after its sleep."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from timers.arming import timer_arm
from timers.clock import MAX_SLEEP, WallClock, wall_now
from timers.models import live_domain
from timers.tenants import brand_get_or_create
from timers.wakes import WAKE_HORIZON, wake_payload
from timers.worker import TEST_CLOCK_POLL, Worker

pytestmark = [pytest.mark.postgresql("LISTEN/NOTIFY: PostgreSQL"), pytest.mark.django_db(transaction=True)]


def _dsn() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_a_near_arming_notifies_at_its_commit_in_its_own_transaction_with_its_owed_time(db):
    brand = brand_get_or_create(name="wake.near")
    owed = wall_now() + timedelta(seconds=1)
    with psycopg.connect(_dsn(), autocommit=True) as listener:
        listener.execute("LISTEN keeping_time_wake")
        with CaptureQueriesContext(connection) as q:
            timer_arm(brand=brand, key="job_1:deadline:soon:1", owed_at=owed, handler="noop")
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.payload for n in notes] == [wake_payload(live_domain(brand.id), owed)]
    sql = [x["sql"] for x in q.captured_queries]
    notify = next(i for i, s in enumerate(sql) if "pg_notify" in s)
    # Sent before the arming's COMMIT, so one commit (one WAL flush) per arming, not a second for the NOTIFY.
    assert notify < max(i for i, s in enumerate(sql) if s == "COMMIT")


def test_a_rolled_back_arming_notifies_nobody(db):
    brand = brand_get_or_create(name="wake.rollback")
    with psycopg.connect(_dsn(), autocommit=True) as listener:
        listener.execute("LISTEN keeping_time_wake")
        with pytest.raises(RuntimeError), transaction.atomic():
            timer_arm(brand=brand, key="job_1:deadline:soon:1", owed_at=wall_now(), handler="noop")
            raise RuntimeError("the caller's transaction fails after the arming")
        assert not list(listener.notifies(timeout=0.3, stop_after=1))


def test_an_arming_owed_after_every_sleep_ends_notifies_nobody(db):
    assert WAKE_HORIZON > timedelta(seconds=MAX_SLEEP)  # a worker's longest sleep ends before it is owed
    brand = brand_get_or_create(name="wake.far")
    with psycopg.connect(_dsn(), autocommit=True) as listener:
        listener.execute("LISTEN keeping_time_wake")
        timer_arm(brand=brand, key="job_1:deadline:later:1", owed_at=wall_now() + WAKE_HORIZON + timedelta(seconds=1),
                  handler="noop")
        assert not list(listener.notifies(timeout=0.3, stop_after=1))
        timer_arm(brand=brand, key="job_2:deadline:soon:1", owed_at=wall_now() + WAKE_HORIZON / 2, handler="noop")
        assert len(list(listener.notifies(timeout=5, stop_after=1))) == 1


def test_a_sleeping_worker_sleeps_through_notes_for_timers_owed_after_its_sleep_and_wakes_for_earlier(db):
    worker = Worker(WallClock(max_sleep=0.6), test_clocks=False)
    worker._sleep(wall_now())  # it listens from here (a sleep of nothing)
    with psycopg.connect(_dsn(), autocommit=True) as sender:
        for i in range(50):  # waiting when it lies down: a backlog of armings an hour ahead
            sender.execute("SELECT pg_notify('keeping_time_wake', %s)",
                           [wake_payload(f"live_{i % 3}", wall_now() + timedelta(hours=1))])

        def late_notes() -> None:  # and more arriving while it sleeps
            time.sleep(0.15)
            for _ in range(20):
                sender.execute("SELECT pg_notify('keeping_time_wake', %s)",
                               [wake_payload("live_far", wall_now() + timedelta(hours=1))])

        t = threading.Thread(target=late_notes)
        t.start()
        started = time.monotonic()
        worker._sleep(None)
        t.join()
        assert worker.woken == [] and time.monotonic() - started >= 0.55  # slept its whole while

        def near_note() -> None:
            time.sleep(0.1)
            sender.execute("SELECT pg_notify('keeping_time_wake', %s)", [wake_payload("live_near", wall_now())])

        t = threading.Thread(target=near_note)
        t.start()
        started = time.monotonic()
        worker._sleep(None)
        t.join()
    assert worker.woken == ["live_near"] and time.monotonic() - started < 0.5  # woken by the earlier timer


def test_a_bare_domain_wakes_a_sleeping_worker_whatever_its_sleep(db):
    worker = Worker(WallClock(max_sleep=5), test_clocks=False)
    worker._sleep(wall_now())
    with psycopg.connect(_dsn(), autocommit=True) as sender:
        sender.execute("SELECT pg_notify('keeping_time_wake', 'tc_advance')")  # an advance asked: no owed time
    started = time.monotonic()
    worker._sleep(None)
    assert worker.woken == ["tc_advance"] and time.monotonic() - started < 2


def test_a_busy_live_loop_looks_at_test_clocks_when_an_advance_wakes_it_and_else_once_a_poll(db):
    def looks(worker: Worker) -> bool:
        with CaptureQueriesContext(connection) as q:
            worker.step()
        return any('"timers_testclock"' in x["sql"] for x in q.captured_queries)

    worker = Worker(WallClock(), test_clocks=True)
    assert looks(worker)  # the first step looks
    assert not looks(worker)  # the next, straight after, does not: three round trips a step on a busy loop
    worker.woken.append("tc_asked")  # an advance asked wakes it by the clock's name
    assert looks(worker)
    worker._test_clocks_at -= TEST_CLOCK_POLL  # a poll's while later, it looks whatever woke it
    assert looks(worker)


def test_a_domain_another_worker_ran_last_is_left_to_it_until_what_is_owed_is_an_affinity_late(db, settings):
    from timers import lease as leases
    from timers.live import affinity
    from timers.models import Timer

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "LIVE_AFFINITY_SECONDS": 30}  # far from a slow step's time

    from timers.models import Lease

    theirs, mine, gone = (brand_get_or_create(name=f"affinity.{n}") for n in ("theirs", "mine", "gone"))
    for b in (theirs, mine, gone):
        timer_arm(brand=b, key="job_1:deadline:now:1", owed_at=wall_now() - timedelta(milliseconds=100), handler="noop")
    leases.take(live_domain(theirs.id), as_holder="another-worker").release()  # its last turn was another's
    leases.take(live_domain(mine.id)).release()  # this thread's (the worker's) last turn
    leases.take(live_domain(gone.id), as_holder="a-stopped-worker").release()
    Lease.objects.filter(domain=live_domain(gone.id)).update(session="pg:1:1")  # its session has ended
    worker = Worker(WallClock(), test_clocks=False)
    worker.step()
    # Its own at once, and a stopped worker's; the other's left to its worker.
    assert sorted(worker.turns) == sorted([live_domain(mine.id), live_domain(gone.id)])
    assert Timer.objects.get(domain=live_domain(theirs.id)).status == "armed"
    assert worker._next_wake() > wall_now() + affinity() / 2  # it looks again once the other's is that late
    Timer.objects.filter(domain=live_domain(theirs.id)).update(owed_at=wall_now() - affinity() - timedelta(seconds=1))
    worker.step()  # an affinity late: the other worker is gone or stuck, and this one takes it over
    assert Timer.objects.get(domain=live_domain(theirs.id)).status == "fired"


def test_a_sleeping_worker_sleeps_through_notes_for_a_domain_another_worker_runs(db):
    worker = Worker(WallClock(max_sleep=0.6), test_clocks=False)
    worker._sleep(wall_now())  # it listens from here
    worker._others = {"live_theirs"}  # as its last look found them
    with psycopg.connect(_dsn(), autocommit=True) as sender:
        sender.execute("SELECT pg_notify('keeping_time_wake', %s)", [wake_payload("live_theirs", wall_now())])
        started = time.monotonic()
        worker._sleep(None)
        assert worker.woken == [] and time.monotonic() - started >= 0.55  # its worker runs it
        sender.execute("SELECT pg_notify('keeping_time_wake', %s)", [wake_payload("live_mine", wall_now())])
        worker._sleep(None)
    assert worker.woken == ["live_mine"]


def test_a_worker_listens_before_its_first_look(db):
    """An arming that commits between the first step's look and the first sleep is heard, not lost."""
    worker = Worker(WallClock(max_sleep=0.1), test_clocks=False)
    seen = []

    def step() -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT array(SELECT pg_listening_channels())")
            seen.append(cur.fetchone()[0])
        worker.stop.set()
        return False

    worker.step = step
    worker.run()
    assert seen == [["keeping_time_wake"]]
