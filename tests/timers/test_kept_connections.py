"""Schedules' HTTP calls on kept connections, several at once (timers/http.py send, timers/outbox.py
concurrent_sends), against a real far end on 127.0.0.1 that speaks HTTP/1.1 keep-alive as production servers do.
Counted at the far end: every call arrives, and none it answered is sent again, when the far end closes its
idle connections between calls and when it dies in the middle of a claim."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.conftest import T0
from tests.support.keep_alive import KeepAlive
from timers import outbox
from timers.advance import advance
from timers.models import Outbox, ScheduleRun, ScheduleTick
from timers.schedule_targets import HTTP
from timers.schedules import schedule_create


@pytest.fixture
def far() -> Iterator[KeepAlive]:
    f = KeepAlive()
    yield f
    if not f.dead:
        f.close()


def _calls(clock_id: str) -> list[Outbox]:
    return list(Outbox.objects.filter(domain=clock_id, transport=HTTP))


def test_calls_go_on_kept_connections_and_a_far_end_closing_them_between_calls_costs_no_try(brand, clock, far):
    """Day one: 24 calls on fewer connections than calls (kept). The far end then closes every idle connection;
    day two's calls find them closed before asking anything (readable while idle) and open new ones: each call
    arrives once and none is a failed try."""
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": far.url, "retries": 0})
    advance(clock.id, T0 + timedelta(days=1))
    first = far.connections
    assert len(far.acked) == 24 and first < 24, (len(far.acked), first)
    far.drop_idle()
    advance(clock.id, T0 + timedelta(days=2))
    rows = _calls(clock.id)
    assert len(rows) == 48
    assert [(r.status, r.tries, r.error) for r in rows if (r.status, r.tries, r.error) != ("sent", 0, "")] == []
    assert set(far.acked) == {r.id for r in rows} and set(far.acked.values()) == {1} and far.got == far.acked
    assert far.connections > first  # the closed ones were not used again: new connections carried day two
    assert set(ScheduleTick.objects.filter(schedule=sch).values_list("state", flat=True)) == {"succeeded"}


def test_a_far_end_that_dies_mid_claim_loses_nothing_and_gets_nothing_it_answered_twice(brand, clock):
    """48 calls in one claim, 8 at a time; the far end dies on its 20th request (that one and those in flight
    unanswered, the rest refused). What it answered is recorded sent and never sent again; every other call is
    a failed try, sent again once the far end is back, and answered then: nothing lost."""
    first = KeepAlive(die_at=20)
    sch = schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": first.url, "retries": 3})
    advance(clock.id, T0 + timedelta(days=2))
    assert first.dead and 0 < len(first.acked) < 20
    rows = {r.id: r for r in _calls(clock.id)}
    assert len(rows) == 48
    sent = {sid for sid, r in rows.items() if r.status == "sent"}
    assert sent == set(first.acked)  # answered: recorded sent; not answered: not
    assert all(r.status == "sending" and r.tries == 1 and r.error for sid, r in rows.items() if sid not in sent)
    second = KeepAlive(first.port)  # back, on the same port
    try:
        Outbox.objects.filter(domain=clock.id).update(next_try_at=None)  # the backoff is wall time: skip it
        outbox.deliver(clock.id)
    finally:
        second.close()
    assert set(first.acked) | set(second.acked) == set(rows)  # nothing lost
    assert not set(first.acked) & set(second.acked) and set((first.acked + second.acked).values()) == {1}
    assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}
    assert set(ScheduleRun.objects.filter(schedule=sch).values_list("outcome", flat=True)) == {"http 200"}


def test_the_sends_in_flight_at_once_are_bounded_by_kt_send_threads(brand, clock, settings):
    """A claim's 24 calls against a far end that holds each for 30 ms: at most KT_SEND_THREADS arrive at once
    (2 here; the transport alone would allow 8)."""
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "SEND_THREADS": 2}
    far = KeepAlive(linger=0.03)
    try:
        schedule_create(brand=brand, domain=clock.id, spec={"every": "1h"}, target={"url": far.url})
        advance(clock.id, T0 + timedelta(days=1))
    finally:
        far.close()
    assert len(far.acked) == 24 and set(far.acked.values()) == {1}
    assert far.peak == 2
