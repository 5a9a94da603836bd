"""The outbox: every owed send made once, counted at a real HTTP far end; leases, doubt, retries, sets."""

from __future__ import annotations

import os
import socket
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import at
from tests.support.acme import tax_plan_subscribers
from timers import outbox
from timers.advance import advance
from timers.clock import wall_now
from timers.models import Outbox
from timers.sql import sessions
from timers.test_clocks import test_clock_create

START = datetime(2027, 1, 20, 14, tzinfo=UTC)


def send(f):
    f.record("timer.fired")
    f.send("notices", {"what": f.timer.key})


def _dead_sender() -> str:
    # A claimer no one is: a PostgreSQL session that does not exist, or a process that has exited.
    if connection.vendor == "postgresql":
        return "pg:1:0"
    return f"os:{socket.gethostname()}:{2**22 + 12345}"


def _live_other_sender() -> str:
    """A sender that is alive and is not us: another database session, or our parent process."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(f"SELECT {sessions.SESSION_NAME.format(a='a')} FROM pg_stat_activity a "
                        "WHERE a.pid <> pg_backend_pid() AND a.backend_start IS NOT NULL LIMIT 1")
            return cur.fetchone()[0]
    return f"os:{socket.gethostname()}:{os.getppid()}"


@pytest.mark.django_db(transaction=True)
def test_a_year_with_hundreds_of_sends_returns_with_none_owed(brand, far_end):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 10)
    stats = advance(clock.id, START + timedelta(days=366))
    rows = Outbox.objects.filter(domain=clock.id)
    assert rows.count() >= 250
    # Counted at the far end: every submission arrived exactly once, and nothing is owed on return. (The far end
    # is the notices'; the notices' emails leave through the email transport.)
    assert set(far_end.received) == set(rows.filter(transport="notices").values_list("id", flat=True))
    assert far_end.twice() == {}
    assert outbox.owed(clock.id) == {"pending": 0, "sending": 0, "in_doubt": 0}
    assert stats.sends.sent == rows.count()


def test_sends_are_claimed_and_recorded_in_sets(arm, clock, handler, far_end, monkeypatch):
    handler("t.send", send)
    for i in range(120):
        arm(f"job_{i}:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    with monkeypatch.context() as m:  # leave the sends owed: delivered below
        m.setattr(outbox, "deliver", lambda *a, **k: outbox.DeliverStats())
        m.setattr(outbox, "settle", lambda *a, **k: outbox.DeliverStats())
        advance(clock.id, at("2026-11-25T10:00Z"))
    with CaptureQueriesContext(connection) as queries:
        stats = outbox.deliver(clock.id)
    assert stats.sent == 120 and len(far_end.received) == 120
    # A claim and a receipt write per set, not two commits a row.
    assert len(queries) < 20, [q["sql"][:80] for q in queries]


def test_a_send_in_doubt_asks_the_far_end_before_sending_again(arm, clock, handler, far_end):
    handler("t.send", send)
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    arm("job_2:task:efile:2027", "2026-11-25T11:00Z", handler="t.send")
    advance(clock.id, at("2026-11-26T00:00Z"))
    first, second = Outbox.objects.filter(domain=clock.id).order_by("key")
    assert far_end.received == {first.id: 1, second.id: 1}
    # Both were claimed by a sender that died; the first had reached the far end, the second had not.
    del far_end.received[second.id]
    Outbox.objects.filter(domain=clock.id).update(status="sending", claimed_by=_dead_sender(),
                                                  lease_until=wall_now() + timedelta(minutes=5), receipt=None)
    stats = outbox.deliver(clock.id)
    assert (stats.confirmed, stats.sent) == (1, 1)
    assert far_end.received == {first.id: 1, second.id: 1}
    assert set(Outbox.objects.filter(domain=clock.id).values_list("status", flat=True)) == {"sent"}


def test_a_send_a_live_sender_holds_is_not_in_doubt(arm, clock, handler, far_end, monkeypatch):
    handler("t.send", send)
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    with monkeypatch.context() as m:
        m.setattr(outbox, "deliver", lambda *a, **k: outbox.DeliverStats())
        m.setattr(outbox, "settle", lambda *a, **k: outbox.DeliverStats())
        advance(clock.id, at("2026-11-26T00:00Z"))
    row = Outbox.objects.get(domain=clock.id)
    Outbox.objects.filter(pk=row.pk).update(status="sending", claimed_by=_live_other_sender(),
                                            lease_until=wall_now() + timedelta(minutes=5))
    stats = outbox.deliver(clock.id)
    assert stats.done == 0 and stats.held == 1 and not far_end.received
    # Once its lease has run out, it is in doubt: asked about first, then sent once.
    Outbox.objects.filter(pk=row.pk).update(lease_until=wall_now() - timedelta(seconds=1))
    stats = outbox.deliver(clock.id)
    assert stats.sent == 1 and far_end.received == {row.id: 1}


def test_a_send_that_raises_is_in_doubt_with_its_reason_and_retried_after_asking(arm, clock, handler, far_end):
    handler("t.send", send)
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    far_end.fail_next = 1
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    row = Outbox.objects.get(domain=clock.id)
    assert stats.sends.in_doubt == 1 and row.status == "sending" and "503" in row.error and row.tries == 1
    assert outbox.owed(clock.id)["in_doubt"] == 1 and not far_end.received
    assert outbox.deliver(clock.id).done == 0  # backing off
    Outbox.objects.filter(pk=row.pk).update(next_try_at=wall_now())
    assert outbox.deliver(clock.id).sent == 1
    assert far_end.received == {row.id: 1}
    row.refresh_from_db()
    assert row.status == "sent" and row.error == ""


def test_a_send_the_far_end_refuses_fails_for_good(arm, clock, handler):
    handler("t.send", lambda f: f.send("nowhere", {}))
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    stats = advance(clock.id, at("2026-11-26T00:00Z"))
    row = Outbox.objects.get(domain=clock.id)
    assert stats.sends.failed == 1 and row.status == "failed" and "no transport 'nowhere'" in row.error


def test_a_tick_with_nothing_left_to_fire_still_makes_the_sends_owed(arm, clock, handler, far_end, monkeypatch):
    handler("t.send", send)
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    with monkeypatch.context() as m:  # the process dies after the commit, before anything is sent
        m.setattr(outbox, "deliver", lambda *a, **k: outbox.DeliverStats())
        m.setattr(outbox, "settle", lambda *a, **k: outbox.DeliverStats())
        advance(clock.id, at("2026-11-26T00:00Z"))
    # Owed, not sent: written claimed by the advance's own sender (outbox.claim_ahead), which died before sending.
    assert sum(outbox.owed(clock.id).values()) == 1 and not far_end.received
    stats = advance(clock.id, at("2026-11-26T00:00Z"))  # re-run: nothing to fire
    assert stats.fired == 0 and stats.sends.sent == 1
    assert len(far_end.received) == 1 and outbox.owed(clock.id) == {"pending": 0, "sending": 0, "in_doubt": 0}


def test_a_firing_that_sends_twice_makes_two_submissions_each_received_once(arm, clock, handler, far_end):
    def two(f):
        f.record("timer.fired")
        f.send("notices", {"to": "Ada Lovelace"})
        f.send("notices", {"to": "owner"})

    handler("t.two", two)
    arm("job_1:task:efile:2027", "2026-11-25T10:00Z", handler="t.two")
    advance(clock.id, at("2026-11-26T00:00Z"), redeliver=True)
    rows = list(Outbox.objects.filter(domain=clock.id).order_by("seq"))
    assert [(r.attempt, r.seq) for r in rows] == [(1, 0), (1, 1)] and rows[0].id != rows[1].id
    assert far_end.received == {rows[0].id: 1, rows[1].id: 1}
    assert [far_end.payloads[r.id]["to"] for r in rows] == ["Ada Lovelace", "owner"]


def test_a_sender_held_up_past_half_its_lease_renews_first_and_drops_what_another_took(arm, clock, handler, far_end,
                                                                                        monkeypatch):
    handler("t.send", send)
    for i in range(3):
        arm(f"job_{i}:task:efile:2027", "2026-11-25T10:00Z", handler="t.send")
    with monkeypatch.context() as m:
        m.setattr(outbox, "deliver", lambda *a, **k: outbox.DeliverStats())
        m.setattr(outbox, "settle", lambda *a, **k: outbox.DeliverStats())
        advance(clock.id, at("2026-11-26T00:00Z"))
    me = sessions.sender_id()
    rows = outbox._claim(clock.id, me, 10)
    assert len(rows) == 3
    # While this sender was held up, its lease ran out and another sender took the second row.
    other = _live_other_sender()
    Outbox.objects.filter(pk=rows[1].id).update(claimed_by=other)
    stats = outbox.DeliverStats()
    outbox._send_claimed(rows, me, stats, None, claimed_at=time.monotonic() - 3600)
    assert far_end.received == {rows[0].id: 1, rows[2].id: 1}
    assert (stats.sent, stats.taken) == (2, 1)
    assert Outbox.objects.filter(pk=rows[1].id, status="sending", claimed_by=other).exists()
