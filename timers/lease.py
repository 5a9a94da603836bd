"""One worker holds a clock domain at a time: a Lease row (domain, holder, epoch, expires), not a session lock.

A session advisory lock lives on one server's sessions, which a distributed PostgreSQL (Citus) does not
share across its nodes; a row is seen the same from every node. So:

- **take**: one conditional upsert, ``INSERT … ON CONFLICT (domain) DO UPDATE … WHERE the lease expired OR
  the holder is me``, which bumps the epoch. Nobody else gets the row while it is unexpired.
- **fence**: every batch the holder writes begins (inside the batch's transaction, as the Run's guard)
  with ``UPDATE lease SET expires = … WHERE domain = … AND holder = me AND epoch = mine``. One row: the
  lease is renewed, and the row stays locked until the batch commits, so a taker waits for the batch and
  then finds it renewed. No row: the lease expired and was taken over while this holder was away (a long
  pause, a partition): the batch stops before it writes anything.
- **release**: the row expires at once, so the next taker needs no wait; a holder killed with -9 never
  releases, and its domain is taken over once ``expires`` passes (``KEEPING_TIME["LEASE_SECONDS"]``), or at
  once on PostgreSQL when the holder's database session is gone (the row names it, as the outbox's claims do).

Safety rests on the fence alone: clocks decide only when a lease may be taken over, never whether two
holders write. A holder is a thread of a process (the advisory lock's unit was a database session, which
Django keeps per thread); inside one thread a lease is re-entrant, so a nested take (an advance run from a
claimed request) keeps the outer epoch.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, overload

from django.conf import settings
from django.db import OperationalError

from .clock import wall_now
from .sql import leases

_PROCESS = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
_local = threading.local()


def holder() -> str:
    """This thread's name as a lease holder: host, pid, a per-process nonce, and the thread."""
    me = getattr(_local, "holder", None)
    if me is None or not me.startswith(_PROCESS):  # a forked child names itself anew
        me = _local.holder = f"{_PROCESS}:{threading.get_ident() % 100000}"
        _local.held = {}
    return me


def _held() -> dict[str, list[Any]]:
    # By domain, [the Held, how many takes deep]: a list, so a re-entrant take counts in place.
    holder()
    held: dict[str, list[Any]] = _local.held
    return held


def ttl() -> timedelta:
    return timedelta(seconds=float(settings.KEEPING_TIME.get("LEASE_SECONDS", 30.0)))


def terms_kept() -> int:
    """How many of a domain's newest lease terms its history keeps (a live worker takes a lease every turn)."""
    return max(1, int(settings.KEEPING_TIME.get("LEASE_TERMS_KEPT", 1000)))


def _prune_every(kept: int) -> int:
    # Every take would pay a DELETE; every kept/4 takes, the history is at most 1.25 × kept rows.
    return max(1, kept // 4)


@dataclass
class Held:
    """A lease this thread holds, under its epoch."""

    domain: str
    holder: str
    epoch: int
    batches: int = 0

    def fence(self) -> bool:
        """Renew under this epoch; False when another took the domain over. Called first in a batch's
        transaction, it keeps the row locked until the batch commits."""
        return self.fence_sent()()

    def fence_sent(self) -> Callable[[], bool]:
        """fence() sent, its answer read by the function it returns (leases.fence_sent): on PostgreSQL the
        caller's pipeline carries the batch's claim with it."""
        read = leases.fence_sent(domain=self.domain, holder=self.holder, epoch=self.epoch, expires=wall_now() + ttl())
        return lambda: self._counted(read())

    def fence_locking(self, clock_id: str) -> tuple[bool, str | None]:
        """fence(), then ``clock_id``'s test clock status read with its row locked (FOR NO KEY UPDATE) until the
        batch commits, so a delete's mark waits for the batch and never lands between the check and the
        batch's writes. Returns (fenced, the clock's status; None: no such clock)."""
        return self.fence_locking_sent(clock_id)()

    def fence_locking_sent(self, clock_id: str) -> Callable[[], tuple[bool, str | None]]:
        """fence_locking() sent, its answer read by the function it returns (as fence_sent)."""
        read = leases.fence_locking_sent(domain=self.domain, holder=self.holder, epoch=self.epoch,
                                         expires=wall_now() + ttl(), clock_id=clock_id)

        def fenced() -> tuple[bool, str | None]:
            ok, status = read()
            return self._counted(ok), status

        return fenced

    def _counted(self, fenced: bool) -> bool:
        """A fence's answer, the batch counted under this term when it renewed."""
        if fenced:
            self.batches += 1
        return fenced

    def guard(self, *others: Callable[[], bool] | None) -> Callable[[], bool]:
        """The Run's guard: the fence first (it orders this batch after any taker), then the others."""
        checks = [g for g in others if g is not None]

        def check() -> bool:
            return self.fence() and all(g() for g in checks)

        return check

    def release(self) -> None:
        leases.release(domain=self.domain, holder=self.holder, epoch=self.epoch, batches=self.batches, now=wall_now())


def take(domain: str, *, as_holder: str | None = None, look: bool = True) -> Held | None:
    """Take ``domain`` if its lease is free, expired, or this thread's; the epoch goes up by one.
    (``as_holder`` names another holder: tests play a paused worker and its successor with it. ``look=False``:
    the caller has just seen the lease free or its own, so the take skips its look; the upsert decides still.)"""
    me = as_holder or holder()
    now = wall_now()
    # A look first, so a worker scanning many domains writes nothing for those held by others.
    if look and leases.held_elsewhere(domain=domain, holder=me, now=now):
        return None
    try:
        return _upsert(domain, me, now)
    except OperationalError:
        # The row is locked: its holder is inside a batch (the fence), so the lease is not expired after
        # all, or its holder is paused mid-batch; either way it is not ours now, and this worker goes on.
        return None


def _upsert(domain: str, me: str, now: datetime) -> Held | None:
    kept = terms_kept()
    epoch = leases.take(domain=domain, holder=me, now=now, expires=now + ttl(), kept=kept,
                        prune_every=_prune_every(kept))
    return None if epoch is None else Held(domain=domain, holder=me, epoch=epoch)


@overload
def lease(domain: str, *, wait: Literal[True] = True, look: bool = True) -> contextlib.AbstractContextManager[Held]: ...


@overload
def lease(domain: str, *, wait: bool, look: bool = True) -> contextlib.AbstractContextManager[Held | None]: ...


@contextlib.contextmanager  # type: ignore[misc]  # the overloads above say what each wait yields
def lease(domain: str, *, wait: bool = True, look: bool = True) -> Iterator[Held | None]:
    """Hold the clock domain for the duration; with ``wait=False`` yields None if another holds it.
    ``look=False``: the first take skips its look for another holder (take()).

    Waiting polls (up to half a second apart): a holder lets go at its end, or its lease expires."""
    held = _held()
    if domain in held:  # re-entrant within the thread: the outer take's epoch stays the one that fences
        entry = held[domain]
        entry[1] += 1
        try:
            yield entry[0]
        finally:
            entry[1] -= 1
        return
    got = take(domain, look=look)
    pause = 0.02
    while got is None and wait:
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
        got = take(domain)
    if got is None:
        yield None
        return
    held[domain] = [got, 1]
    try:
        yield got
    finally:
        _let_go(got)


class Kept:
    """The leases a live worker keeps between its turns (timers/worker.py): a domain fired again a moment later
    needs no take and no release, two of a live fire's round trips (issue 39). Each kept lease is this thread's
    as lease() holds one (a nested take keeps its epoch), and every batch under it is fenced all the same, so a
    kept lease that was taken over stops the next turn's first batch. The worker lets them all go before it
    sleeps longer than a moment, before a test clock's work, and as it stops; a holder killed with -9 frees
    them with its session, as any lease."""

    def __init__(self) -> None:
        self._kept: dict[str, Held] = {}

    def __contains__(self, domain: str) -> bool:
        return domain in self._kept

    def __len__(self) -> int:
        return len(self._kept)

    @contextlib.contextmanager
    def turn(self, domain: str, *, look: bool = True) -> Iterator[Held | None]:
        """The domain's kept lease, else one taken now (None: another holds it); kept after the turn unless
        the turn raised (a lost lease, an error: let go, as lease() lets go, so its stale epoch is not this
        thread's any more)."""
        held = self._kept.pop(domain, None)
        registry = _held()
        if held is None:
            if domain in registry:  # an outer lease() of this thread holds it: that one's epoch fences
                with lease(domain, wait=False) as inner:
                    yield inner
                return
            held = take(domain, look=look)
            if held is None:
                yield None
                return
            registry[domain] = [held, 1]
        try:
            yield held
        except BaseException:
            _let_go(held)
            raise
        self._kept[domain] = held

    def release(self) -> None:
        """Let every kept lease go (each expires at once, for whichever worker is owed there next)."""
        for held in self._kept.values():
            _let_go(held)
        self._kept.clear()

    def forget(self) -> None:
        """The database session is gone, and every lease it held with it: nothing to release."""
        for domain in self._kept:
            _held().pop(domain, None)
        self._kept.clear()


def _let_go(held: Held) -> None:
    """No longer this thread's, and released (each expires at once)."""
    _held().pop(held.domain, None)
    with contextlib.suppress(Exception):  # a dead connection: the lease expires by itself
        held.release()


def current(domain: str) -> Held | None:
    """The lease this thread holds on ``domain``, if any."""
    entry = _held().get(domain)
    return None if entry is None else entry[0]
