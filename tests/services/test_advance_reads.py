"""What the Tax Plan's year reads, an advance of many batches: a subscriber's rows its clocks' handlers ask for are
read once the advance, not once a batch (with K subscribers a batch holds a share of each one's year, and a read
once a batch made the statements a fire grow with K)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.acme import tax_plan_subscribers
from timers.advance import advance, observing_flushes
from timers.test_clocks import test_clock_create

START = datetime(2027, 1, 20, 14, tzinfo=UTC)


@pytest.fixture
def small_batches(settings, monkeypatch):
    # Batches of 40 timers, kept from batch to batch (the runtime keeps them only from 500 a batch).
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 40}
    monkeypatch.setattr("timers.advance.CARRY_MIN_BATCH", 1)


def test_a_subscribers_contacts_are_read_once_a_year_of_many_batches(brand, small_batches):
    clock = test_clock_create(brand=brand, frozen_time=START)
    tax_plan_subscribers(brand, clock, 2)
    flushes = []
    with CaptureQueriesContext(connection) as queries, observing_flushes(lambda _clock, at: flushes.append(at)):
        advance(clock.id, datetime(2028, 1, 20, 14, tzinfo=UTC))
    assert len(flushes) >= 5
    contacts = [q["sql"] for q in queries if 'FROM "calendars_contact"' in q["sql"]]
    # Each subscriber's in batches 1 and 2 (the run keeps rows from its second batch on: tests/timers/test_carry.py),
    # none after.
    assert len(contacts) <= 2 * 2, f"{len(contacts)} reads of the contacts in {len(flushes)} batches"
