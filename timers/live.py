"""The brands' live clocks: each is its own clock domain (live_<brand id>), run to the wall's now in turns.

A turn fires what is owed now on one live domain under its lease, a few batches at most (``turn_batches``), so
one brand's backlog never holds another's owed timers back; the worker loop (timers/worker.py) gives each owed
domain its turn. A domain stays with the worker that ran its last turn for a moment (``affinity``), so many
workers do not all wake for one domain's instant. ``live_step`` is a one-shot `tick`'s: every live clock to now.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from . import outbox
from .advance import (
    Guard,
    clock_deleted,
    deliver_batch,
    execute_run,
    flush_frozen,
    lease_lost,
    pinned_on,
    reread,
)
from .clock import Clock
from .engine import Run, RunStats
from .lease import Held, lease
from .models import LIVE, LiveClock, Timer, is_live
from .sql import clocks
from .store import get_store


def turn_batches() -> int:
    """How many batches a live domain runs in its turn before the loop moves on to the next owed domain."""
    return int(settings.KEEPING_TIME.get("LIVE_TURN_BATCHES", 1))


def live_domains() -> list[str]:
    """Every brand's live clock that has ever had a timer (a LiveClock row each, made on arming)."""
    return list(LiveClock.objects.order_by("id").values_list("id", flat=True))


def owed_domains(now: datetime) -> list[tuple[str, datetime]]:
    """The live domains with a timer owed at ``now``, earliest owed first: one statement, an index probe each."""
    return [(d, nxt) for d, nxt, *_ in live_next(now)]


def live_next(now: datetime | None = None) -> list[clocks.LiveNext]:
    """Each live domain's next owed instant (owed at ``now``, if given), the holder of its last lease and its
    position, earliest owed first: one statement, an index probe each."""
    return clocks.live_next(now)


def affinity() -> timedelta:
    """How long a live domain stays the worker's that ran its last turn: another worker takes what is owed there
    only once it is this late (``KEEPING_TIME["LIVE_AFFINITY_SECONDS"]``)."""
    return timedelta(seconds=float(settings.KEEPING_TIME.get("LIVE_AFFINITY_SECONDS", 1.0)))


def live_step(clock: Clock, *, domain: str | None = None, trace: bool = False, on: set[str] | None = None,
              settle: bool = True) -> RunStats:
    """Fire what is owed now on a live-style domain: the wall clock's (or a virtual wall's) now. With no
    ``domain``, on every brand's live clock, one after another (a one-shot `tick`).

    With ``settle`` (a one-shot `tick`), it returns once every send owed has been made, has failed or is
    in doubt with its reason; the worker loop delivers after each step instead of waiting on others.
    """
    if domain is None:
        total = RunStats(domain=LIVE, start=None, to=clock.now())
        for d in live_domains():
            total.add(live_step(clock, domain=d, trace=trace, on=on, settle=settle))
        return total
    with lease(domain) as held:
        stats = turn(clock, domain, held, trace=trace, on=on)
        pin = pinned_on(domain)
        if pin is None or pin.owed:
            stats.add_sends(outbox.settle(domain) if settle else outbox.deliver(domain))
        return stats


def turn(clock: Clock, domain: str, held: Held, *, trace: bool = False, on: set[str] | None = None,
         batches: int | None = None, position: tuple[datetime | None] | None = None) -> RunStats:
    """Run ``domain`` to now under ``held``; with ``batches``, stop after that many (``stopped``: more is owed).
    ``position``: the live clock's position as the caller read it while ``held`` was already its (a lease
    kept from the turn before: nobody else could move it since), a one-tuple; else it is read here."""
    now = clock.now()
    pin = pinned_on(domain)
    floor: datetime | None
    if pin is not None:
        pin.write_ready()
        floor = pin.clock.frozen_time
        # A turn at the instant the last one ran to (the live loop's look again after one that fired) finds only
        # what was armed since: looked for in one statement. After the wall moved the turn runs: the loop sleeps
        # until something is owed.
        if not pin.owed and floor >= now and pin.idle(now, mark=False):
            return RunStats(domain=domain, start=floor, to=now)
    elif position is not None:
        floor = position[0]
    else:
        floor = clocks.position(domain)
    guard = Guard(held, batches=batches, clock_id=None if is_live(domain) else domain, pinned=pin is not None)
    flushed: list[datetime] = []  # the position the run's batches wrote, last last (in their transactions)

    def flush(at: datetime) -> None:
        _set_position(domain, at)
        flushed.append(at)

    def run(keep_writes: bool, floor: datetime | None) -> Run:
        flushed.clear()  # a run again after a kept write failed: the first run's batch was rolled back
        return Run(domain=domain, floor=floor, to=now, store=get_store(), now=clock.now, trace=trace, on=on,
                   on_flush=flush, deliver=lambda taken: deliver_batch(domain, taken),
                   guard=guard, keep_writes=keep_writes)

    stats = execute_run(domain, run, floor, lambda: reread(domain, pin))
    if stats.stopped:
        if guard.why == "lease":
            raise lease_lost(domain, held)
        if guard.why == "deleted":
            raise clock_deleted(domain)
        return stats  # the turn is over; the rest stays owed, from the position the last batch wrote
    if pin is not None:
        if pin.clock.frozen_time < now:  # else the last flush wrote ``now``; no fence either (Pinned)
            _set_position(domain, now)
        return stats
    if flushed and flushed[-1] == now:
        # The last batch ran to now and wrote it, fenced, in its own transaction: a transaction more to write it
        # again was a fence, a position and a commit's WAL flush on every live turn that fired (issue 39).
        return stats
    with transaction.atomic():
        if not held.fence():
            raise lease_lost(domain, held)
        _set_position(domain, now)
    return stats


def _set_position(domain: str, at: datetime) -> None:
    if is_live(domain):
        clocks.set_live_position(domain, at)
    else:
        flush_frozen(domain)(at)


def next_owed(domain: str) -> datetime | None:
    return (
        Timer.objects.filter(domain=domain, status="armed")
        .order_by("owed_at")
        .values_list("owed_at", flat=True)
        .first()
    )


def owed_now(domain: str, now: datetime) -> bool:
    return clocks.owed_by(domain, now)
