"""A live turn's lease take and release commit without waiting for a WAL flush when they are their own
transaction (one prepared statement each, issue 39), a take gives up on a row a batch holds after its lock
timeout, and both leave an outer transaction's settings as they were (issue 26: two flushes a turn)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from timers import lease as leases

pytestmark = [
    pytest.mark.postgresql("synchronous_commit: PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]


BATCH_SECONDS = 5.0  # how long the held batch keeps the lease's row locked, at most


def _show(name: str) -> str:
    with connection.cursor() as cur:
        cur.execute(f"SHOW {name}")
        return cur.fetchone()[0]


def test_a_take_and_a_release_of_their_own_commit_without_a_flush(db):
    with CaptureQueriesContext(connection) as q:
        held = leases.take("live_flush")
        held.release()
    sql = [x["sql"] for x in q.captured_queries]
    # Each one statement that is its own transaction, its setting local to it.
    assert sum("set_config('synchronous_commit', 'off', true)" in s for s in sql) == 2, sql
    assert not any(s in ("BEGIN", "COMMIT") for s in sql), sql
    assert _show("synchronous_commit") == "on" and _show("lock_timeout") == "0"  # SET LOCAL: gone at the commit


def test_a_take_inside_an_outer_transaction_leaves_its_flush_and_lock_timeout_as_they_were(db):
    with transaction.atomic():
        held = leases.take("live_flush_outer")
        assert held is not None
        assert _show("synchronous_commit") == "on" and _show("lock_timeout") == "0"
        held.release()
        assert _show("synchronous_commit") == "on"


def test_a_take_of_its_own_gives_up_on_a_lease_row_a_batch_holds_within_its_lock_timeout(db):
    held = leases.take("live_flush_locked", as_holder="w1")
    got: list[object] = []
    took: list[float] = []
    with transaction.atomic():
        assert held.fence()  # a batch begins: the lease's row is locked until it commits

        def taker() -> None:
            started = time.monotonic()
            try:
                got.append(leases.take("live_flush_locked", as_holder="w2", look=False))
            finally:
                took.append(time.monotonic() - started)
                connection.close()

        t = threading.Thread(target=taker)
        t.start()
        t.join(BATCH_SECONDS)
        assert not t.is_alive(), "the take waited on the batch's lock past its lock timeout"
    assert got == [None] and took[0] < 2.0  # the set_config's 200 ms, not the batch's length
    assert _show("lock_timeout") == "0"
