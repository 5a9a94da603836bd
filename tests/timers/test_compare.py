"""`tick --compare` (timers/compare.py): its ways share one transaction and one take of the clock's lease, and
leave nothing behind; an advance inside a way asks the database only for its own work (timers/advance.py's
Pinned)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.conftest import T0
from timers import transports
from timers.advance import advance, pinned
from timers.arming import timer_arm
from timers.clock import VirtualWallClock
from timers.compare import compare
from timers.lease import lease
from timers.live import live_step
from timers.models import Lease, LeaseTerm, Outbox, TestClock, Timer

DAYS = 60


def _write_a_send(f) -> None:
    """A send written to the outbox by the handler itself (as calendars' actions do), not queued by the run."""
    Outbox.objects.create(id=f"sub_direct_{f.timer.id}", domain=f.domain, brand_id=f.timer.brand_id,
                          key=f.timer.key, attempt=1, transport="notices", payload={}, created_at=f.instant)


def test_the_ways_take_the_clock_lease_once_and_leave_nothing(arm, clock, handler, monkeypatch):
    arm("job_1:ask:a:1", "2026-12-24T14:00Z", handler="repeat", data={"every": {"days": 7}, "count": 10})
    handler("t.notice", lambda f: f.send("notices", {"what": f.timer.key}))
    handler("t.direct", _write_a_send)
    arm("job_2:task:notice:1", T0 + timedelta(days=20, hours=3), handler="t.notice")
    arm("job_2:task:direct:1", T0 + timedelta(days=40, hours=3), handler="t.direct")
    leases, terms = Lease.objects.count(), LeaseTerm.objects.count()
    starts: list[tuple[int, int]] = []
    with CaptureQueriesContext(connection) as queries, _sent(monkeypatch) as sent:
        ways = compare(clock.id, T0 + timedelta(days=DAYS), redeliver=True,
                       on_way=lambda i, n, label: starts.append((len(queries.captured_queries), len(sent))))
    assert len(ways) == 4 and len({w.sha256 for w in ways}) == 1 and ways[0].events == 5 and ways[0].fired == 7
    # Every way sent both, the one the run queued and the one the handler wrote.
    assert [w.sent for w in ways] == [2, 2, 2, 2] and ways[3].sent_twice == 0
    # Each way's advances (60 of them for the daily way) and the live loop's turns re-enter the one take.
    takes = [q for q in queries.captured_queries if "INSERT INTO timers_leaseterm" in q["sql"]]
    assert len(takes) == 1, len(takes)
    assert Lease.objects.count() == leases and LeaseTerm.objects.count() == terms
    assert not Timer.objects.filter(domain=clock.id, status="fired").exists()

    # Inside a way the lease's fence, the clock's row and the outbox (where nothing is owed) are known, and an
    # advance that would fire nothing is one statement: its mark, the look for an armed timer owed by its end,
    # and the frozen time's move (two on SQLite, the look apart). One that fires adds its batch's savepoint
    # and release, its fetch, the frozen time's move with the look at the outbox, and its firings' writes. The
    # daily way still advances day by day, each day marked, and the live loop still runs its turns. (Before,
    # the daily way was 613 statements through Django's cursor on PostgreSQL and 1,083 on SQLite; then 5 and
    # 7 a day at the driver, with the tick's own cursors.)
    starts.append((len(queries.captured_queries), len(sent)))
    daily, wall = (queries.captured_queries[a:b] for (a, _), (b, _) in zip(starts[1:3], starts[2:4], strict=True))
    daily_sent = sent[starts[1][1]:starts[2][1]]
    empty = 1 if connection.vendor == "postgresql" else 2
    assert len(daily_sent) <= empty * DAYS + 150, len(daily_sent)  # 150: the 7 batches that fired, their sends
    marks = [q for q in daily_sent if re.search(r'advance_to"? = (?!NULL)', q)]
    assert len(marks) == DAYS, len(marks)
    for way in (daily, wall):
        assert not [q for q in way if "timers_lease" in q["sql"]]
        assert len([q for q in way if 'FROM "timers_testclock"' in q["sql"]]) == 1  # the pin's, as the way begins
    # The outbox's claims and counts: only after the two batches that left a send owed.
    claims = [q for q in daily if "timers_outbox" in q["sql"] and not q["sql"].startswith("INSERT")
              and ("claimed_by" in q["sql"] or "COUNT(" in q["sql"])]
    assert len(claims) <= 10, len(claims)


class _Flaky(transports.RecordingTransport):
    """Raises at its first send: the submission is left in doubt."""

    def send(self, submission_id: str, payload: dict) -> dict:
        if not self.received:
            self.received["raised"] += 1
            raise ConnectionError("far end down")
        return super().send(submission_id, payload)


def test_a_send_left_in_doubt_keeps_a_pinned_clocks_advances_looking(arm, clock, handler):
    handler("t.notice", lambda f: f.send("notices", {"what": f.timer.key}))
    arm("job_2:task:notice:1", T0 + timedelta(days=1), handler="t.notice")
    with transaction.atomic(), lease(clock.id), transports.capture(_Flaky()):
        with pinned(clock.id) as pin:
            with CaptureQueriesContext(connection) as quiet:
                advance(clock.id, T0 + timedelta(hours=1))
            assert not pin.owed and not [q for q in quiet.captured_queries
                                         if "timers_outbox" in q["sql"] and "claimed_by" in q["sql"]]
            advance(clock.id, T0 + timedelta(days=2))
            assert Outbox.objects.filter(domain=clock.id, status="sending").count() == 1
            # Still owed (it is retried after its backoff): the run knows, and every later advance looks again.
            assert pin.owed
            with CaptureQueriesContext(connection) as looked:
                advance(clock.id, T0 + timedelta(days=3))
            assert [q for q in looked.captured_queries if "timers_outbox" in q["sql"]]
        # The last advance's "ready", left to the next advance's mark, is written as the way ends.
        assert TestClock.objects.values_list("status", "advance_to", "frozen_time").get(pk=clock.id) == (
            TestClock.Status.READY, None, T0 + timedelta(days=3))
        transaction.set_rollback(True)


@contextlib.contextmanager
def _sent(monkeypatch) -> Iterator[list[str]]:
    """Every statement the process sends, at the driver (the tick's own psycopg cursors too, which Django's
    CaptureQueriesContext does not see)."""
    sent: list[str] = []
    if connection.vendor == "postgresql":
        import psycopg

        def counting(original):
            def counted(self, query, *args, **kwargs):
                sent.append(str(query))
                return original(self, query, *args, **kwargs)

            return counted

        for name in ("execute", "executemany", "copy"):
            monkeypatch.setattr(psycopg.Cursor, name, counting(getattr(psycopg.Cursor, name)))
        yield sent
        monkeypatch.undo()
        return
    def trace(sql: str) -> None:
        if not sql.startswith("SELECT QUOTE("):  # Django's debug cursor quoting a logged query's parameters
            sent.append(sql)

    connection.ensure_connection()
    connection.connection.set_trace_callback(trace)
    try:
        yield sent
    finally:
        connection.connection.set_trace_callback(None)


def test_an_idle_advance_is_one_round_trip_and_what_the_way_arms_is_seen(arm, brand, clock, handler, monkeypatch):
    fired: list[str] = []

    def later(f) -> None:
        fired.append(f.timer.key)
        if f.timer.key == "job_1:task:first:1":  # a firing arms a timer owed days after its own batch
            f.arm("job_1:task:chained:1", owed_at=f.instant + timedelta(days=3, hours=1), handler="t.later")

    handler("t.later", later)
    arm("job_1:task:first:1", T0 + timedelta(days=2, hours=1), handler="t.later")
    with transaction.atomic(), lease(clock.id), transports.capture(transports.RecordingTransport()):
        with pinned(clock.id) as pin:
            advance(clock.id, T0 + timedelta(days=1))  # the first looks at the outbox (Pinned.owed)
            assert not pin.owed
            with _sent(monkeypatch) as idle:
                stats = advance(clock.id, T0 + timedelta(days=1, hours=12))
            # The mark, the look for anything owed and the frozen time's move: one round trip on PostgreSQL (the
            # look apart on SQLite, in the process); no batch, so no savepoint, fetch or release.
            assert len(idle) == (1 if connection.vendor == "postgresql" else 2), idle
            assert stats.fired == 0 and pin.clock.frozen_time == T0 + timedelta(days=1, hours=12)
            first, direct, chained = "job_1:task:first:1", "job_2:task:direct:1", "job_1:task:chained:1"
            # Each fires in the advance its owed time falls in, not in a later one.
            by_day = {2: [], 3: [first], 4: [first], 5: [first, direct], 6: [first, direct, chained]}
            for day in range(2, 9):
                advance(clock.id, T0 + timedelta(days=day))
                assert fired == by_day.get(day, by_day[6]), (day, fired)
                if day == 4:
                    # The way's own write between its advances (a runtime write, as a receipt's), owed before
                    # anything the way armed itself: the next advance looks, and fires it.
                    timer_arm(brand=brand, key="job_2:task:direct:1", owed_at=T0 + timedelta(days=4, hours=2),
                              domain=clock.id, handler="t.later", runtime=True)
            assert not Timer.objects.filter(domain=clock.id, status="armed").exists()
        assert TestClock.objects.values_list("status", "advance_to", "frozen_time").get(pk=clock.id) == (
            TestClock.Status.READY, None, T0 + timedelta(days=8))
        transaction.set_rollback(True)


def test_a_delivered_send_leaves_the_next_advance_idle(arm, clock, handler, monkeypatch):
    handler("t.notice", lambda f: f.send("notices", {"what": f.timer.key}))
    arm("job_2:task:notice:1", T0 + timedelta(days=1), handler="t.notice")
    with transaction.atomic(), lease(clock.id), transports.capture(transports.RecordingTransport()) as far:
        with pinned(clock.id) as pin:
            with _sent(monkeypatch) as sending:
                advance(clock.id, T0 + timedelta(days=2))
            # The run claimed once, sent, and looked at what is left: nothing is owed, and neither the advance's
            # settle nor the next advance claims or counts anything (each deliver claimed until a claim came back
            # empty, then counted the sends other senders held; the advance's settle did it again).
            claims = [q for q in sending if "timers_outbox" in q and ("pg_stat_activity" in q or "COUNT(" in q
                                                                      or "SET \"status\" = 'sending'" in q)]
            assert len(far.received) == 1 and not pin.owed and len(claims) == 1, claims
            with _sent(monkeypatch) as idle:
                advance(clock.id, T0 + timedelta(days=3))
            assert len(idle) == (1 if connection.vendor == "postgresql" else 2), idle
        transaction.set_rollback(True)


def test_a_turn_at_the_instant_the_last_ran_to_is_one_round_trip_and_sees_an_arming(brand, clock, handler,
                                                                                     monkeypatch):
    fired: list[str] = []
    handler("t.later", lambda f: fired.append(f.timer.key))
    with transaction.atomic(), lease(clock.id), transports.capture(transports.RecordingTransport()):
        with pinned(clock.id) as pin:
            wall = VirtualWallClock(T0 + timedelta(hours=3))
            live_step(wall, domain=clock.id, settle=False)  # the first runs, and looks at the outbox (Pinned.owed)
            assert not pin.owed and pin.clock.frozen_time == wall.now()
            with _sent(monkeypatch) as idle:
                assert live_step(wall, domain=clock.id, settle=False).fired == 0
            assert idle == [idle[0]] and "timers_timer" in idle[0], idle  # the look alone: no batch
            # Armed by the way itself, owed by now: the next turn at the same instant looks, and fires it.
            timer_arm(brand=brand, key="job_2:task:direct:1", owed_at=T0 + timedelta(hours=2), domain=clock.id,
                      handler="t.later")
            assert live_step(wall, domain=clock.id, settle=False).fired == 1 and fired == ["job_2:task:direct:1"]
        transaction.set_rollback(True)
