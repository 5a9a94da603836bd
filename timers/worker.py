"""Running the tick: leases, test clock advances, the live clock, and the loop behind `tick --forever`.

One worker holds a clock domain at a time (a PostgreSQL advisory lock), so more workers scale across
domains, never by racing on one. Requested advances are claimed with SKIP LOCKED.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from datetime import datetime

from django.db import connection, transaction

from . import outbox
from .clock import Clock, WallClock
from .engine import Run, RunStats, canonical
from .errors import NotFound, TestClockBackward, TestClockDeleted
from .lease import lease
from .models import LIVE, Event, LiveClock, TestClock, Timer
from .services import backward_message, test_clock_finish_delete
from .store import get_store
from .timeutil import iso_z

log = logging.getLogger(__name__)


def _set_frozen(clock_id: str):
    def write(at: datetime) -> None:
        TestClock.objects.filter(pk=clock_id, frozen_time__lt=at).exclude(status__in=TestClock.GONE).update(
            frozen_time=at)

    return write


def _alive(clock_id: str):
    """The run's guard, first in each batch's transaction: a clock marked for deletion stops its advance
    there. It locks the clock's row for the batch, so a delete's mark waits for the batch to commit and
    never lands between the check and the batch's writes (the frozen time moves with each batch)."""
    def check() -> bool:
        status = (TestClock.objects.select_for_update(no_key=True).filter(pk=clock_id)
                  .values_list("status", flat=True).first())
        return status is not None and status not in TestClock.GONE

    return check


def _stopped(clock_id: str) -> TestClockDeleted:
    return TestClockDeleted(f"test clock {clock_id} was deleted while it advanced; it stopped at a batch boundary "
                            "and nothing landed after test_clock.deleted")


def advance(clock_id: str, to: datetime, *, redeliver: bool = False, trace: bool = False,
            on: set[str] | None = None) -> RunStats:
    """Advance a test clock to ``to``, firing every timer owed on the way, each instant in turn."""
    with lease(clock_id):
        clock = TestClock.objects.exclude(status__in=TestClock.GONE).filter(pk=clock_id).first()
        if clock is None:
            raise NotFound(f"no test clock {clock_id!r}")
        if to < clock.frozen_time:
            raise TestClockBackward(backward_message(clock, to))
        run = Run(domain=clock.id, floor=clock.frozen_time, to=to, store=get_store(), redeliver=redeliver,
                  trace=trace, on=on, on_flush=_set_frozen(clock.id), deliver=lambda: outbox.deliver(clock.id),
                  guard=_alive(clock.id))
        stats = run.execute()
        if stats.stopped:
            raise _stopped(clock.id)
        # Ready only once every send the advance owes has been made, has failed, or is in doubt with its reason.
        stats.add_sends(outbox.settle(clock.id))
        with transaction.atomic():
            # The row lock orders this against a delete's mark: a clock marked gone is never moved or readied.
            current = TestClock.objects.select_for_update().filter(pk=clock.id).first()
            if current is None or current.status in TestClock.GONE:
                raise _stopped(clock.id)
            TestClock.objects.filter(pk=clock.id).update(frozen_time=to)
            if (current.status == TestClock.Status.ADVANCING and current.advance_to is not None
                    and current.advance_to <= to):
                _mark_ready(current, to)
        return stats


def _mark_ready(clock: TestClock, at: datetime) -> None:
    TestClock.objects.filter(pk=clock.id).update(status=TestClock.Status.READY, advance_to=None, redeliver=False)
    Event.objects.create(domain=clock.id, brand_id=clock.brand_id, type="test_clock.ready", subject=clock.id,
                         owed_at=at, data={"frozen_time": iso_z(at)}, fired_at=at)


def run_requested_advances(*, limit: int = 10) -> int:
    """Claim clocks whose advance was requested (SKIP LOCKED) and run each; returns how many ran."""
    done = 0
    for _ in range(limit):
        with transaction.atomic():
            clock = (
                TestClock.objects.select_for_update(skip_locked=True)
                .filter(status=TestClock.Status.ADVANCING)
                .order_by("created_at")
                .first()
            )
            if clock is None:
                return done
            # The row lock is only the claim; the advance itself runs under the domain's lease.
            target, redeliver = clock.advance_to, clock.redeliver
        with lease(clock.id, wait=False) as got:
            if not got:
                continue  # another worker holds this clock
            clock.refresh_from_db()
            if clock.status != TestClock.Status.ADVANCING:
                continue
            try:
                advance(clock.id, target, redeliver=redeliver)
            except TestClockDeleted:
                pass  # deleted while it advanced: the delete finishes under the lease we let go
            except Exception as exc:  # pushed out, never crash-looped
                log.exception("advance of %s failed", clock.id)
                TestClock.objects.filter(pk=clock.id, status=TestClock.Status.ADVANCING).update(
                    status=TestClock.Status.INTERNAL_FAILURE, failure=str(exc)[:500])
            done += 1
    return done


# -- the live clock ----------------------------------------------------------------------------------
def live_step(clock: Clock, *, domain: str = LIVE, trace: bool = False, on: set[str] | None = None,
              settle: bool = True) -> RunStats:
    """Fire what is owed now on a live-style domain: the wall clock's (or a virtual wall's) now.

    With ``settle`` (a one-shot `tick`), it returns once every send owed has been made, has failed or is
    in doubt with its reason; the worker loop delivers after each step instead of waiting on others.
    """
    now = clock.now()
    with lease(domain):
        floor = _position(domain)
        run = Run(domain=domain, floor=floor, to=now, store=get_store(), now=clock.now, trace=trace, on=on,
                  on_flush=lambda at: _set_position(domain, at), deliver=lambda: outbox.deliver(domain),
                  guard=None if domain == LIVE else _alive(domain))
        stats = run.execute()
        if stats.stopped:
            raise _stopped(domain)
        stats.add_sends(outbox.settle(domain) if settle else outbox.deliver(domain))
        _set_position(domain, now)
        return stats


def finish_deletes() -> int:
    """Finish deletes whose requester died between marking the clock and voiding it."""
    done = 0
    for clock_id in TestClock.objects.filter(status=TestClock.Status.DELETING).values_list("id", flat=True)[:10]:
        with lease(clock_id, wait=False) as got:
            if got and test_clock_finish_delete(clock_id=clock_id):
                done += 1
    return done


def _position(domain: str) -> datetime | None:
    if domain == LIVE:
        return LiveClock.objects.filter(pk=domain).values_list("position", flat=True).first()
    return TestClock.objects.filter(pk=domain).values_list("frozen_time", flat=True).first()


def _set_position(domain: str, at: datetime) -> None:
    if domain == LIVE:
        updated = LiveClock.objects.filter(pk=domain).update(position=at)
        if not updated:
            LiveClock.objects.get_or_create(pk=domain, defaults={"position": at})
    else:
        _set_frozen(domain)(at)


def next_owed(domain: str) -> datetime | None:
    return (
        Timer.objects.filter(domain=domain, status="armed")
        .order_by("owed_at")
        .values_list("owed_at", flat=True)
        .first()
    )


class Worker:
    """The loop behind `tick --forever`: each step returns whether it found work (healthchecks' shape)."""

    def __init__(self, clock: Clock | None = None, *, domain: str = LIVE, until: datetime | None = None,
                 test_clocks: bool = True):
        self.clock = clock or WallClock()
        self.domain = domain
        self.until = until
        self.test_clocks = test_clocks
        self.stop = threading.Event()
        self.wakes = 0
        self.steps = 0
        self._listening = False

    def step(self) -> bool:
        stats = live_step(self.clock, domain=self.domain, settle=False)
        self.steps += 1
        found = stats.fired + stats.refused + stats.failed > 0
        if self.test_clocks:
            found = run_requested_advances() > 0 or found
            found = finish_deletes() > 0 or found
        sends = outbox.deliver(None if self.test_clocks else self.domain, stop=self.stop)
        return found or sends.done > 0

    def run(self) -> None:
        """Step until nothing is found, then sleep until the next owed timer (or a wake-up)."""
        while not self.stop.is_set():
            if self.step():
                continue
            nxt = next_owed(self.domain)
            if self.until is not None and (nxt is None or nxt > self.until):
                return
            self.wakes += 1
            self._sleep(nxt)

    def _sleep(self, nxt: datetime | None) -> None:
        if not isinstance(self.clock, WallClock) or connection.vendor != "postgresql":
            self.clock.sleep_until(nxt, self.stop)
            return
        # Live on PostgreSQL: sleep until the next owed timer, or until arming one earlier NOTIFYs us.
        delay = self.clock.max_sleep if nxt is None else (nxt - self.clock.now()).total_seconds()
        delay = max(0.0, min(delay, self.clock.max_sleep))
        connection.ensure_connection()
        conn = connection.connection
        if not self._listening:
            conn.execute("LISTEN keeping_time_wake")
            self._listening = True
        for _ in conn.notifies(timeout=delay, stop_after=1):
            break


# -- the record's hash -------------------------------------------------------------------------------
def record_hash(domain: str, *, after_seq: int = 0) -> tuple[int, str]:
    """sha256 over the record in order: each event's type, subject, owed time, key and data.

    Fired time, late_by, attempt and wakes are left out (they differ by way), and so are the test
    clock's own events, which say how the clock was driven rather than what happened.
    """
    digest = hashlib.sha256()
    count = 0
    rows = (
        Event.objects.filter(domain=domain, seq__gt=after_seq)
        .exclude(type__startswith="test_clock.")
        .order_by("seq")
        .values_list("type", "subject", "owed_at", "key", "data")
    )
    for type_, subject, owed_at, key, data in rows.iterator(chunk_size=5000):
        digest.update(canonical([type_, subject, iso_z(owed_at), key, data]).encode())
        digest.update(b"\n")
        count += 1
    return count, digest.hexdigest()
