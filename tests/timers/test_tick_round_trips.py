"""A batch of a few timers (the live tick's timers coming due one by one, KT_ADVANCE_BATCH_SIZE=1) pays per
statement and per round trip to the server, not per row: its guard is one statement, its writes, its webhook
endpoints' read and the clock's new position go in one pipeline, prepared once per connection. The round trips
are counted on the wire (libpq's trace of the connection), per batch, on a test clock and on a brand's live
clock, and a failed pipelined write still loses its batch whole (PostgreSQL only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.support.wire import traced as _traced
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import FrozenClock
from timers.live import live_step
from timers.models import Commit, Event, Timer
from timers.test_clocks import test_clock_create

pytestmark = [pytest.mark.postgresql("round trips and pipelines are PostgreSQL's"), pytest.mark.django_db]

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _arm(brand, clock_id: str, n: int, tag: str) -> None:
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{tag}{i}:deadline:soon:1", owed_at=T0 - timedelta(minutes=n - i),
                  domain=clock_id, handler="noop")


def _round_trips(brand, n: int, tag: str) -> tuple[int, int]:
    """(round trips, batches) of an advance over ``n`` owed timers."""
    clock = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name=tag)
    _arm(brand, clock.id, n, tag)
    trips, stats = _traced(lambda: advance(clock.id, T0))
    assert stats.fired == n
    return trips, stats.batches


def _live_round_trips(brand, n: int, tag: str, now: datetime) -> tuple[int, int]:
    """(round trips, batches) of a live step over ``n`` timers owed on the brand's live clock."""
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{tag}{i}:deadline:soon:1", owed_at=now - timedelta(seconds=n - i),
                  handler="noop")
    trips, stats = _traced(lambda: live_step(FrozenClock(now), domain=f"live_{brand.id}", settle=False))
    assert stats.fired == n
    return trips, stats.batches


def test_a_batch_of_one_timer_costs_five_round_trips(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1, "BATCH_SIZE": 1}
    few, few_batches = _round_trips(brand, 3, "few")
    more, more_batches = _round_trips(brand, 9, "more")
    per_batch = (more - few) / (more_batches - few_batches)
    # BEGIN, the guard (fence and the clock's row), the claim, the writes with the frozen time (one pipeline),
    # COMMIT. Each statement on its own, with two for each COPY, was 13; the frozen time apart, 6.
    assert per_batch <= 5, per_batch
    # The live tick's batch: BEGIN, the fence, the claim, the writes with the clock's position, COMMIT.
    now = datetime.now(UTC)
    few, few_batches = _live_round_trips(brand, 2, "lfew", now)
    more, more_batches = _live_round_trips(brand, 6, "lmore", now + timedelta(seconds=1))
    per_batch = (more - few) / (more_batches - few_batches)
    assert per_batch <= 5, per_batch


def test_a_batch_of_one_timer_is_fired_and_recorded_as_a_big_one_is(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1}
    one = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name="one")
    _arm(brand, one.id, 5, "one")
    advance(one.id, T0)
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 8000}
    big = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name="big")
    _arm(brand, big.id, 5, "one")
    advance(big.id, T0)

    def seen(domain: str) -> list:
        return [list(Event.objects.filter(domain=domain).order_by("seq").values_list("type", "subject", "owed_at",
                                                                                    "key", "data", "late_by")),
                list(Timer.objects.filter(domain=domain).order_by("key").values_list(
                    "key", "status", "fired_at", "attempt", "wakes", "tick_pass")),
                list(Commit.objects.filter(domain=domain).order_by("key").values_list("key", "outcome", "at"))]

    assert seen(one.id) == seen(big.id)
    assert len(seen(one.id)[0]) == 5


def test_a_pipelined_write_that_fails_loses_its_batch_whole(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1}
    clock = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name="fails")
    _arm(brand, clock.id, 3, "fails")
    # The second timer's key already has a commit: the batch's insert of its commit is refused.
    second = Timer.objects.filter(domain=clock.id).order_by("owed_at")[1]
    Commit.objects.create(id="cmt_planted", domain=clock.id, key=second.key, timer_id=second.id,
                          outcome="committed", code="", at=T0)
    with pytest.raises(psycopg.errors.UniqueViolation):
        advance(clock.id, T0)
    statuses = dict(Timer.objects.filter(domain=clock.id).values_list("key", "status"))
    assert statuses[second.key] == "armed"  # its batch wrote nothing: the timer, its event, its frozen time
    assert sorted(statuses.values()) == ["armed", "armed", "fired"]
    assert Event.objects.filter(domain=clock.id, key=second.key).count() == 0
    clock.refresh_from_db()
    assert clock.frozen_time < second.owed_at
    assert Timer.objects.filter(domain=clock.id).count() == 3  # the connection is usable after the failed pipeline
