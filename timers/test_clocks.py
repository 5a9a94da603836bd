"""Test clocks: made, advanced (by asking the worker), and deleted, as Stripe's test clocks are."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from . import outbox, quotas
from .clock import wall_now
from .errors import KeepingTimeError, NotFound, TestClockAdvancing, TestClockBackward
from .ids import SEED_PATTERN, SEED_RE
from .lease import lease
from .models import Brand, Event, TestClock, Timer
from .signals import test_clock_deleted
from .sql import tallies
from .timeutil import iso_z
from .wakes import notify_workers


def test_clock_create(*, brand: Brand, frozen_time: datetime, name: str = "", seed: str = "") -> TestClock:
    """A test clock; with a ``seed``, the ids minted on it derive from the seed instead of its random id, so
    the same scenario on a clock of the same seed (another load, another database) makes the same record."""
    seed = seed or ""
    if seed:
        _check_seed(seed, brand)
    try:
        with transaction.atomic():
            quotas.count_within(brand_id=brand.pk, livemode=False, quota="test_clocks", what="test clocks",
                                count=TestClock.objects.filter(brand=brand).exclude(status__in=TestClock.GONE).count)
            return TestClock.objects.create(brand=brand, frozen_time=frozen_time, name=name, seed=seed,
                                            created_at=wall_now())
    except IntegrityError:
        # Two creates raced past the check: the constraint (test_clock_seed_once) refused the second.
        if seed and TestClock.objects.filter(seed=seed).exists():
            raise _seed_taken(seed, brand) from None
        raise


def _check_seed(seed: str, brand: Brand) -> None:
    if not SEED_RE.fullmatch(seed):
        raise KeepingTimeError(f"seed {seed[:80]!r} does not match {SEED_PATTERN}: up to 64 letters, digits and "
                               "_ . : -, and neither \"live\" nor tc_… (they name clock domains)", code="invalid_seed")
    if TestClock.objects.filter(seed=seed).exists():
        raise _seed_taken(seed, brand)


def _seed_taken(seed: str, brand: Brand) -> KeepingTimeError:
    # Seeds are one namespace across brands (ids are), but another brand's clock is never named.
    mine = TestClock.objects.filter(seed=seed, brand=brand).values_list("id", "status").first()
    held = f"test clock {mine[0]} ({mine[1]})" if mine else "another test clock"
    # A deleted clock keeps its timers and record, whose ids came from the seed: it holds the seed too.
    return KeepingTimeError(f"seed {seed!r} is held by {held}; ids minted from it would collide. Pick another "
                            "seed, or remove that clock's load first (loadexample replaces its own)",
                            code="test_clock_seed_taken", status=409)


def test_clock_get(*, clock_id: str, brand: Brand | None = None) -> TestClock:
    qs = TestClock.objects.exclude(status__in=TestClock.GONE)
    if brand is not None:
        qs = qs.filter(brand=brand)
    clock = qs.filter(pk=clock_id).first()
    if clock is None:
        raise NotFound(f"no test clock {clock_id!r}")
    return clock


DEFAULT_TEST_CLOCK = "default"


def test_clock_default(*, brand: Brand) -> TestClock:
    """The brand's default test clock, which ``default`` names where a test clock id goes (POST
    /test_clocks/default/advance, as the seed's example calls it): its first test clock that is not deleted
    (``loadexample`` makes the example's). A brand with none has no default yet: 404, saying how to make one."""
    clock = (TestClock.objects.exclude(status__in=TestClock.GONE).filter(brand=brand)
             .order_by("created_at", "id").first())
    if clock is None:
        raise NotFound("no test clock 'default': the brand has no test clock yet; POST /test_clocks "
                       '{"frozen_time": …} creates one, and its first one is its default')
    return clock


def backward_message(clock: TestClock, to: datetime) -> str:
    return (
        f"test clock {clock.id} is at {iso_z(clock.frozen_time)} and moves only forward; {iso_z(to)} is before it. "
        f'To start there, create a clock: POST /test_clocks {{"frozen_time": "{iso_z(to)}"}}'
    )


def test_clock_request_advance(*, clock: TestClock, to: datetime, redeliver: bool = False) -> TestClock:
    """Ask the worker to advance the clock (202 advancing); the worker fires and then marks it ready."""
    with transaction.atomic():
        clock = TestClock.objects.select_for_update().get(pk=clock.pk)
        if clock.status in TestClock.GONE:
            raise NotFound(f"no test clock {clock.id!r}")
        if clock.status == TestClock.Status.ADVANCING:
            raise TestClockAdvancing(
                f"test clock {clock.id} is already advancing to {iso_z(clock.advance_to)}; wait for test_clock.ready"
            )
        if to < clock.frozen_time:
            raise TestClockBackward(backward_message(clock, to))
        quotas.advance_within(clock.frozen_time, to)
        clock.status = TestClock.Status.ADVANCING
        clock.advance_to = to
        clock.redeliver = redeliver
        clock.failure = ""
        clock.save(update_fields=["status", "advance_to", "redeliver", "failure"])
        transaction.on_commit(lambda: notify_workers(clock.id))
    return clock


def test_clock_delete(*, clock: TestClock) -> TestClock:
    """Void everything on the clock: armed and held timers are superseded by the deletion.

    The clock is marked first, so an advance running on it stops at its next batch; the voiding then
    happens under the clock's lease, after that advance has let go. Nothing lands after
    ``test_clock.deleted``.
    """
    marked = TestClock.objects.filter(pk=clock.pk).exclude(status__in=TestClock.GONE).update(
        status=TestClock.Status.DELETING, advance_to=None)
    if not marked and not TestClock.objects.filter(pk=clock.pk, status=TestClock.Status.DELETING).exists():
        raise NotFound(f"no test clock {clock.id!r}")
    with lease(clock.id):
        test_clock_finish_delete(clock_id=clock.id)
    clock.refresh_from_db()
    return clock


def test_clock_finish_delete(*, clock_id: str) -> bool:
    """The voiding half of a delete; the caller holds the clock's lease. Idempotent: False if done."""
    with transaction.atomic():
        clock = TestClock.objects.select_for_update().filter(pk=clock_id, status=TestClock.Status.DELETING).first()
        if clock is None:
            return False
        Timer.objects.filter(domain=clock.id, status__in=["armed", "held"]).update(
            status="superseded", by="test_clock.deleted", owed_at=None, held_since=None, remaining=None,
            held_by="", moved_at=Now(),  # its month of history (timers/history.py)
        )
        voided = Timer.objects.filter(domain=clock.id, by="test_clock.deleted").count()
        sends = outbox.void(clock.id)
        clock.status = TestClock.Status.DELETED
        clock.advance_to = None
        clock.save(update_fields=["status", "advance_to"])
        fire_tally_retire(domains=[clock.id])
        Event.objects.create(domain=clock.id, brand_id=clock.brand_id, type="test_clock.deleted", subject=clock.id,
                             owed_at=clock.frozen_time, data={"timers_voided": voided, "sends_voided": sends},
                             fired_at=clock.frozen_time)
        test_clock_deleted.send(sender=TestClock, clock=clock)
    return True


def fire_tally_retire(*, domains: list[str]) -> None:
    """Fold the fire tally of test clocks that are gone into one set of rows (``FireTally.RETIRED``): /metrics'
    counters keep every fire they counted, and a scrape reads rows per live domain, not per clock ever made.
    Rows are taken in key order, so two retirements at once lock them in the same order."""
    if domains:
        tallies.retire(domains)


# Service functions named test_clock_* are not pytest tests when a test module imports them.
for _fn in (test_clock_create, test_clock_get, test_clock_request_advance, test_clock_delete,
            test_clock_finish_delete):
    _fn.__test__ = False  # type: ignore[union-attr]  # a function takes attributes; its type does not say so
