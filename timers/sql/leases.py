"""The lease's statements (timers/lease.py): its look, take, fence and release, and who holds what now, beside
their SQLite fallback.

On PostgreSQL a lease whose holder's session is gone is free at once (the row names the session,
timers/sql/sessions.py), and the fence goes on the tick's kept cursor, prepared (timers/prepared.py): the live
tick pays it once a batch. SQLite is one machine and one writer: a dead holder's lease frees when it expires.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import OuterRef, Subquery
from django.db.models.expressions import RawSQL

from ..models import Lease, TestClock
from ..prepared import cursor, kept_cursors
from . import one_row
from .sessions import LIVE_SESSIONS, lease_session, named

# Whether the lease's holder is alive: its session is (PostgreSQL), or it names none.
_SESSION_LIVES = f"(session = '' OR session IN ({LIVE_SESSIONS}))"
# A take's look first: another holds the domain, unexpired; a worker scanning many domains writes nothing then.
HELD_ELSEWHERE = "SELECT 1 FROM timers_lease WHERE domain = %s AND holder <> %s AND expires >= %s"
HELD_ELSEWHERE_LIVE = f"{HELD_ELSEWHERE} AND {_SESSION_LIVES}"
# The take: one conditional upsert, free when expired or this holder's (PostgreSQL: or its holder's session ended).
_TAKE = ("INSERT INTO timers_lease (domain, holder, epoch, expires, session) VALUES (%s, %s, 1, %s, %s) "
         "ON CONFLICT (domain) DO UPDATE SET holder = excluded.holder, epoch = timers_lease.epoch + 1, "
         "expires = excluded.expires, session = excluded.session "
         "WHERE timers_lease.expires < %s OR timers_lease.holder = excluded.holder")
TAKE = f"{_TAKE} RETURNING epoch"
TAKE_FREEING_GONE = (f"{_TAKE} OR (timers_lease.session <> '' AND timers_lease.session NOT IN ({LIVE_SESSIONS}))"
                     " RETURNING epoch")
# A take's wait on a row locked by its holder's batch (the fence), at most: then it is not free after all.
TAKE_WAITS = "SET LOCAL lock_timeout = '200ms'"
# An outer transaction goes on as it was after a take inside it.
WAIT_AS_BEFORE = "SET LOCAL lock_timeout TO DEFAULT"
# A commit that does not wait for its WAL flush (see ``_begin``).
NO_FLUSH = "SET LOCAL synchronous_commit = off"
# The term's row, written with the take.
TERM_TAKEN = "INSERT INTO timers_leaseterm (domain, epoch, holder, taken_at, batches) VALUES (%s, %s, %s, %s, 0)"
# The terms older than the newest kept: a range of lease_term_one_holder_per_epoch's index.
TERMS_PRUNED = "DELETE FROM timers_leaseterm WHERE domain = %s AND epoch <= %s"
# A take, a release or a prune outside any transaction (PostgreSQL): one statement that is its own transaction,
# prepared (issue 39: as text, the take and the release were planned at every live turn, half the server's
# time for them). Its settings are set_config's, local to that transaction, where SET LOCAL is a statement of
# its own, which a prepared statement cannot carry. The take's lock timeout is set by the row its INSERT reads
# (FROM s), so before the insert can wait on a lease row a batch holds.
_ALONE_SETTINGS = "SELECT set_config('lock_timeout', '200ms', true), set_config('synchronous_commit', 'off', true)"
_NO_FLUSH_ALONE = "SELECT set_config('synchronous_commit', 'off', true)"
_VALUES = "VALUES (%s, %s, 1, %s, %s)"
assert _VALUES in TAKE_FREEING_GONE
TAKE_ALONE = (f"WITH s AS ({_ALONE_SETTINGS}), t AS ({TAKE_FREEING_GONE.replace(_VALUES, 'SELECT %s, %s, 1, %s, %s FROM s')}), "
              "term AS (INSERT INTO timers_leaseterm (domain, epoch, holder, taken_at, batches) "
              "SELECT %s, epoch, %s, %s, 0 FROM t) SELECT epoch FROM t")
TERMS_PRUNED_ALONE = f"WITH d AS ({TERMS_PRUNED}) {_NO_FLUSH_ALONE}"
# The fence: renew under this epoch; no row when another took the domain over.
FENCE = "UPDATE timers_lease SET expires = %s WHERE domain = %s AND holder = %s AND epoch = %s"
# The fence, and the test clock's status read with its row locked until the batch commits, in one round trip.
FENCE_LOCKING = ("WITH f AS (UPDATE timers_lease SET expires = %b WHERE domain = %b AND holder = %b AND epoch = %b "
                 "RETURNING 1) SELECT EXISTS (SELECT 1 FROM f), "
                 "(SELECT status FROM timers_testclock WHERE id = %b FOR NO KEY UPDATE)")
# The release: the row expires at once, so the next taker needs no wait.
RELEASE = "UPDATE timers_lease SET expires = %s WHERE domain = %s AND holder = %s AND epoch = %s"
# The term's end, with the batches fenced under it.
TERM_RELEASED = ("UPDATE timers_leaseterm SET released_at = %s, batches = %s "
                 "WHERE domain = %s AND epoch = %s AND holder = %s")
# The release and its term's end in one statement outside any transaction, prepared (see TAKE_ALONE).
RELEASE_ALONE = f"WITH r AS ({RELEASE}), e AS ({TERM_RELEASED}) {_NO_FLUSH_ALONE}"
# (domain, holder, epoch) of each lease held now, for /metrics.
HELD_NOW = "SELECT domain, holder, epoch FROM timers_lease WHERE expires >= %s"
# The holder of a live domain's last lease, while its session lives.
LAST_HOLDER_LIVE = ("SELECT l.holder FROM timers_lease l WHERE l.domain = timers_liveclock.id "
                    f"AND (l.session = '' OR l.session IN ({LIVE_SESSIONS}))")


def _db(at: datetime) -> Any:  # the backend's value for a datetime column (text on SQLite)
    return connection.ops.adapt_datetimefield_value(at)


def _begin(cur: CursorWrapper, *settings_: str) -> None:
    """Begin a take's or a release's transaction (PostgreSQL): ``settings_`` (SET LOCAL …) and, when it is
    the outermost transaction, a commit that does not wait for its WAL flush. A live turn takes and releases a
    lease around each batch: two flushes a turn on top of the batch's own, on a disk shared with the API's
    armings. Losing either to a server crash is safe: every batch written under a take commits after it with
    a flush, which flushes the take's record before it (the WAL is one sequence), so nothing durable rests on
    a lost take; and a lost release leaves a lease whose session is gone, which a take frees at once."""
    if not named():
        return
    sql = list(settings_)
    if len(connection.atomic_blocks) == 1:  # the outermost: its commit is this one
        sql.append(NO_FLUSH)
    if sql:
        cur.execute("; ".join(sql))  # one round trip (no parameters: psycopg sends it as one query)


def _alone() -> bool:
    """Whether a take or a release is a transaction of its own, one prepared statement (TAKE_ALONE): on
    PostgreSQL outside any transaction. A live turn takes and releases a lease around each batch: each was
    BEGIN, the statement and COMMIT: four round trips of a fire's thirteen (issue 39)."""
    return named() and not connection.in_atomic_block and connection.get_autocommit()


def held_elsewhere(*, domain: str, holder: str, now: datetime) -> bool:
    """Whether another holder has ``domain`` now (unexpired and, where sessions are named, alive)."""
    with connection.cursor() as cur:
        cur.execute(HELD_ELSEWHERE_LIVE if named() else HELD_ELSEWHERE, [domain, holder, _db(now)])
        return cur.fetchone() is not None


def take(*, domain: str, holder: str, now: datetime, expires: datetime, kept: int, prune_every: int) -> int | None:
    """The take's statements: the epoch taken (its term's row written), or None where the lease is another's.
    Outside a transaction, one of its own (``_alone``); else in the caller's. Every ``prune_every`` epochs, the
    terms before the newest ``kept`` go."""
    if _alone():
        with cursor("TICK_PREPARE") as cur:
            cur.execute(TAKE_ALONE, [domain, holder, expires, lease_session(), now, domain, holder, now])
            got = cur.fetchone()
            if got is None:
                return None
            epoch = int(got[0])
            if epoch % prune_every == 0 and epoch > kept:
                cur.execute(TERMS_PRUNED_ALONE, [domain, epoch - kept])
            return epoch
    with transaction.atomic(), connection.cursor() as cur:
        outermost = len(connection.atomic_blocks) == 1
        _begin(cur, TAKE_WAITS)
        cur.execute(TAKE_FREEING_GONE if named() else TAKE, [domain, holder, _db(expires), lease_session(), _db(now)])
        got = cur.fetchone()
        if got is None:
            if named() and not outermost:
                cur.execute(WAIT_AS_BEFORE)
            return None
        epoch = int(got[0])
        cur.execute(TERM_TAKEN, [domain, epoch, holder, _db(now)])
        if epoch % prune_every == 0 and epoch > kept:
            # A range of lease_term_one_holder_per_epoch's index; amortized over the takes in between.
            cur.execute(TERMS_PRUNED, [domain, epoch - kept])
        if named() and not outermost:
            cur.execute(WAIT_AS_BEFORE)
    return epoch


def fence(*, domain: str, holder: str, epoch: int, expires: datetime) -> bool:
    """Renew the lease under ``epoch``; False when another took it over. On PostgreSQL on the tick's kept
    cursor, prepared: the live tick pays it once a batch."""
    return fence_sent(domain=domain, holder=holder, epoch=epoch, expires=expires)()


def fence_sent(*, domain: str, holder: str, epoch: int, expires: datetime) -> Callable[[], bool]:
    """``fence`` sent, its answer read by the function it returns: on PostgreSQL inside a pipeline the caller
    opened, the batch's claim goes in the same round trip (timers/engine.py, Run._open). Elsewhere it is
    answered at once."""
    if named():
        cur, _, prepare = kept_cursors()
        cur.execute(FENCE.replace("%s", "%b"), [expires, domain, holder, epoch], prepare=prepare)
        return lambda: cur.rowcount == 1
    with connection.cursor() as db_cur:
        db_cur.execute(FENCE, [_db(expires), domain, holder, epoch])
        renewed = db_cur.rowcount == 1
    return lambda: renewed


def fence_locking(*, domain: str, holder: str, epoch: int, expires: datetime,
                  clock_id: str) -> tuple[bool, str | None]:
    """``fence``, then ``clock_id``'s test clock status read with its row locked (FOR NO KEY UPDATE): on
    PostgreSQL one statement, as a batch of one timer pays per statement, not per row. Returns (fenced, the
    clock's status; None: no such clock)."""
    return fence_locking_sent(domain=domain, holder=holder, epoch=epoch, expires=expires, clock_id=clock_id)()


def fence_locking_sent(*, domain: str, holder: str, epoch: int, expires: datetime,
                       clock_id: str) -> Callable[[], tuple[bool, str | None]]:
    """``fence_locking`` sent, its answer read by the function it returns (as ``fence_sent``)."""
    if not named():
        ok = fence(domain=domain, holder=holder, epoch=epoch, expires=expires)
        status = (TestClock.objects.select_for_update(no_key=True).filter(pk=clock_id)
                  .values_list("status", flat=True).first())
        return lambda: (ok, status)
    cur, _, prepare = kept_cursors()
    cur.execute(FENCE_LOCKING, [expires, domain, holder, epoch, clock_id], binary=True, prepare=prepare)

    def read() -> tuple[bool, str | None]:
        ok, status = one_row(cur)
        return ok, status

    return read


def release(*, domain: str, holder: str, epoch: int, batches: int, now: datetime) -> None:
    """The release's statements: the lease expires now, and its term ends. Outside a transaction, one of its
    own (``_alone``); else in the caller's."""
    if _alone():
        with cursor("TICK_PREPARE") as cur:
            cur.execute(RELEASE_ALONE, [now, domain, holder, epoch, now, batches, domain, epoch, holder])
        return
    with transaction.atomic(), connection.cursor() as cur:
        _begin(cur)
        cur.execute(RELEASE, [_db(now), domain, holder, epoch])
        cur.execute(TERM_RELEASED, [_db(now), batches, domain, epoch, holder])


def held_now(now: datetime) -> list[tuple[str, str, int]]:
    """(domain, holder, epoch) of each lease held at ``now``: unexpired and, where sessions are named, alive."""
    sql = f"{HELD_NOW} AND {_SESSION_LIVES}" if named() else HELD_NOW
    with connection.cursor() as cur:
        cur.execute(sql + " ORDER BY 1, 2", [_db(now)])
        return [(d, h, int(e)) for d, h, e in cur.fetchall()]


def last_holder() -> RawSQL | Subquery:
    """An expression for the holder of a live domain's last lease (a LiveClock row's), while its database
    session lives where sessions are named: a worker that was stopped or killed keeps no domain waiting."""
    if named():
        return RawSQL(LAST_HOLDER_LIVE, ())
    return Subquery(Lease.objects.filter(domain=OuterRef("pk")).values("holder")[:1])
