"""Exactly once under real faults, on PostgreSQL with real processes: kill -9 at random points of a
year's advance, four workers on one clock with slow sends, a delete while a clock advances.

Sends are counted at a real HTTP far end (tests/support/far_end.py) that the `tick` processes send to.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from django.db.models import Count, Sum

from tests.support.acme import tax_plan_subscribers
from tests.support.api import Client
from tests.support.far_end import FarEnd
from tests.support.processes import spawn, worker_env
from timers import arming, outbox, tenants, test_clocks, transports
from timers.advance import advance
from timers.models import Commit, Event, FireTally, Outbox, TestClock, Timer
from timers.record import record_hash
from timers.timeutil import iso_z

# Kill drills and workers racing each other: on one test process (scripts/test, --dist loadgroup), one at a time.
pytestmark = [
    pytest.mark.postgresql("real processes, sessions and SKIP LOCKED: PostgreSQL"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
YEAR = START + timedelta(days=366)


def _reference(clock_id: str, to: datetime) -> tuple[tuple[int, str], set[str], int]:
    """The year run once in this process and rolled back: its hash, its submissions, its commits."""
    with transaction.atomic(), transports.capture(transports.RecordingTransport()) as far:
        advance(clock_id, to)
        ref = record_hash(clock_id), set(far.received), Commit.objects.filter(domain=clock_id).count()
        transaction.set_rollback(True)
    return ref


def _no_key_twice(domain: str) -> None:
    assert not Commit.objects.filter(domain=domain).values("key").annotate(n=Count("id")).filter(n__gt=1)


def test_kill_9_at_random_points_of_a_years_advance_then_tick_again(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 4)
    ref_hash, ref_sends, ref_commits = _reference(clock.id, YEAR)
    assert len(ref_sends) > 100
    rng = random.Random(20261130)
    total = ref_commits + len(ref_sends)
    args = ("tick", "--to", iso_z(YEAR), "--test-clock", clock.id)
    kills: list[tuple[int, str]] = []
    with FarEnd(delay=0.01) as far:
        env = worker_env(batch=10)
        env["KT_NOTICES_TRANSPORT"] = env["KT_EMAIL_TRANSPORT"] = far.url
        level = 0
        while len(kills) < 24:
            level += rng.randint(1, max(1, total // 40))
            proc = spawn(*args, env=env)
            last = (Commit.objects.filter(domain=clock.id).count(), sum(far.received.values()))
            while proc.poll() is None:
                now = (Commit.objects.filter(domain=clock.id).count(), sum(far.received.values()))
                if sum(now) >= level:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    # Which kind of progress crossed the kill point: commits (firing) or receipts (sending).
                    kills.append((sum(now), "firing" if now[0] > last[0] else "sending"))
                    break
                last = now
                time.sleep(0.003)
            else:
                out, err = proc.communicate()
                assert proc.returncode == 0, err
                break  # it finished before this kill point
        proc = spawn(*args, env=env)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err

        assert len(kills) >= 20, kills
        assert {phase for _, phase in kills} == {"firing", "sending"}, kills
        # The same record as the run that was never killed, no key committed twice, and every owed
        # send received exactly once by the far end.
        assert record_hash(clock.id) == ref_hash
        _no_key_twice(clock.id)
        assert set(far.received) == ref_sends
        assert far.twice() == {}
        assert outbox.owed(clock.id) == {"pending": 0, "sending": 0, "in_doubt": 0}
        assert TestClock.objects.get(pk=clock.id).frozen_time == YEAR
        # /metrics' fire counts were written with the batches they count: none lost or doubled by a kill.
        tallied = FireTally.objects.filter(domain=clock.id).aggregate(n=Sum("fires"))["n"]
        assert tallied == Commit.objects.filter(domain=clock.id).count() == ref_commits


def test_four_workers_with_slow_sends_send_every_submission_once(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    with FarEnd(delay=0.3) as far:
        env = worker_env()
        env["KT_NOTICES_TRANSPORT"] = env["KT_EMAIL_TRANSPORT"] = far.url
        procs = [spawn("tick", "--forever", env=env) for _ in range(4)]
        try:
            time.sleep(1.0)
            test_clocks.test_clock_request_advance(clock=clock, to=YEAR)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                clock.refresh_from_db()
                if clock.status == "ready":
                    owed_when_ready = outbox.owed(clock.id)
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the advance did not become ready")
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            outs = [p.communicate(timeout=60) for p in procs]
        for p, (_, err) in zip(procs, outs, strict=True):
            assert p.returncode == 0, err
        sent = set(Outbox.objects.filter(domain=clock.id).values_list("id", flat=True))
        assert len(sent) >= 25
        assert set(far.received) == sent and far.twice() == {}
        # Ready only once the advance's sends were made.
        assert owed_when_ready == {"pending": 0, "sending": 0, "in_doubt": 0}
        _no_key_twice(clock.id)


def _slow_scenario(brand, clock, n: int = 3000) -> None:
    for i in range(n):
        arming.timer_arm(brand=brand, key=f"job_{i % 31}:task:r:{i}", owed_at=START + timedelta(minutes=11 * i),
                           domain=clock.id, handler="repeat", data={"every": {"days": 2}, "count": 3})


def _wait_for_progress(clock_id: str, proc: subprocess.Popen, at_least: int = 200) -> None:
    deadline = time.monotonic() + 60
    while Commit.objects.filter(domain=clock_id).count() < at_least:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _nothing_after_the_delete(clock_id: str) -> None:
    deleted = Event.objects.get(domain=clock_id, type="test_clock.deleted")
    assert not Event.objects.filter(domain=clock_id, seq__gt=deleted.seq).exists()
    frozen = TestClock.objects.get(pk=clock_id).frozen_time
    assert not Timer.objects.filter(domain=clock_id, status__in=["armed", "held"]).exists()
    assert not Timer.objects.filter(domain=clock_id, fired_at__gt=frozen).exists()
    voided = Timer.objects.filter(domain=clock_id, by="test_clock.deleted")
    assert voided.count() == deleted.data["timers_voided"] > 0
    assert not voided.filter(fired_at__isnull=False).exists()
    _no_key_twice(clock_id)


def test_a_delete_over_the_api_while_the_clock_advances(brand, live_server):
    _, secret = tenants.api_key_create(brand=brand)
    api = Client(live_server.url, secret)
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    _slow_scenario(brand, clock)
    proc = spawn("tick", "--to", iso_z(START + timedelta(days=20)), "--test-clock", clock.id, env=worker_env(batch=10))
    _wait_for_progress(clock.id, proc)
    r = api.delete(f"/test_clocks/{clock.id}")
    assert r.status == 200, r.body
    out, err = proc.communicate(timeout=120)
    # The advance stopped at its next batch and said so in one line.
    assert proc.returncode != 0 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("CommandError: test_clock_deleted:") or \
        "test_clock_deleted:" in err, err
    _nothing_after_the_delete(clock.id)
    assert api.get(f"/test_clocks/{clock.id}").status == 404
    assert api.post(f"/test_clocks/{clock.id}/advance", {"to": iso_z(YEAR)}).status == 404


def test_a_delete_from_the_cli_while_a_worker_advances_the_clock(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    _slow_scenario(brand, clock)
    env = worker_env(batch=10)
    worker = spawn("tick", "--forever", env=env)
    try:
        test_clocks.test_clock_request_advance(clock=clock, to=START + timedelta(days=20))
        _wait_for_progress(clock.id, worker)
        delete = spawn("testclocks", "delete", clock.id, env=env)
        out, err = delete.communicate(timeout=120)
        assert delete.returncode == 0, err
        assert "deleted" in out
        time.sleep(0.5)  # the worker keeps running; nothing more may land
    finally:
        worker.send_signal(signal.SIGTERM)
        _, werr = worker.communicate(timeout=60)
    assert worker.returncode == 0, werr
    assert "Traceback" not in werr
    _nothing_after_the_delete(clock.id)
    assert TestClock.objects.get(pk=clock.id).status == "deleted"
    assert not Event.objects.filter(domain=clock.id, type="test_clock.ready").exists()  # deleted mid-advance


def test_a_sender_stopped_past_its_lease_sends_nothing_another_sender_took(brand, far_end, monkeypatch):
    """A worker frozen mid-claim (SIGSTOP: a long GC, a paused VM) past its lease wakes to find its rows taken:
    it must not send them again. Counted at the far end, which the frozen worker and this process share."""
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 1)
    with monkeypatch.context() as m:  # leave the year's sends owed: the worker below makes them
        m.setattr(outbox, "deliver", lambda *a, **k: outbox.DeliverStats())
        m.setattr(outbox, "settle", lambda *a, **k: outbox.DeliverStats())
        advance(clock.id, YEAR)
    owed = set(Outbox.objects.filter(domain=clock.id).values_list("id", flat=True))
    assert len(owed) >= 25
    far_end.delay = 0.2
    # Every send counted at the far end, the e-mails to person records too: the worker's and this process's.
    transports.register("email", transports.HttpTransport(far_end.url, timeout=5))  # the fixture puts it back
    env = worker_env()
    env["KT_NOTICES_TRANSPORT"] = env["KT_EMAIL_TRANSPORT"] = far_end.url
    env["KT_OUTBOX_LEASE_SECONDS"] = "2"
    worker = spawn("tick", "--forever", env=env)
    try:
        deadline = time.monotonic() + 60
        while len(far_end.received) < 3:
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the worker made no sends"
            time.sleep(0.01)
        worker.send_signal(signal.SIGSTOP)
        time.sleep(3.0)  # past its lease
        far_end.delay = 0.0
        stats = outbox.deliver(clock.id)  # takes over the rows the frozen worker claimed
        assert stats.sent > 0 and far_end.twice() == {}, stats  # what it sent had not arrived
        assert set(far_end.received) == owed
        worker.send_signal(signal.SIGCONT)
        time.sleep(2.0)  # it wakes where it stopped, its claim in hand
    finally:
        worker.send_signal(signal.SIGCONT)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "taken over by another sender" in err, err  # it woke with rows in hand, and found them gone
    assert far_end.twice() == {}
    assert set(far_end.received) == owed
    assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}
