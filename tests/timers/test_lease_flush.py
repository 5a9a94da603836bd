"""A live turn's lease take and release commit without waiting for a WAL flush when they are their own
transaction, and leave an outer transaction's settings as they were (issue 26: two flushes a turn)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from timers import lease as leases

pytestmark = [
    pytest.mark.postgresql("synchronous_commit: PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]


def _show(name: str) -> str:
    with connection.cursor() as cur:
        cur.execute(f"SHOW {name}")
        return cur.fetchone()[0]


def test_a_take_and_a_release_of_their_own_commit_without_a_flush(db):
    with CaptureQueriesContext(connection) as q:
        held = leases.take("live_flush")
        held.release()
    sql = [x["sql"] for x in q.captured_queries]
    assert sum("synchronous_commit = off" in s for s in sql) == 2  # the take's transaction and the release's
    assert _show("synchronous_commit") == "on" and _show("lock_timeout") == "0"  # SET LOCAL: gone at the commit


def test_a_take_inside_an_outer_transaction_leaves_its_flush_and_lock_timeout_as_they_were(db):
    with transaction.atomic():
        held = leases.take("live_flush_outer")
        assert held is not None
        assert _show("synchronous_commit") == "on" and _show("lock_timeout") == "0"
        held.release()
        assert _show("synchronous_commit") == "on"
