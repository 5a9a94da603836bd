"""Live first (issue 36, item 1): two `tick --forever` workers, a live timer armed every second, and two dense
test clocks advancing at once. A worker runs a requested advance in slices (KT_ADVANCE_SLICE_SECONDS) and
takes its live turns between them, so the live timers fire on time while both clocks advance; each clock's
year is the record of an advance run whole, every timer once.
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count

from tests.support.processes import spawn, worker_env
from timers import test_clocks
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import wall_now
from timers.models import Commit, TestClock, Timer
from timers.record import record_hash

pytestmark = [
    pytest.mark.postgresql("two worker processes on one database: PostgreSQL"),
    pytest.mark.processes,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
TO = START + timedelta(days=30)
LIVE_TARGET = timedelta(seconds=3)  # what a live timer may be late by while test clocks advance


def _dense(brand, clock, n: int = 700) -> None:
    # Each timer a chain of 100 fires, 6 hours apart: 70,000 fires in the 30 days.
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{i}:task:r:1", owed_at=START + timedelta(minutes=7 * i),
                  domain=clock.id, handler="repeat", data={"every": {"hours": 6}, "count": 100})


def test_live_timers_fire_on_time_while_two_dense_test_clocks_advance(brand):
    clocks = [test_clocks.test_clock_create(brand=brand, frozen_time=START, name=f"dense {i}") for i in range(3)]
    for c in clocks:
        _dense(brand, c)
    reference, *raced = clocks
    began = time.monotonic()
    advance(reference.id, TO)
    whole = time.monotonic() - began  # one clock's advance, run whole in this process
    # Many times the live target: a worker that ran one whole would hold its live turns that long.
    assert whole > 3 * LIVE_TARGET.total_seconds(), f"a dense advance took only {whole:.1f}s here"
    env = worker_env(batch=500)
    env["KT_ADVANCE_SLICE_SECONDS"] = "1.0"
    procs: list[subprocess.Popen] = [spawn("tick", "--forever", env=env) for _ in range(2)]
    live: list[Timer] = []
    try:
        time.sleep(1.5)
        for c in raced:
            test_clocks.test_clock_request_advance(clock=c, to=TO)
        # A live stream of one a second while the clocks advance (and a little after).
        deadline = time.monotonic() + 180
        while True:
            live.append(timer_arm(brand=brand, key=f"job_live:deadline:stream:{len(live)}",
                                  owed_at=wall_now() + timedelta(seconds=1), handler="noop"))
            statuses = set(TestClock.objects.filter(pk__in=[c.id for c in raced]).values_list("status", flat=True))
            if statuses == {"ready"} and len(live) >= 10:
                break
            for p in procs:
                assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the advances did not finish"
            time.sleep(1.0)
        streamed = time.monotonic() - began - whole
        time.sleep(3.0)  # the last live timers fire
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err, err
    # The advances took a while, many times the live target: a worker that ran one whole held its live turns.
    late = []
    for t in live:
        t.refresh_from_db()
        assert t.status == "fired", t.key
        late.append(t.late_by.total_seconds())
    print(f"live late_by over {len(late)} timers ({streamed:.0f}s of stream): p50 {statistics.median(late):.2f}s, "
          f"max {max(late):.2f}s; one dense advance whole: {whole:.1f}s")
    # A worker that ran a clock's advance whole would hold its live turns about as long as `whole` (or longer:
    # two workers, two clocks); sliced, a live timer waits a slice and a batch. Relative to `whole`, as a loaded
    # machine stretches both alike.
    assert max(late) < max(LIVE_TARGET.total_seconds(), whole / 3), (whole, late)
    ref = record_hash(reference.id)
    fired = Timer.objects.filter(domain=reference.id, status="fired").count()
    for c in raced:
        assert record_hash(c.id) == ref
        assert Timer.objects.filter(domain=c.id, status="fired").count() == fired
        assert Commit.objects.filter(domain=c.id).count() == Commit.objects.filter(domain=reference.id).count()
        assert not Commit.objects.filter(domain=c.id).values("key").annotate(n=Count("id")).filter(n__gt=1)
