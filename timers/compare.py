"""`tick <span> --compare [--redeliver]`: run one clock's span every way and hash each record.

Each way starts from the same state and is rolled back when its hash is taken, so the clock itself
is left where it was. All ways must agree.

The ways run in one transaction, each in a savepoint rolled back to, under one take of the clock's lease:
every advance and every turn of the live loop inside re-enters it instead of taking and releasing it (on
PostgreSQL each take is a handful of round trips, which made the compare twice as slow as on SQLite). Nothing
of it is ever committed, so it asks for no synchronous commit either. Each way holds the clock still
(timers/advance.py's Pinned): what its advances would ask the database at every advance (the lease's fence,
the clock's row and status, the outbox's claim and count where nothing is owed) is known there instead, and
each advance still runs as it would alone: the daily way moves the clock a day at a time, the live loop runs
its turns, the fourth way delivers every wake twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max

from . import transports
from .advance import advance, pinned
from .clock import VirtualWallClock
from .lease import lease
from .models import Event, Outbox, TestClock
from .record import record_hash
from .sql import sessions
from .timeutil import duration_text
from .transports import RecordingTransport
from .worker import Worker


@dataclass
class Way:
    label: str
    events: int
    sha256: str
    replayed: int | None = None
    sent_twice: int | None = None
    fired: int = 0
    sent: int = 0  # submissions the way's far end received


class _Rollback(Exception):
    pass


def _sent_twice(domain: str, far: RecordingTransport) -> int:
    """Firings whose outside send arrived more than once, counted at the far end of the way's sends:
    a submission received twice, or two submissions received for one key and transport (a firing may send to
    several: a notice to the notices' far end and its email)."""
    keys = Counter(Outbox.objects.filter(domain=domain, id__in=list(far.received)).values_list("key", "transport"))
    return far.sent_twice() + sum(1 for n in keys.values() if n > 1)


# A way's drive: (what it fired or stepped, how many wakes the gate answered replayed: true; None: not asked).
Drive = Callable[[], tuple[int, int | None]]


def _one_way(clock: TestClock, label: str, drive: Drive) -> Way:
    after = Event.objects.aggregate(m=Max("seq"))["m"] or 0
    result: Way | None = None
    try:
        # Each way's sends reach a far end of its own: a rolled-back way must not send anything outside.
        with transaction.atomic(), transports.capture(RecordingTransport()) as far, pinned(clock.id):
            fired, replayed = drive()
            count, digest = record_hash(clock.id, after_seq=after)
            result = Way(label, count, digest, replayed, _sent_twice(clock.id, far), fired, len(far.received))
            raise _Rollback
    except _Rollback:
        pass
    assert result is not None
    return result


def compare(clock_id: str, to: datetime, *, redeliver: bool = False, span_label: str | None = None,
            on_way: Callable[[int, int, str], None] | None = None) -> list[Way]:
    """``on_way(index, count, label)`` is told as each way starts (the CLI's progress on a terminal)."""
    clock = TestClock.objects.get(pk=clock_id)
    start = clock.frozen_time
    span = to - start
    days = max(1, -(-span // timedelta(days=1)))

    def one() -> tuple[int, int | None]:
        s = advance(clock.id, to)
        return s.fired, None

    def daily() -> tuple[int, int | None]:
        fired = 0
        for i in range(1, days + 1):
            fired += advance(clock.id, min(to, start + timedelta(days=i))).fired
        return fired, None

    def wall() -> tuple[int, int | None]:
        worker = Worker(VirtualWallClock(start), domain=clock.id, until=to, test_clocks=False)
        worker.run()
        return worker.steps, None

    def twice() -> tuple[int, int | None]:
        s = advance(clock.id, to, redeliver=True)
        return s.fired, s.replayed

    span_text = span_label or duration_text(span)
    plan = [
        (f"one advance of {span_text} on a test clock", one),
        (f"{days} advances of 1d on a test clock", daily),
        (f"{span_text} of wall time, the live loop, one alarm wake each", wall),
    ]
    if redeliver:
        plan.append(("one advance, every wake delivered twice", twice))
    ways = []
    try:
        with transaction.atomic():
            sessions.commit_unflushed()  # the compare is rolled back whole: its commits need no flush
            with lease(clock.id):
                for index, (label, drive) in enumerate(plan):
                    if on_way is not None:
                        on_way(index, len(plan), label)
                    ways.append(_one_way(clock, label, drive))
            raise _Rollback  # the lease's take too: the compare leaves nothing behind
    except _Rollback:
        pass
    return ways
