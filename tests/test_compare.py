"""`tick --compare` (timers/compare.py): its ways share one transaction and one take of the clock's lease, and
leave nothing behind; an advance inside a way asks the database only for its own work (timers/worker.py's
Pinned)."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.conftest import T0
from timers import outbox
from timers.compare import compare
from timers.lease import lease
from timers.models import Lease, LeaseTerm, Outbox, TestClock, Timer
from timers.worker import advance, pinned

DAYS = 60


def _write_a_send(f) -> None:
    """A send written to the outbox by the handler itself (as calendars' actions do), not queued by the run."""
    Outbox.objects.create(id=f"sub_direct_{f.timer.id}", domain=f.run.domain, brand_id=f.timer.brand_id,
                          key=f.timer.key, attempt=1, transport="notices", payload={}, created_at=f.instant)


def test_the_ways_take_the_clock_lease_once_and_leave_nothing(arm, clock, handler):
    arm("job_1:ask:a:1", "2026-12-24T14:00Z", handler="repeat", data={"every": {"days": 7}, "count": 10})
    handler("t.notice", lambda f: f.send("notices", {"what": f.timer.key}))
    handler("t.direct", _write_a_send)
    arm("job_2:task:notice:1", T0 + timedelta(days=20, hours=3), handler="t.notice")
    arm("job_2:task:direct:1", T0 + timedelta(days=40, hours=3), handler="t.direct")
    leases, terms = Lease.objects.count(), LeaseTerm.objects.count()
    starts: list[int] = []
    with CaptureQueriesContext(connection) as queries:
        ways = compare(clock.id, T0 + timedelta(days=DAYS), redeliver=True,
                       on_way=lambda i, n, label: starts.append(len(queries.captured_queries)))
    assert len(ways) == 4 and len({w.sha256 for w in ways}) == 1 and ways[0].events == 5 and ways[0].fired == 7
    # Every way sent both, the one the run queued and the one the handler wrote.
    assert [w.sent for w in ways] == [2, 2, 2, 2] and ways[3].sent_twice == 0
    # Each way's advances (60 of them for the daily way) and the live loop's turns re-enter the one take.
    takes = [q for q in queries.captured_queries if "INSERT INTO timers_leaseterm" in q["sql"]]
    assert len(takes) == 1, len(takes)
    assert Lease.objects.count() == leases and LeaseTerm.objects.count() == terms
    assert not Timer.objects.filter(domain=clock.id, status="fired").exists()

    # Inside a way the lease's fence, the clock's row and the outbox (where nothing is owed) are known: an
    # advance sends its batch's savepoint and release, its clock's mark (with the last advance's "ready"), its
    # fetch and the frozen time's move with the look at the outbox (both around Django's cursor on PostgreSQL;
    # the look apart on SQLite), and its firings' writes. The daily way still advances day by day, each day
    # marked, and the live loop still runs its turns. (Before, the daily way was 613 statements through
    # Django's cursor on PostgreSQL and 1,083 on SQLite.)
    starts.append(len(queries.captured_queries))
    daily, wall = (queries.captured_queries[a:b] for a, b in zip(starts[1:3], starts[2:4], strict=True))
    empty = 3 if connection.vendor == "postgresql" else 6
    assert len(daily) <= empty * DAYS + 90, len(daily)  # 90: the 7 batches that fired, their writes and sends
    marks = [q for q in daily if q["sql"].startswith('UPDATE "timers_testclock"') and '"advance_to" = \'' in q["sql"]]
    assert len(marks) == DAYS, len(marks)
    for way in (daily, wall):
        assert not [q for q in way if "timers_lease" in q["sql"]]
        assert len([q for q in way if 'FROM "timers_testclock"' in q["sql"]]) == 1  # the pin's, as the way begins
    # The outbox's claims and counts: only after the two batches that left a send owed.
    claims = [q for q in daily if "timers_outbox" in q["sql"] and not q["sql"].startswith("INSERT")
              and ("claimed_by" in q["sql"] or "COUNT(" in q["sql"])]
    assert len(claims) <= 10, len(claims)


class _Flaky(outbox.RecordingTransport):
    """Raises at its first send: the submission is left in doubt."""

    def send(self, submission_id: str, payload: dict) -> dict:
        if not self.received:
            self.received["raised"] += 1
            raise ConnectionError("far end down")
        return super().send(submission_id, payload)


def test_a_send_left_in_doubt_keeps_a_pinned_clocks_advances_looking(arm, clock, handler):
    handler("t.notice", lambda f: f.send("notices", {"what": f.timer.key}))
    arm("job_2:task:notice:1", T0 + timedelta(days=1), handler="t.notice")
    with transaction.atomic(), lease(clock.id), outbox.capture(_Flaky()):
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
