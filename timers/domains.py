"""A clock domain's facts: what its ids derive from, its "now", and whether it takes a write now.

A clock domain is a brand's live clock (``live_<brand>``) or one test clock (``tc_…``). Domain code asks its
domain for "now" here, never the wall: the live domain reads the wall clock, a test clock is frozen.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import F

from .clock import wall_now
from .errors import NotFound, TestClockAdvancing, TestClockDeleted
from .ids import is_live, new_id
from .models import TestClock
from .sql.clocks import share_clock

_seeds: dict[str, str] = {}
_SEEDS_KEPT = 4096  # a worker visits many clocks over its life; the cache stays small


def domain_seed(domain: str) -> str:
    """What ids minted in ``domain`` derive from: a live domain's own id (live_<brand>); a test clock's
    seed, or its id when it has none. Cached per process: a clock's seed is set at its creation and never
    changes."""
    if is_live(domain):
        return domain
    seed = _seeds.get(domain)
    if seed is None:
        row = TestClock.objects.filter(pk=domain).values_list("seed", flat=True).first()
        if row is None:
            return domain  # not a clock (yet): nothing to remember, the next call asks again
        if len(_seeds) >= _SEEDS_KEPT:
            _seeds.clear()
        seed = _seeds[domain] = row or domain
    return seed


def domain_id(prefix: str, domain: str, *parts: str, length: int = 14) -> str:
    """An id minted inside ``domain``, derived from the domain's seed and ``parts`` (what the id names)."""
    return new_id(prefix, seed="|".join((domain_seed(domain), *parts)), length=length)


def domain_writable(*, domain: str, runtime: bool = False) -> datetime:
    """The domain's now for a write outside the tick, refused on a deleted (or deleting) test clock
    (``409 test_clock_deleted``): its objects take no writes, so nothing lands after ``test_clock.deleted``.
    While a test clock advances its objects take no outside writes either (``409 test_clock_advancing``, as
    Stripe's test clocks): what an advance fires never interleaves with an outside act. ``runtime`` is the
    runtime's own write during an advance (a send's receipt heard after the batch that sent it).

    On PostgreSQL inside a transaction the clock's row is read FOR SHARE: a delete that marks the clock after
    this read waits until the write commits (and then voids what it wrote), and a write after the mark sees
    it. An advance's batch, which holds the row, is waited for the same way."""
    if is_live(domain):
        return wall_now()
    share_clock(domain)
    row = TestClock.objects.filter(pk=domain).values_list("status", "frozen_time").first()
    if row is None:
        raise NotFound(f"no test clock {domain!r}")
    if row[0] in TestClock.GONE:
        raise TestClockDeleted(f"test clock {domain} was deleted: its objects take no writes")
    if row[0] == TestClock.Status.ADVANCING:
        if not runtime:
            raise TestClockAdvancing(f"test clock {domain} is advancing: its objects take writes again once it is "
                                     "ready (test_clock.ready)")
        # The advance may keep the clock's rows from batch to batch: this write tells it they may have changed.
        TestClock.objects.filter(pk=domain).update(runtime_writes=F("runtime_writes") + 1)
    return row[1]


def domain_now(*, domain: str) -> datetime:
    """The clock domain's "now": a test clock's frozen time, or the wall's for a brand's live clock."""
    if is_live(domain):
        return wall_now()
    return TestClock.objects.values_list("frozen_time", flat=True).get(pk=domain)
