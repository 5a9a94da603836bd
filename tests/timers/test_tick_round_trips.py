"""A batch of a few timers (the live tick's timers coming due one by one, KT_ADVANCE_BATCH_SIZE=1) pays per
statement and per round trip to the server, not per row: its guard and its claim go in one pipeline, its writes,
its webhook endpoints' read and the clock's new position in one statement of another, each prepared once per
connection and planned once (the claim's limit written in). The round trips and statements are counted on the wire
(libpq's trace of the connection), per batch, on a test clock and on a brand's live clock, and a failed pipelined
write still loses its batch whole (PostgreSQL only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection

from tests.support.wire import statements as _statements
from tests.support.wire import traced as _traced
from timers.advance import advance
from timers.arming import timer_arm
from timers.clock import FrozenClock
from timers.live import live_step
from timers.models import Commit, Event, TestClock, Timer
from timers.test_clocks import test_clock_create

pytestmark = [pytest.mark.postgresql("round trips and pipelines are PostgreSQL's"), pytest.mark.django_db]

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _arm(brand, clock_id: str, n: int, tag: str) -> None:
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{tag}{i}:deadline:soon:1", owed_at=T0 - timedelta(minutes=n - i),
                  domain=clock_id, handler="noop")


def _round_trips(brand, n: int, tag: str, count=_traced) -> tuple[int, int]:
    """(round trips, batches) of an advance over ``n`` owed timers (``count``: what is counted on the wire)."""
    clock = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name=tag)
    _arm(brand, clock.id, n, tag)
    trips, stats = count(lambda: advance(clock.id, T0))
    assert stats.fired == n
    return trips, stats.batches


def _live_round_trips(brand, n: int, tag: str, now: datetime, count=_traced) -> tuple[int, int]:
    """(round trips, batches) of a live step over ``n`` timers owed on the brand's live clock."""
    for i in range(n):
        timer_arm(brand=brand, key=f"job_{tag}{i}:deadline:soon:1", owed_at=now - timedelta(seconds=n - i),
                  handler="noop")
    trips, stats = count(lambda: live_step(FrozenClock(now), domain=f"live_{brand.id}", settle=False))
    assert stats.fired == n
    return trips, stats.batches


def _per_batch(brand, count) -> tuple[float, float]:
    """What ``count`` counts per batch of one timer: (an advance's, a live turn's)."""
    few, few_batches = _round_trips(brand, 3, "few", count)
    more, more_batches = _round_trips(brand, 15, "more", count)
    advancing = (more - few) / (more_batches - few_batches)
    now = datetime.now(UTC)
    few, few_batches = _live_round_trips(brand, 2, "lfew", now, count)
    more, more_batches = _live_round_trips(brand, 12, "lmore", now + timedelta(seconds=1), count)
    return advancing, (more - few) / (more_batches - few_batches)


def test_a_batch_of_one_timer_costs_four_round_trips(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1, "BATCH_SIZE": 1}
    advancing, live = _per_batch(brand, _traced)
    # BEGIN, the guard (fence and the clock's row) with the claim (one pipeline), the writes with the frozen time
    # (one pipeline), COMMIT. Each statement on its own, with two for each COPY, was 13; the frozen time apart, 6;
    # the claim apart from the guard, 5.
    assert advancing <= 4, advancing
    # The live tick's batch: BEGIN, the fence with the claim, the writes with the clock's position, COMMIT.
    assert live <= 4, live


def test_a_batch_of_one_timer_runs_five_statements(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1, "BATCH_SIZE": 1}
    advancing, live = _per_batch(brand, _statements)
    # BEGIN, the guard, the claim, the writes (the frozen time one more WITH of their statement), COMMIT. The frozen
    # time's move as a statement of its own was a sixth, on the client and on the server.
    assert advancing <= 5, advancing
    assert live <= 5, live  # the live clock's position likewise


def test_a_batch_of_one_timers_claim_is_planned_once(brand, settings):
    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1, "BATCH_SIZE": 1}
    clock = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name="planned")
    _arm(brand, clock.id, 20, "planned")
    # A domain the statistics know holds thousands of armed timers (owed after the advance's end), as a bench's or
    # a busy brand's does: the planner's estimate for a limit it cannot see is a tenth of them.
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO timers_timer (id, domain, brand_id, key, owner, kind, place, handler, status, owed_at,
                   opened_at, armed_at, attempt, wakes, version, superseded_by, by, held_by, armed_by, tick_pass, data)
               SELECT 'tmr_later' || g, %s, %s, 'job_later' || g || ':deadline:soon:1', 'job_later' || g, 'deadline', 5,
                      'noop', 'armed', %s, %s, %s, 0, 0, '', '', '', '', '', 1, '{}'
               FROM generate_series(1, 5000) g""", [clock.id, brand.id, T0 + timedelta(days=1), T0, T0])
        cur.execute("ANALYZE timers_timer")
    assert advance(clock.id, T0).batches == 21
    with connection.cursor() as cur:
        cur.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                    "WHERE statement LIKE 'SELECT %%FROM timers_timer WHERE domain = $1 AND status = ''armed''%%'")
        plans = cur.fetchall()
    # The claim with its limit a parameter was planned at each of the 21 executions (custom plans: its generic plan
    # was costed at a tenth of the armed rows); with the limit written in, after the planner's first five, never.
    assert plans and all(custom <= 5 for _, custom in plans), plans
    assert sum(generic for generic, _ in plans) >= 15, plans


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


def test_a_slices_last_guard_claims_nothing(brand, settings, monkeypatch):
    """An advance the API asked for runs in slices: the batch whose guard finds the slice over stops before its
    claim is sent (the claim goes in the guard's pipeline, and was read whole and thrown away at every slice's end)."""
    from timers import store

    settings.KEEPING_TIME = {**settings.KEEPING_TIME, "ADVANCE_BATCH_SIZE": 1}
    clock = test_clock_create(brand=brand, frozen_time=T0 - timedelta(hours=1), name="sliced")
    _arm(brand, clock.id, 4, "sliced")
    TestClock.objects.filter(pk=clock.id).update(status=TestClock.Status.ADVANCING, advance_to=T0)  # as requested
    fetch_sent, claims = store.PostgresStore.fetch_sent, []

    def counted(self, *a, **k):
        claims.append(a)
        return fetch_sent(self, *a, **k)

    monkeypatch.setattr(store.PostgresStore, "fetch_sent", counted)
    stats = advance(clock.id, T0, slice_seconds=1e-9)  # over as soon as the first batch has run
    assert stats.sliced and stats.fired == 1
    assert len(claims) == stats.batches == 1
    assert Timer.objects.filter(domain=clock.id, status="armed").count() == 3
