"""An advance's lease is kept while its holder sends (issue 36, item 1), with two real `tick --forever` workers
on PostgreSQL and a slow far end.

A batch's fence renews the lease as the batch begins; the batch's sends come after it, and at a slow far end
they outlast the lease. The advance's keeper renews it from the send loop (timers/advance.py, Keeper), so the
second worker never takes over an advance that is alive, and a delete of the clock stops the sends within
about a second, where it waited for every send of the batch.
"""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from tests.support.acme import tax_plan_subscribers
from tests.support.far_end import FarEnd
from tests.support.processes import spawn, worker_env
from timers import test_clocks, transports
from timers.advance import advance
from timers.models import Event, LeaseTerm, Outbox, TestClock, Timer
from timers.record import record_hash

pytestmark = [
    pytest.mark.postgresql("two worker processes, sessions and leases: PostgreSQL"),
    pytest.mark.processes,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("processes"),
]

START = datetime(2027, 1, 20, 14, tzinfo=UTC)
YEAR = START + timedelta(days=366)


def _workers(far: FarEnd, *, lease_seconds: float) -> list[subprocess.Popen]:
    env = worker_env(batch=5000)  # a batch holds many fires, so many sends follow it
    env["KT_NOTICES_TRANSPORT"] = far.url
    env["KT_LEASE_SECONDS"] = str(lease_seconds)
    return [spawn("tick", "--forever", env=env) for _ in range(2)]


def _stop(procs: list[subprocess.Popen]) -> list[str]:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "Traceback" not in err, err
        errs.append(err)
    return errs


def _wait(cond, seconds: float, what: str, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        for p in procs:
            assert p.poll() is None, f"a worker exited: {p.communicate()}"
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _notices(clock_id: str) -> set[str]:
    return set(Outbox.objects.filter(domain=clock_id, transport="notices").values_list("id", flat=True))


def test_an_advance_whose_sends_outlast_its_lease_is_never_taken_over(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 2)
    with transaction.atomic(), transports.capture(transports.RecordingTransport()):
        advance(clock.id, YEAR)
        ref_hash, ref_sends = record_hash(clock.id), _notices(clock.id)
        transaction.set_rollback(True)
    # The sends at the far end take about 9 s in all (0.15 s each), four times the 2 s lease.
    assert len(ref_sends) * 0.15 > 4 * 2.0, len(ref_sends)
    with FarEnd(delay=0.15) as far:
        procs = _workers(far, lease_seconds=2.0)
        try:
            time.sleep(1.0)
            test_clocks.test_clock_request_advance(clock=clock, to=YEAR)

            def ready() -> bool:
                clock.refresh_from_db()
                return clock.status == TestClock.Status.READY

            _wait(ready, 180, "the advance did not finish", procs)

            # Ready means every send was made, failed or is in doubt; a send a loaded machine timed out is in
            # doubt until a sender asks the far end and settles it: the far end's count is read once none is.
            def settled() -> bool:
                return not Outbox.objects.filter(domain=clock.id, transport="notices").exclude(status="sent").exists()

            _wait(settled, 120, "the advance's sends did not settle", procs)
        finally:
            errs = _stop(procs)
    statuses = dict(Outbox.objects.filter(domain=clock.id).values_list("id", "status"))
    # One holder ran the advance from its take to its end: no term of another worker's in between.
    holders = list(LeaseTerm.objects.filter(domain=clock.id).order_by("epoch").values_list("holder", flat=True))
    assert len(set(holders)) == 1, holders
    assert not any("lost the lease" in e for e in errs), errs
    assert record_hash(clock.id) == ref_hash
    assert set(far.received) == ref_sends and far.twice() == {}, {i: statuses.get(i) for i in ref_sends - set(far.received)}


def test_a_delete_stops_an_advance_mid_sends_within_a_second_or_so(brand):
    clock = test_clocks.test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 2)
    with FarEnd(delay=0.5) as far:  # the year's sends would take half a minute
        procs = _workers(far, lease_seconds=30.0)
        try:
            time.sleep(1.0)
            test_clocks.test_clock_request_advance(clock=clock, to=YEAR)
            _wait(lambda: sum(far.received.values()) >= 3, 120, "no sends arrived", procs)
            at = time.monotonic()
            test_clocks.test_clock_delete(clock=TestClock.objects.get(pk=clock.id))  # waits for the lease
            took = time.monotonic() - at
            # A sender thread holding some of its sends (a slice left them to it) looks once a second, the send
            # in flight ends: after that, nothing more arrives.
            time.sleep(1.5)
            settled = sum(far.received.values())
            time.sleep(2.0)
            after = sum(far.received.values()) - settled
        finally:
            _stop(procs)
    assert took < 3.0, f"the delete waited {took:.1f}s for the advance to let go"
    assert after == 0, f"{after} sends arrived more than 1.5 s after the delete"
    assert far.twice() == {}
    deleted = Event.objects.get(domain=clock.id, type="test_clock.deleted")
    assert not Event.objects.filter(domain=clock.id, seq__gt=deleted.seq).exists()
    assert not Timer.objects.filter(domain=clock.id, status__in=["armed", "held"]).exists()
    assert TestClock.objects.get(pk=clock.id).status == "deleted"
    assert not Outbox.objects.filter(domain=clock.id, status__in=["pending", "sending"]).exists()
    # Every send not made is voided: by the advance as it stopped and by the delete (counted in sends_voided), or
    # by a sender thread that held some of them when the delete came (within a second after it).
    voided = Outbox.objects.filter(domain=clock.id, status="voided").count()
    assert voided >= deleted.data["sends_voided"] and voided > 0
    assert Outbox.objects.filter(domain=clock.id, transport="notices", status="sent").count() == len(far.received)
