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

from django.conf import settings
from django.db import OperationalError, connection, transaction

from .clock import wall_now

_PROCESS = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
_local = threading.local()


def holder() -> str:
    """This thread's name as a lease holder: host, pid, a per-process nonce, and the thread."""
    me = getattr(_local, "holder", None)
    if me is None or not me.startswith(_PROCESS):  # a forked child names itself anew
        me = _local.holder = f"{_PROCESS}:{threading.get_ident() % 100000}"
        _local.held = {}
    return me


def _held() -> dict[str, list]:
    holder()
    return _local.held


def ttl() -> timedelta:
    return timedelta(seconds=float(settings.KEEPING_TIME.get("LEASE_SECONDS", 30.0)))


def terms_kept() -> int:
    """How many of a domain's newest lease terms its history keeps (a live worker takes a lease every turn)."""
    return max(1, int(settings.KEEPING_TIME.get("LEASE_TERMS_KEPT", 1000)))


def _prune_every(kept: int) -> int:
    # Every take would pay a DELETE; every kept/4 takes, the history is at most 1.25 × kept rows.
    return max(1, kept // 4)


def _pg() -> bool:
    return connection.vendor == "postgresql"


# The sessions alive now, named as timers.sql.outbox.sender_id names one (pid and start, so a reused pid differs).
_LIVE_SESSIONS = ("SELECT 'pg:' || a.pid || ':' || floor(extract(epoch from a.backend_start) * 1000000)::bigint "
                  "FROM pg_stat_activity a WHERE a.pid IS NOT NULL AND a.backend_start IS NOT NULL")


def _session() -> str:
    if not _pg():
        return ""  # SQLite: one machine, one writer; the expiry frees a dead holder's lease
    from .sql.outbox import sender_id

    return sender_id()


def _db(at: datetime):
    return connection.ops.adapt_datetimefield_value(at)


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
        if _pg():  # on the tick's kept cursor, prepared: the live tick pays it once a batch
            from .store import kept_cursors

            cur, _, prepare = kept_cursors()
            cur.execute("UPDATE timers_lease SET expires = %b WHERE domain = %b AND holder = %b AND epoch = %b",
                        [wall_now() + ttl(), self.domain, self.holder, self.epoch], prepare=prepare)
            ok = cur.rowcount == 1
        else:
            with connection.cursor() as cur:
                cur.execute("UPDATE timers_lease SET expires = %s WHERE domain = %s AND holder = %s AND epoch = %s",
                            [_db(wall_now() + ttl()), self.domain, self.holder, self.epoch])
                ok = cur.rowcount == 1
        if ok:
            self.batches += 1
        return ok

    def fence_locking(self, clock_id: str) -> tuple[bool, str | None]:
        """fence(), then ``clock_id``'s test clock status read with its row locked (FOR NO KEY UPDATE) until the
        batch commits, so a delete's mark waits for the batch and never lands between the check and the
        batch's writes. On PostgreSQL one statement: a batch of one timer pays per statement, not per row.
        Returns (fenced, the clock's status; None: no such clock)."""
        if not _pg():
            ok = self.fence()
            from .models import TestClock

            status = (TestClock.objects.select_for_update(no_key=True).filter(pk=clock_id)
                      .values_list("status", flat=True).first())
            return ok, status
        from .store import kept_cursors

        cur, _, prepare = kept_cursors()
        cur.execute("WITH f AS (UPDATE timers_lease SET expires = %b WHERE domain = %b AND holder = %b AND epoch = %b "
                    "RETURNING 1) SELECT EXISTS (SELECT 1 FROM f), "
                    "(SELECT status FROM timers_testclock WHERE id = %b FOR NO KEY UPDATE)",
                    [wall_now() + ttl(), self.domain, self.holder, self.epoch, clock_id], binary=True,
                    prepare=prepare)
        ok, status = cur.fetchone()
        if ok:
            self.batches += 1
        return ok, status

    def guard(self, *others: Callable[[], bool] | None) -> Callable[[], bool]:
        """The Run's guard: the fence first (it orders this batch after any taker), then the others."""
        checks = [g for g in others if g is not None]

        def check() -> bool:
            return self.fence() and all(g() for g in checks)

        return check

    def release(self) -> None:
        now = wall_now()
        with transaction.atomic(), connection.cursor() as cur:
            _no_flush(cur)
            cur.execute("UPDATE timers_lease SET expires = %s WHERE domain = %s AND holder = %s AND epoch = %s",
                        [_db(now), self.domain, self.holder, self.epoch])
            cur.execute("UPDATE timers_leaseterm SET released_at = %s, batches = %s "
                        "WHERE domain = %s AND epoch = %s AND holder = %s",
                        [_db(now), self.batches, self.domain, self.epoch, self.holder])


def _no_flush(cur, *settings_: str) -> None:
    """Begin a take's or a release's transaction (PostgreSQL): ``settings_`` (SET LOCAL …) and, when it is
    the outermost transaction, a commit that does not wait for its WAL flush. A live turn takes and releases a
    lease around each batch: two flushes a turn on top of the batch's own, on a disk shared with the API's
    armings. Losing either to a server crash is safe: every batch written under a take commits after it with
    a flush, which flushes the take's record before it (the WAL is one sequence), so nothing durable rests on
    a lost take; and a lost release leaves a lease whose session is gone, which ``take`` frees at once."""
    if not _pg():
        return
    sql = list(settings_)
    if len(connection.atomic_blocks) == 1:  # the outermost: its commit is this one
        sql.append("SET LOCAL synchronous_commit = off")
    if sql:
        cur.execute("; ".join(sql))  # one round trip (no parameters: psycopg sends it as one query)


def take(domain: str, *, as_holder: str | None = None) -> Held | None:
    """Take ``domain`` if its lease is free, expired, or this thread's; the epoch goes up by one.
    (``as_holder`` names another holder: tests play a paused worker and its successor with it.)"""
    me = as_holder or holder()
    now = wall_now()
    with connection.cursor() as cur:
        # A look first, so a worker scanning many domains writes nothing for those held by others.
        cur.execute("SELECT 1 FROM timers_lease WHERE domain = %s AND holder <> %s AND expires >= %s"
                    + (f" AND (session = '' OR session IN ({_LIVE_SESSIONS}))" if _pg() else ""),
                    [domain, me, _db(now)])
        if cur.fetchone() is not None:
            return None
    try:
        return _upsert(domain, me, now)
    except OperationalError:
        # The row is locked: its holder is inside a batch (the fence), so the lease is not expired after
        # all, or its holder is paused mid-batch; either way it is not ours now, and this worker goes on.
        return None


def _upsert(domain: str, me: str, now: datetime) -> Held | None:
    with transaction.atomic(), connection.cursor() as cur:
        outermost = len(connection.atomic_blocks) == 1
        _no_flush(cur, "SET LOCAL lock_timeout = '200ms'")
        # Free: expired, or this holder's, or (PostgreSQL) its holder's session has ended (killed, cut off).
        gone = (f" OR (timers_lease.session <> '' AND timers_lease.session NOT IN ({_LIVE_SESSIONS}))"
                if _pg() else "")
        cur.execute(
            "INSERT INTO timers_lease (domain, holder, epoch, expires, session) VALUES (%s, %s, 1, %s, %s) "
            "ON CONFLICT (domain) DO UPDATE SET holder = excluded.holder, epoch = timers_lease.epoch + 1, "
            "expires = excluded.expires, session = excluded.session "
            "WHERE timers_lease.expires < %s OR timers_lease.holder = excluded.holder" + gone + " RETURNING epoch",
            [domain, me, _db(now + ttl()), _session(), _db(now)])
        got = cur.fetchone()
        if got is None:
            if _pg() and not outermost:
                cur.execute("SET LOCAL lock_timeout TO DEFAULT")
            return None
        epoch = int(got[0])
        cur.execute("INSERT INTO timers_leaseterm (domain, epoch, holder, taken_at, batches) VALUES (%s, %s, %s, %s, 0)",
                    [domain, epoch, me, _db(now)])
        kept = terms_kept()
        if epoch % _prune_every(kept) == 0 and epoch > kept:
            # A range of lease_term_one_holder_per_epoch's index; amortized over the takes in between.
            cur.execute("DELETE FROM timers_leaseterm WHERE domain = %s AND epoch <= %s", [domain, epoch - kept])
        if _pg() and not outermost:
            cur.execute("SET LOCAL lock_timeout TO DEFAULT")  # an outer transaction goes on as it was
    return Held(domain=domain, holder=me, epoch=epoch)


@contextlib.contextmanager
def lease(domain: str, *, wait: bool = True) -> Iterator[Held | None]:
    """Hold the clock domain for the duration; with ``wait=False`` yields None if another holds it.

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
    got = take(domain)
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
        del held[domain]
        with contextlib.suppress(Exception):  # a dead connection: the lease expires by itself
            got.release()


def current(domain: str) -> Held | None:
    """The lease this thread holds on ``domain``, if any."""
    entry = _held().get(domain)
    return None if entry is None else entry[0]
