"""A worker outlives its database session (issue 36, item 2), on PostgreSQL with a real `tick --forever`.

Its sessions are ended from outside (``pg_terminate_backend``, as a restart, a failover or a killed backend
ends them): idle in its wait for wakes, and while a test clock's year is advancing with its sends in flight
at a slow far end. The worker connects again and carries on: a live timer armed after the loss fires on
time, the year ends with the hash of a run that was never interrupted, and the far end receives every
submission exactly once. SIGTERM while idle stops it within a second.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Count
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.acme import tax_plan_subscribers
from tests.support.far_end import FarEnd
from tests.support.processes import spawn, worker_env
from timers import metrics, outbox, test_clocks, transports
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import wall_now
from timers.models import Commit, Outbox, TestClock
from timers.record import record_hash

pytestmark = [
    pytest.mark.postgresql("a worker's database sessions ended from outside: PostgreSQL"),
    pytest.mark.processes,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
YEAR = START + timedelta(days=366)


def _worker(**extra: str) -> tuple[subprocess.Popen, str]:
    """A `tick --forever` whose database sessions carry an application_name of their own (to end them by)."""
    name = f"kt-worker-drill-{uuid.uuid4().hex[:10]}"  # a worker's name (sessions.WORKER_NAME), and its own
    env = worker_env()
    env["DATABASE_URL"] += f"?application_name={name}"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return spawn("tick", "--forever", env=env), name


def _worker_sessions_metric() -> float:
    """kt_worker_sessions, as /metrics says it."""
    families = text_string_to_metric_families(generate_latest(metrics.registry).decode())
    return next(s.value for f in families if f.name == "kt_worker_sessions" for s in f.samples)


def _sessions(name: str) -> set[int]:
    with connection.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [name])
        return {pid for (pid,) in cur.fetchall()}


def _terminate(name: str) -> set[int]:
    with connection.cursor() as cur:
        cur.execute("SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                    [name])
        return {pid for pid, _ in cur.fetchall()}


def _wait(cond, seconds: float, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert proc.poll() is None, f"the worker exited: {proc.communicate()}"
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _stop(proc: subprocess.Popen) -> tuple[str, str, float, float]:
    """SIGTERM, then (stdout, stderr, seconds until it said it stopped, seconds until its process ended)."""
    said: list[float] = []
    lines: list[str] = []
    at = time.monotonic()
    proc.send_signal(signal.SIGTERM)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("stopped after"):
                said.append(time.monotonic() - at)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.wait(timeout=30)
    ended = time.monotonic() - at
    reader.join(timeout=5)
    assert proc.stderr is not None
    return "".join(lines), proc.stderr.read(), said[0] if said else float("inf"), ended


def _fires_on_time(brand, proc: subprocess.Popen, key: str) -> None:
    timer = timer_arm(brand=brand, key=key, owed_at=wall_now() + timedelta(seconds=1), handler="noop")

    def fired() -> bool:
        timer.refresh_from_db()
        return timer.status == "fired"

    _wait(fired, 15, f"{key} did not fire", proc)
    assert timer.late_by < timedelta(seconds=3), timer.late_by


def test_a_worker_whose_idle_session_is_ended_connects_again_and_stops_within_a_second_of_sigterm(brand):
    proc, name = _worker()
    try:
        _wait(lambda: len(_sessions(name)) >= 1, 30, "the worker never connected", proc)
        time.sleep(1.0)  # in its wait for wakes (LISTEN), nothing owed
        for round_ in range(2):  # twice: the second loss is of the session the first reconnect made
            gone = _terminate(name)
            assert gone
            _wait(lambda gone=gone: _sessions(name) - gone, 15, "the worker did not connect again", proc)
            # It carries on, and listens again: a timer armed now wakes it on time (a lost LISTEN would not).
            _fires_on_time(brand, proc, f"job_live:deadline:after_loss:{round_}")
        time.sleep(1.0)  # idle again
        assert proc.poll() is None
        assert _worker_sessions_metric() >= 1  # /metrics: a worker is up
    finally:
        out, err, said, ended = _stop(proc) if proc.poll() is None else (*proc.communicate(), 0.0, 0.0)
        print(f"the worker's stderr:\n{err}")  # shown with a failure
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "lost the database connection" in err and "connected to the database again" in err, err
    assert "stopped after" in out
    assert _worker_sessions_metric() == 0  # /metrics: no worker is up
    # Stopped within a second of SIGTERM (its sleep looks at the stop at least every STOP_POLL); the process's
    # own exit (the interpreter's teardown) is a few tenths more, given slack on a loaded machine.
    assert said < 1.0, f"SIGTERM while idle took {said:.2f}s to stop the worker"
    assert ended < 2.5, f"the process ended {ended:.2f}s after SIGTERM"


def _reference(clock_id: str, to: datetime) -> tuple[str, set[str], int]:
    """The year run once in this process and rolled back: its hash, its submissions (those the far end below
    takes: the notices), its commits."""
    with transaction.atomic(), transports.capture(transports.RecordingTransport()):
        advance(clock_id, to)
        notices = set(Outbox.objects.filter(domain=clock_id, transport="notices").values_list("id", flat=True))
        ref = record_hash(clock_id), notices, Commit.objects.filter(domain=clock_id).count()
        transaction.set_rollback(True)
    return ref


def test_a_worker_whose_session_is_ended_mid_send_finishes_the_year_once(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 2)
    ref_hash, ref_sends, ref_commits = _reference(clock.id, YEAR)
    assert len(ref_sends) >= 40, len(ref_sends)
    with FarEnd(delay=0.15) as far:
        proc, name = _worker(KT_NOTICES_TRANSPORT=far.url, KT_BATCH_SIZE="10")
        try:
            _wait(lambda: len(_sessions(name)) >= 1, 30, "the worker never connected", proc)
            test_clocks.test_clock_request_advance(clock=clock, to=YEAR)
            kills = 0
            for at in (3, len(ref_sends) // 3, 2 * len(ref_sends) // 3):
                # A submission just arrived: the worker waits for its answer (the far end is slow), so the
                # session ends between the send and the write that records its receipt.
                _wait(lambda at=at: sum(far.received.values()) >= at, 120, f"fewer than {at} sends", proc)
                gone = _terminate(name)
                assert gone
                kills += 1
                _wait(lambda gone=gone: _sessions(name) - gone, 15, "the worker did not connect again", proc)

            def ready() -> bool:
                clock.refresh_from_db()
                return clock.status == TestClock.Status.READY

            _wait(ready, 180, "the advance did not finish", proc)
            assert proc.poll() is None  # it outlived every loss
        finally:
            out, err, _, _ = _stop(proc) if proc.poll() is None else (*proc.communicate(), 0.0, 0.0)
            print(f"the worker's stderr:\n{err}")  # shown with a failure
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        # Each loss is met where it lands: by the loop (said in a line), or where a statement's failure is caught
        # already (a lease's take, a transaction's rollback drops the session and the next statement connects).
        assert kills == 3 and "lost the database connection" in err, err
        # The same year as the run never interrupted; every submission once; nothing owed or doubled.
        assert clock.frozen_time == YEAR
        assert record_hash(clock.id) == ref_hash
        assert not Commit.objects.filter(domain=clock.id).values("key").annotate(n=Count("id")).filter(n__gt=1)
        assert Commit.objects.filter(domain=clock.id).count() == ref_commits
        assert set(far.received) == ref_sends
        assert far.twice() == {}
        assert outbox.owed(clock.id) == {"pending": 0, "sending": 0, "in_doubt": 0}
        assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}
