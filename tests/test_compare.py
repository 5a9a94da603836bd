"""`tick --compare` (timers/compare.py): its ways share one transaction and one take of the clock's lease, and
leave nothing behind."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import T0
from timers.compare import compare
from timers.models import Lease, LeaseTerm, Timer


def test_the_ways_take_the_clock_lease_once_and_leave_nothing(arm, clock):
    arm("job_1:ask:a:1", "2026-12-24T14:00Z", handler="repeat", data={"every": {"days": 7}, "count": 10})
    leases, terms = Lease.objects.count(), LeaseTerm.objects.count()
    with CaptureQueriesContext(connection) as queries:
        ways = compare(clock.id, T0 + timedelta(days=60), redeliver=True)
    assert len(ways) == 4 and len({w.sha256 for w in ways}) == 1 and ways[0].events == 5
    # Each way's advances (60 of them for the daily way) and the live loop's turns re-enter the one take.
    takes = [q for q in queries.captured_queries if "INSERT INTO timers_leaseterm" in q["sql"]]
    assert len(takes) == 1, len(takes)
    assert Lease.objects.count() == leases and LeaseTerm.objects.count() == terms
    assert not Timer.objects.filter(domain=clock.id, status="fired").exists()
