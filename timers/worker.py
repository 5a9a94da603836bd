"""Running the tick: leases, test clock advances, the brands' live clocks, and the loop behind `tick --forever`.

One worker holds a clock domain at a time (a Lease row, timers/lease.py), and every batch it writes is
fenced by the lease's epoch, so more workers scale across domains, never by racing on one. Each brand's
live clock is its own domain; the loop gives each owed domain a turn of a few batches in turn, so one
brand's backlog never holds another's owed timers back. Requested advances are claimed with SKIP LOCKED.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import OuterRef, Subquery
from django.db.models.expressions import RawSQL

from . import batch as batches
from . import history, outbox
from .batch import KeptWriteFailed
from .clock import Clock, WallClock
from .engine import Run, RunStats
from .errors import KeepingTimeError, NotFound, TestClockBackward, TestClockDeleted
from .lease import _LIVE_SESSIONS, Held, current, holder, lease
from .models import LIVE, Event, Lease, LiveClock, TestClock, Timer, is_live
from .store import get_store, kept_cursors
from .test_clocks import backward_message, test_clock_finish_delete
from .timeutil import iso_z

log = logging.getLogger(__name__)


# Who is told, in this thread (or task), where a test clock's run has reached after each flush: the CLI's
# progress bar (timers/progress.py). A context variable, so a bar sees only the runs of its own command.
_flush_observers: ContextVar[tuple[Callable[[str, datetime], None], ...]] = ContextVar("kt_flush_observers",
                                                                                    default=())


@contextlib.contextmanager
def observing_flushes(report: Callable[[str, datetime], None]) -> Iterator[None]:
    """Call ``report(clock_id, at)`` after each flush of a test clock's run in this context, for the duration."""
    token = _flush_observers.set((*_flush_observers.get(), report))
    try:
        yield
    finally:
        _flush_observers.reset(token)


@dataclass
class Pinned:
    """A test clock held still for one way of a compare (timers/compare.py), and what its advances would
    otherwise ask the database at every advance and every turn of the live loop, known instead:

    - the lease: the compare took it in the transaction every way runs in, so its row stays locked until the
      compare ends (a taker's upsert waits on the lock and gives up): no fence can fail, and none is sent;
    - the clock's row, read once as the way begins with its row locked until the way ends (as the first
      batch's fence locked it before): its status cannot change under the way but by the way's own writes (a
      delete's mark waits for the way's end, then stops the next way), and its frozen time is the one the
      way's own writes left;
    - whether the domain owes sends (``owed``): looked at in the statement that moves the frozen time with
      each batch's writes, which sees every row a handler wrote itself; a batch that queued sends of its own
      (written after that statement) tells the run's deliver, which looks again once it has sent them (a send
      in doubt, or waiting on its retry, is still owed). Where nothing was owed
      after the run's last batch, an advance or a turn has nothing to claim, count or wait for, and sends no
      statement to find that out. An advance that delivers every wake twice settles all the same: a refiring
      the gate let through would write after the last look;
    - an advance's last write, that puts the clock back to ready (``unready``): nothing of the way runs between
      two of its advances, so it is written with the next advance's mark (one update of the clock's row, where
      two left a version of it each inside the compare's transaction), or before a turn of the live loop, or
      as the way ends;
    - an advance that would fire nothing (``idle``): where nothing is owed to the outbox, its mark asks in the
      same statement whether any armed timer is owed by its end and, where none is, moves the frozen time
      there, and that is the advance. It was five round trips (its mark, its batch's savepoint, the fetch,
      the move, the release), the daily way's most. A turn of the live loop at the instant the last one ran
      to asks the same, and is over where nothing is owed. It looks anew every time, never from what an
      earlier look found, so a timer the way armed itself, by a firing or any other write, is seen.
    """

    clock: TestClock
    held: Held
    owed: bool = True  # until a batch has looked
    unready: bool = False  # the row says advancing where the clock is ready again (see above)

    def write_ready(self) -> None:
        if self.unready:
            TestClock.objects.filter(pk=self.clock.id).update(status=TestClock.Status.READY, advance_to=None)
            self.unready = False

    def look(self) -> None:
        """Whether the domain still owes sends, looked at after the run delivered a batch's: one statement, where
        the advance's settle and the next advance or turn each claimed and counted again."""
        if connection.vendor == "postgresql":
            cur, _, prepare = kept_cursors()
            cur.execute(_OWED.replace("%s", "%b"), [self.clock.id], prepare=prepare)
            self.owed = bool(cur.fetchone()[0])
        else:
            with connection.cursor() as cur:
                cur.execute(_OWED, [self.clock.id])
                self.owed = bool(cur.fetchone()[0])

    def idle(self, to: datetime, *, mark: bool) -> bool:
        """Whether no armed timer is owed by ``to``. With ``mark`` (an advance's), the advance's mark goes with
        the look, and where nothing is owed the frozen time's move to ``to`` (the observers told, as a flush
        tells them); without, the frozen time is at ``to`` already (a turn at the instant the last ran to)."""
        if connection.vendor == "postgresql":
            cur, _, prepare = kept_cursors()
            if mark:
                cur.execute(_IDLE_MARK.replace("%s", "%b"), [self.clock.id, to, to, to, self.clock.id],
                            prepare=prepare)
            else:
                cur.execute(_OWED_BY.replace("%s", "%b"), [self.clock.id, to], prepare=prepare)
            owed = bool(cur.fetchone()[0])
        else:  # in the process: the ORM's, whose datetimes SQLite compares as text as it wrote them
            owed = Timer.objects.filter(domain=self.clock.id, status="armed", owed_at__lte=to).exists()
            if mark:
                TestClock.objects.filter(pk=self.clock.id).update(
                    status=TestClock.Status.ADVANCING, advance_to=to, **({} if owed else {"frozen_time": to}))
        if owed:
            return False
        if mark:
            self.clock.frozen_time = to
            for report in _flush_observers.get():
                report(self.clock.id, to)
        return True


_pinned: ContextVar[Pinned | None] = ContextVar("kt_pinned", default=None)


@contextlib.contextmanager
def pinned(clock_id: str) -> Iterator[Pinned]:
    """Hold ``clock_id`` still for a compare's way, under the lease this thread holds on it (see Pinned)."""
    held = current(clock_id)
    if held is None:
        raise RuntimeError(f"pinned({clock_id!r}) needs the clock's lease held around it")
    clock = (TestClock.objects.select_for_update(no_key=True).exclude(status__in=TestClock.GONE)
             .filter(pk=clock_id).first())
    if clock is None:
        raise NotFound(f"no test clock {clock_id!r}")
    pin = Pinned(clock, held)
    token = _pinned.set(pin)
    try:
        yield pin
        if not connection.needs_rollback:  # a way rolled back (a compare's) needs none
            pin.write_ready()
    finally:
        _pinned.reset(token)


def _pin(domain: str) -> Pinned | None:
    """The pin on ``domain``, while this thread holds it under the lease the pin was made with."""
    pin = _pinned.get()
    if pin is None or pin.clock.id != domain or current(domain) is not pin.held:
        return None
    return pin


def _deliver(domain: str, taken: outbox.Taken | None = None) -> outbox.DeliverStats:
    """A run's deliver, called after each batch that queued sends (``taken``: those the batch claimed for it)."""
    pin = _pin(domain)
    if pin is None:
        return outbox.deliver(domain, taken=taken)
    pin.owed = True  # written after the batch's look (timers/store.py writes the sends last)
    # What one claim leaves is the look's to see, and the settle's to send.
    got = outbox.deliver(domain, once=True, taken=taken)
    pin.look()
    return got


_MOVE_FROZEN = ("UPDATE timers_testclock SET frozen_time = %s WHERE id = %s AND frozen_time < %s AND status NOT IN ("
                + ", ".join(f"'{s}'" for s in TestClock.GONE) + ")")
_OWED = "SELECT EXISTS (SELECT 1 FROM timers_outbox WHERE domain = %s AND status IN ('pending', 'sending'))"
# PostgreSQL: the move and the look at the outbox in one round trip (a WITH's UPDATE runs whether read or not).
_MOVE_FROZEN_LOOK = f"WITH moved AS ({_MOVE_FROZEN} RETURNING 1) {_OWED}"


# Pinned.idle's: whether an armed timer is owed by then; with an advance's mark, and where none is owed the frozen
# time's move, in the same round trip (a WITH's UPDATE runs whether read or not).
_OWED_BY = "SELECT EXISTS (SELECT 1 FROM timers_timer WHERE domain = %s AND status = 'armed' AND owed_at <= %s)"
_IDLE_MARK = (f"WITH o AS ({_OWED_BY} AS owed), m AS (UPDATE timers_testclock SET status = "
              f"'{TestClock.Status.ADVANCING}', advance_to = %s, frozen_time = CASE WHEN (SELECT owed FROM o) "
              "THEN frozen_time ELSE %s END WHERE id = %s) SELECT owed FROM o")


def _set_frozen(clock_id: str):
    def write(at: datetime) -> None:
        pin = _pin(clock_id)
        # Once a batch: the statement as text, where building the queryset cost more than running it; on
        # PostgreSQL prepared on the tick's own cursor, where planning it again was most of its cost. A pinned
        # clock's (a compare's way) looks at the outbox in it too.
        if connection.vendor == "postgresql":
            cur, _, prepare = kept_cursors()
            if pin is None:
                cur.execute(_MOVE_FROZEN.replace("%s", "%b"), [at, clock_id, at], prepare=prepare)
            else:
                cur.execute(_MOVE_FROZEN_LOOK.replace("%s", "%b"), [at, clock_id, at, clock_id], prepare=prepare)
                pin.owed = bool(cur.fetchone()[0])
        else:
            with connection.cursor() as cur:
                cur.execute(_MOVE_FROZEN, [at, clock_id, at])
                if pin is not None:
                    cur.execute(_OWED, [clock_id])
                    pin.owed = bool(cur.fetchone()[0])
        if pin is not None and at > pin.clock.frozen_time:
            pin.clock.frozen_time = at
        for report in _flush_observers.get():
            report(clock_id, at)

    return write


class LeaseLost(KeepingTimeError):
    """The domain's lease expired and another worker took it over: this one stopped before writing more."""

    code = "lease_lost"
    status = 409


class _Guard:
    """The Run's guard, composed: the lease's fence first (it renews the lease and orders this batch after
    any taker), then the test clock's liveness, then the turn's budget of batches. Remembers why it stopped."""

    def __init__(self, held: Held, batches: int | None = None, *, clock_id: str | None = None,
                 pinned: bool = False):
        self.held = held
        self.clock_id = clock_id  # a test clock's liveness, checked with the fence in one statement
        self.pinned = pinned  # a compare's way (Pinned): the lease and the clock's status are known to hold
        self.left = batches
        self.why = ""

    def __call__(self) -> bool:
        if self.pinned:
            self.held.batches += 1
            fenced = alive = True
        elif self.clock_id is not None:
            fenced, status = self.held.fence_locking(self.clock_id)
            alive = status is not None and status not in TestClock.GONE
        else:
            fenced, alive = self.held.fence(), True
        if not fenced:
            self.why = "lease"
        elif not alive:
            self.why = "deleted"
        elif self.left is not None and self.left <= 0:
            self.why = "turn"
        else:
            if self.left is not None:
                self.left -= 1
            return True
        return False


def _lost(domain: str, held: Held) -> LeaseLost:
    return LeaseLost(f"the lease on {domain} (epoch {held.epoch}) expired and another worker took it over; "
                     "this run stopped at a batch boundary and wrote nothing after it")


def _stopped(clock_id: str) -> TestClockDeleted:
    return TestClockDeleted(f"test clock {clock_id} was deleted while it advanced; it stopped at a batch boundary "
                            "and nothing landed after test_clock.deleted")


def advance(clock_id: str, to: datetime, *, redeliver: bool = False, trace: bool = False,
            on: set[str] | None = None) -> RunStats:
    """Advance a test clock to ``to``, firing every timer owed on the way, each instant in turn."""
    with lease(clock_id) as held:
        pin = _pin(clock_id)
        clock = pin.clock if pin is not None else (
            TestClock.objects.exclude(status__in=TestClock.GONE).filter(pk=clock_id).first())
        if clock is None:
            raise NotFound(f"no test clock {clock_id!r}")
        if to < clock.frozen_time:
            raise TestClockBackward(backward_message(clock, to))
        start = clock.frozen_time
        guard = _Guard(held, clock_id=clock.id, pinned=pin is not None)
        cfg = settings.KEEPING_TIME
        size = cfg.get("ADVANCE_BATCH_SIZE") or cfg["BATCH_SIZE"]
        # Stripe's rule for every advance, asked for or not: the clock's objects take no outside writes until
        # it is ready again (409 test_clock_advancing). An advance the API asked for is marked already; one
        # run here (tick 1y, a compare's ways) is marked for its length and put back to ready without an event.
        idle = False
        if pin is not None and not pin.owed and not redeliver and (pin.unready
                                                                   or clock.status == TestClock.Status.READY):
            # The mark, and where nothing is owed by ``to`` the whole advance, in one statement (Pinned.idle).
            idle, marked = pin.idle(to, mark=True), True
            pin.unready = False
        elif pin is not None and pin.unready:  # the row is still marked by the last advance (Pinned)
            marked = bool(TestClock.objects.filter(pk=clock.id).update(advance_to=to))
            pin.unready = False
        else:
            marked = clock.status == TestClock.Status.READY and bool(
                TestClock.objects.filter(pk=clock.id, status=TestClock.Status.READY).update(
                    status=TestClock.Status.ADVANCING, advance_to=to))
        if marked and pin is not None:
            clock.status, clock.advance_to = TestClock.Status.ADVANCING, to
        if idle:
            _finish_pinned(pin, to, marked)
            return RunStats(domain=clock.id, start=start, to=to)
        # So the run may keep its timers and its handlers' rows from one batch to the next (Run.carry): a
        # batch of thousands reads them once, not once a batch. Not worth a statement for small batches.
        carry = (lambda: _carry_token(clock.id)) if size >= CARRY_MIN_BATCH else None

        def run(keep_writes: bool, floor: datetime) -> Run:
            return Run(domain=clock.id, floor=floor, to=to, store=get_store(), redeliver=redeliver, trace=trace,
                       on=on, on_flush=_set_frozen(clock.id), deliver=lambda taken: _deliver(clock.id, taken),
                       guard=guard, keep_writes=keep_writes, batch_size=size, carry=carry, claim_sends=True)

        try:
            stats = _execute(clock.id, run, clock.frozen_time, lambda: _reread(clock.id, pin))
            if stats.stopped:
                raise _lost(clock.id, held) if guard.why == "lease" else _stopped(clock.id)
            # Ready only once every send the advance owes has been made, has failed, or is in doubt with its
            # reason.
            if pin is None or pin.owed or redeliver:
                stats.add_sends(outbox.settle(clock.id))
            if pin is not None:
                _finish_pinned(pin, to, marked)
                return stats
            with transaction.atomic():
                if not held.fence():  # the last write is fenced like every batch
                    raise _lost(clock.id, held)
                # The row lock orders this against a delete's mark: a clock marked gone is never moved or readied.
                current = TestClock.objects.select_for_update().filter(pk=clock.id).first()
                if current is None or current.status in TestClock.GONE:
                    raise _stopped(clock.id)
                # Marked here: ready again, with no event (tick 1y's record is what its tick did).
                TestClock.objects.filter(pk=clock.id).update(
                    frozen_time=to, **({"status": TestClock.Status.READY, "advance_to": None} if marked else {}))
                if not marked and (current.status == TestClock.Status.ADVANCING and current.advance_to is not None
                        and current.advance_to <= to):
                    _mark_ready(current, to)
        except BaseException:
            if marked:
                _unmark_after_failure(clock.id, to)
            raise
        return stats


def _finish_pinned(pin: Pinned, to: datetime, marked: bool) -> None:
    """advance()'s last write on a pinned clock, as the unpinned one's: its fence and its row's locked read
    are known (Pinned), the frozen time is written only where the last flush left it short of ``to``, and
    "ready" with the next advance's mark (Pinned.unready)."""
    clock = pin.clock
    ready = (not marked and clock.status == TestClock.Status.ADVANCING and clock.advance_to is not None
             and clock.advance_to <= to)
    if ready:
        with transaction.atomic():
            TestClock.objects.filter(pk=clock.id).update(frozen_time=to)
            _mark_ready(clock, to)
        clock.status, clock.advance_to, clock.redeliver = TestClock.Status.READY, None, False
    elif marked:
        if clock.frozen_time < to:
            TestClock.objects.filter(pk=clock.id).update(frozen_time=to)
        pin.unready = True
        clock.status, clock.advance_to = TestClock.Status.READY, None
    elif clock.frozen_time < to:
        TestClock.objects.filter(pk=clock.id).update(frozen_time=to)
    clock.frozen_time = to


CARRY_MIN_BATCH = 500  # an advance whose batches hold fewer timers keeps nothing from batch to batch


def _carry_token(clock_id: str) -> object:
    """What must not change for an advance's run to keep rows from one batch to the next: None (keep nothing)
    unless the clock is advancing, which refuses outside writes; else the runtime's own writes to its objects
    since (a receipt) and what the refusal does not cover (a brand's calendars: timers.batch.carry_token)."""
    row = TestClock.objects.filter(pk=clock_id).values_list("status", "runtime_writes").first()
    if row is None or row[0] != TestClock.Status.ADVANCING:
        return None
    return row[1], batches.carry_token(clock_id)


def _unmark_after_failure(clock_id: str, to: datetime) -> None:
    # An advance that failed here leaves its clock as it found it, ready, where it can (a transaction the
    # failure broke is rolled back with the mark in it; a process killed leaves it advancing, and a worker
    # finishes the advance).
    try:
        if connection.in_atomic_block and connection.needs_rollback:
            return
        TestClock.objects.filter(pk=clock_id, status=TestClock.Status.ADVANCING, advance_to=to).update(
            status=TestClock.Status.READY, advance_to=None)
    except DatabaseError:
        log.warning("could not mark test clock %s ready again after a failed advance", clock_id)


def _execute(domain: str, run: Callable[[bool, datetime | None], Run], floor: datetime | None,
             floor_now: Callable[[], datetime | None]) -> RunStats:
    """Run the tick with the handlers' writes kept by each batch; a batch whose kept write fails is rolled
    back whole, and the run goes on from it, as after a crash, with every write in its firing's savepoint,
    where a bad row is pushed out alone."""
    first = run(True, floor)
    try:
        return first.execute()
    except KeptWriteFailed as exc:
        log.warning("%s: %s; the batch runs again with each write in its firing's savepoint", domain, exc)
    stats = run(False, floor_now()).execute()
    _add(stats, first.landed)
    return stats


def _mark_ready(clock: TestClock, at: datetime) -> None:
    TestClock.objects.filter(pk=clock.id).update(status=TestClock.Status.READY, advance_to=None, redeliver=False)
    Event.objects.create(domain=clock.id, brand_id=clock.brand_id, type="test_clock.ready", subject=clock.id,
                         owed_at=at, data={"frozen_time": iso_z(at)}, fired_at=at)


def run_requested_advances(*, limit: int = 10) -> int:
    """Claim clocks whose advance was requested (SKIP LOCKED) and run each; returns how many ran."""
    done = 0
    for _ in range(limit):
        with transaction.atomic():
            clock = (
                TestClock.objects.select_for_update(skip_locked=True)
                .filter(status=TestClock.Status.ADVANCING)
                .order_by("created_at")
                .first()
            )
            if clock is None:
                return done
            # The row lock is only the claim; the advance itself runs under the domain's lease.
            target, redeliver = clock.advance_to, clock.redeliver
        with lease(clock.id, wait=False) as got:
            if not got:
                continue  # another worker holds this clock
            clock.refresh_from_db()
            if clock.status != TestClock.Status.ADVANCING:
                continue
            try:
                advance(clock.id, target, redeliver=redeliver)
            except TestClockDeleted:
                pass  # deleted while it advanced: the delete finishes under the lease we let go
            except LeaseLost:
                log.warning("lost the lease on %s mid-advance; its new holder goes on", clock.id)
            except Exception as exc:  # pushed out, never crash-looped
                log.exception("advance of %s failed", clock.id)
                TestClock.objects.filter(pk=clock.id, status=TestClock.Status.ADVANCING).update(
                    status=TestClock.Status.INTERNAL_FAILURE, failure=str(exc)[:500])
            done += 1
    return done


# -- the live clocks ---------------------------------------------------------------------------------
def turn_batches() -> int:
    """How many batches a live domain runs in its turn before the loop moves on to the next owed domain."""
    return int(settings.KEEPING_TIME.get("LIVE_TURN_BATCHES", 1))


def live_domains() -> list[str]:
    """Every brand's live clock that has ever had a timer (a LiveClock row each, made on arming)."""
    return list(LiveClock.objects.order_by("id").values_list("id", flat=True))


def owed_domains(now: datetime) -> list[tuple[str, datetime]]:
    """The live domains with a timer owed at ``now``, earliest owed first: one statement, an index probe each."""
    return [(d, nxt) for d, nxt, _ in _live_next(now)]


def _live_next(now: datetime | None = None) -> list[tuple[str, datetime, str | None]]:
    """Each live domain's next owed instant (owed at ``now``, if given) and the holder of its last lease, earliest
    owed first: one statement, an index probe each."""
    nxt = Timer.objects.filter(domain=OuterRef("pk"), status="armed").order_by("owed_at").values("owed_at")[:1]
    rows = LiveClock.objects.annotate(nxt=Subquery(nxt), last=_last_holder())
    rows = rows.filter(nxt__isnull=False) if now is None else rows.filter(nxt__lte=now)
    return sorted(rows.values_list("id", "nxt", "last"), key=lambda r: (r[1], r[0]))


def _last_holder():
    """The holder of a live domain's last lease, while its database session lives (PostgreSQL): a worker that
    was stopped or killed keeps no domain waiting for it."""
    if connection.vendor == "postgresql":
        return RawSQL("SELECT l.holder FROM timers_lease l WHERE l.domain = timers_liveclock.id "
                      f"AND (l.session = '' OR l.session IN ({_LIVE_SESSIONS}))", ())
    return Subquery(Lease.objects.filter(domain=OuterRef("pk")).values("holder")[:1])


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
            _add(total, live_step(clock, domain=d, trace=trace, on=on, settle=settle))
        return total
    with lease(domain) as held:
        stats = _turn(clock, domain, held, trace=trace, on=on)
        pin = _pin(domain)
        if pin is None or pin.owed:
            stats.add_sends(outbox.settle(domain) if settle else outbox.deliver(domain))
        return stats


def _turn(clock: Clock, domain: str, held: Held, *, trace: bool = False, on: set[str] | None = None,
          batches: int | None = None) -> RunStats:
    """Run ``domain`` to now under ``held``; with ``batches``, stop after that many (``stopped``: more is owed)."""
    now = clock.now()
    pin = _pin(domain)
    if pin is not None:
        pin.write_ready()
        floor = pin.clock.frozen_time
        # A turn at the instant the last one ran to (the live loop's look again after one that fired) finds only
        # what was armed since: looked for in one statement. After the wall moved the turn runs: the loop sleeps
        # until something is owed.
        if not pin.owed and floor >= now and pin.idle(now, mark=False):
            return RunStats(domain=domain, start=floor, to=now)
    else:
        floor = _position(domain)
    guard = _Guard(held, batches=batches, clock_id=None if is_live(domain) else domain, pinned=pin is not None)

    def run(keep_writes: bool, floor: datetime | None) -> Run:
        return Run(domain=domain, floor=floor, to=now, store=get_store(), now=clock.now, trace=trace, on=on,
                   on_flush=lambda at: _set_position(domain, at), deliver=lambda taken: _deliver(domain, taken),
                   guard=guard, keep_writes=keep_writes)

    stats = _execute(domain, run, floor, lambda: _reread(domain, pin))
    if stats.stopped:
        if guard.why == "lease":
            raise _lost(domain, held)
        if guard.why == "deleted":
            raise _stopped(domain)
        return stats  # the turn is over; the rest stays owed, from the position the last batch wrote
    if pin is not None:
        if pin.clock.frozen_time < now:  # else the last flush wrote ``now``; no fence either (Pinned)
            _set_position(domain, now)
        return stats
    with transaction.atomic():
        if not held.fence():
            raise _lost(domain, held)
        _set_position(domain, now)
    return stats


_SUMMED = ("fired", "armed", "held", "superseded", "refused", "failed", "replayed", "runaways", "instants",
           "batches")


def _add(total: RunStats, stats: RunStats) -> None:
    for name in _SUMMED:
        setattr(total, name, getattr(total, name) + getattr(stats, name))
    total.passes = max(total.passes, stats.passes)
    if stats.start is not None and (total.start is None or stats.start < total.start):
        total.start = stats.start
    total.trace.extend(stats.trace)
    total.add_sends(stats.sends)


def finish_deletes() -> int:
    """Finish deletes whose requester died between marking the clock and voiding it."""
    done = 0
    for clock_id in TestClock.objects.filter(status=TestClock.Status.DELETING).values_list("id", flat=True)[:10]:
        with lease(clock_id, wait=False) as got:
            if got and test_clock_finish_delete(clock_id=clock_id):
                done += 1
    return done


_LIVE_POSITION = ("INSERT INTO timers_liveclock (id, position) VALUES (%b, %b) "
                  "ON CONFLICT (id) DO UPDATE SET position = excluded.position")


def _position(domain: str) -> datetime | None:
    if is_live(domain):
        return LiveClock.objects.filter(pk=domain).values_list("position", flat=True).first()
    return TestClock.objects.filter(pk=domain).values_list("frozen_time", flat=True).first()


def _reread(domain: str, pin: Pinned | None) -> datetime | None:
    """The position a run goes on from after a batch was rolled back (``_execute``): read, and a pin told,
    since the rolled-back batch may have moved it before its kept writes failed."""
    at = _position(domain)
    if pin is not None and at is not None:
        pin.clock.frozen_time = at
    return at


def _set_position(domain: str, at: datetime) -> None:
    if is_live(domain) and connection.vendor == "postgresql":
        # The live tick's batch of one writes this once a batch: one prepared statement on the tick's cursor.
        cur, _, prepare = kept_cursors()
        cur.execute(_LIVE_POSITION, [domain, at], prepare=prepare)
    elif is_live(domain):
        updated = LiveClock.objects.filter(pk=domain).update(position=at)
        if not updated:
            LiveClock.objects.get_or_create(pk=domain, defaults={"position": at})
    else:
        _set_frozen(domain)(at)


def next_owed(domain: str) -> datetime | None:
    return (
        Timer.objects.filter(domain=domain, status="armed")
        .order_by("owed_at")
        .values_list("owed_at", flat=True)
        .first()
    )


def _owed_now(domain: str, now: datetime) -> bool:
    return Timer.objects.filter(domain=domain, status="armed", owed_at__lte=now).exists()




HELD_ELSEWHERE_POLL = timedelta(milliseconds=100)
SEND_POLL = 1.0  # seconds: how often the sender thread looks for sends no step nudged it about
PARTITIONS_EVERY = 3600.0  # seconds (monotonic) between looks at history's months ahead (timers/history.py)
TEST_CLOCK_POLL = 1.0  # seconds: how often a busy live loop looks for test clocks' work no wake named


class Worker:
    """The loop behind `tick --forever`: each step returns whether it found work (healthchecks' shape).

    With no ``domain``, every brand's live clock: each owed domain whose lease this worker can take gets a
    turn of ``batches`` batches, then the next; domains held by other workers are theirs. With a ``domain``
    (a test clock under `tick --compare`), that domain alone, run to now each step.
    """

    def __init__(self, clock: Clock | None = None, *, domain: str | None = None, until: datetime | None = None,
                 test_clocks: bool = True, batches: int | None = None):
        self.clock = clock or WallClock()
        self.domain = domain
        self.until = until
        self.test_clocks = test_clocks
        self.batches = batches or turn_batches()
        self.stop = threading.Event()
        self.wakes = 0
        self.steps = 0
        self.fired = 0
        self.turns: dict[str, int] = {}  # turns this worker ran, by domain
        self.woken: list[str] = []  # domains a NOTIFY named, run first in the next step
        self.lost: list[str] = []  # domains whose lease was taken over mid-turn (the fence stopped this worker)
        self._held_elsewhere = False
        self._listening = False
        self._others: set[str] = set()  # live domains another worker runs, as the last sleep's look found them
        self._test_clocks_at: float | None = None  # time.monotonic() when a step last looked at test clocks
        self._sender: threading.Thread | None = None  # run()'s sends, beside the firing (see _send_loop)
        self._send_now = threading.Event()
        self._sender_stop = threading.Event()

    def step(self) -> bool:
        asked = any(not is_live(d) for d in self.woken)  # a test clock's advance was asked (a bare wake)
        if self.domain is not None:
            stats = live_step(self.clock, domain=self.domain, settle=False)
            self.fired += stats.fired
            found = stats.fired + stats.refused + stats.failed > 0
        else:
            found = self._live_turns()
        self.steps += 1
        if self.test_clocks and self._test_clocks_due(asked):
            found = run_requested_advances() > 0 or found
            found = finish_deletes() > 0 or found
        if self._sender is not None and self._sender.is_alive():
            if found:
                self._send_now.set()  # what this step fired may have sends: the sender takes them now
            return found
        pin = None if self.domain is None or self.test_clocks else _pin(self.domain)
        if pin is not None and not pin.owed:
            return found  # the turn's last batch found nothing owed (Pinned)
        sends = outbox.deliver(None if self.test_clocks else self.domain, stop=self.stop)
        return found or sends.done > 0

    def _test_clocks_due(self, asked: bool) -> bool:
        """Whether this step looks for test clocks' work. Every step, but on the live loop on PostgreSQL,
        where an asked advance wakes the workers by name: then when one did, and else once a TEST_CLOCK_POLL
        (a lost wake, a requester that died mid-delete). Looking every step was three round trips a step,
        on a busy live loop the most of a step's statements besides its batch."""
        if not isinstance(self.clock, WallClock) or connection.vendor != "postgresql":
            return True
        now = time.monotonic()  # a poll's interval, not a domain's time
        if asked or self._test_clocks_at is None or now - self._test_clocks_at >= TEST_CLOCK_POLL:
            self._test_clocks_at = now
            return True
        return False

    def _send_loop(self) -> None:
        """run()'s sender: the outbox delivered from a thread of its own (its own database session, so its
        own claims), so a slow far end or a long line of sends never holds up a firing. Nudged by each step
        that fired; else it looks every SEND_POLL. A send that raises is the outbox's to retry; an error
        of the loop itself is logged and the loop goes on after a pause, never silently gone."""
        try:
            while not (self.stop.is_set() or self._sender_stop.is_set()):
                try:
                    done = outbox.deliver(None if self.test_clocks else self.domain, stop=self._sender_stop).done
                except Exception:
                    log.exception("the sender failed; trying again in %ss", SEND_POLL)
                    connection.close()
                    done = 0
                if not done:
                    self._send_now.wait(SEND_POLL)
                    self._send_now.clear()
        finally:
            connection.close()

    def _theirs(self, nxt: datetime, last: str | None, now: datetime) -> bool:
        """Another worker ran this domain's last turn and what is owed there is not yet ``affinity()`` late: it
        is that worker's to run. Without this, every worker woke at every owed instant of every domain and all
        but one found it held (four workers on one brand: four steps a fire, the API's cores taken)."""
        return last is not None and last != holder() and nxt > now - affinity()

    def _next_wake(self) -> datetime | None:
        """The next owed instant of a domain this worker runs; another's, an ``affinity()`` later."""
        now = self.clock.now()
        rows = _live_next()
        # A note for another's domain changes nothing here: its worker runs it, and this one's look for a stuck
        # worker is an affinity after the domain's earliest owed timer, which a later arming cannot move.
        self._others = {d for d, nxt, last in rows if self._theirs(nxt, last, now)}
        return min((nxt + affinity() if d in self._others else nxt for d, nxt, _ in rows), default=None)

    def _live_turns(self) -> bool:
        now = self.clock.now()
        owed = [d for d, nxt, last in _live_next(now) if not self._theirs(nxt, last, now)]
        # A domain a NOTIFY named goes first: an early timer armed there waits for no other brand's turn.
        woken = [d for d in self.woken if d in set(owed)]
        self.woken.clear()
        found = held_elsewhere = False
        for n, domain in enumerate(dict.fromkeys([*woken, *owed])):
            if self.stop.is_set():
                break
            if n and not _owed_now(domain, self.clock.now()):
                # Another worker ran it since this step looked: taking it would write for nothing. (The first
                # was looked at just now, by owed_domains.)
                continue
            with lease(domain, wait=False) as held:
                if held is None:
                    held_elsewhere = True  # another worker runs it
                    continue
                try:
                    stats = _turn(self.clock, domain, held, batches=self.batches)
                except LeaseLost:
                    log.warning("lost the lease on %s; its new holder goes on", domain)
                    self.lost.append(domain)
                    continue
            self.fired += stats.fired
            self.turns[domain] = self.turns.get(domain, 0) + 1
            found = found or stats.stopped or stats.fired + stats.refused + stats.failed > 0
        self._held_elsewhere = held_elsewhere
        return found

    def run(self) -> None:
        """Step until nothing is found, then sleep until the next owed timer (or a wake-up). Sends go from a
        thread beside it (``_send_loop``), on PostgreSQL: each thread has its own session there. Not on a
        compare's pinned clock (Pinned): its way's sends are uncommitted, seen by this session alone, and a
        sender's own session could only claim the clock's committed rows and commit them sent to the way's
        capture, outside the way that is rolled back; the step delivers them instead, as on SQLite."""
        if connection.vendor == "postgresql" and self._sender is None and (self.domain is None
                                                                          or _pin(self.domain) is None):
            self._sender = threading.Thread(target=self._send_loop, name="kt-sender", daemon=True)
            self._sender.start()
        try:
            self._run()
        finally:
            if self._sender is not None:
                self._sender_stop.set()
                self._send_now.set()
                self._sender.join(timeout=60)
                self._sender = None
                if not self.stop.is_set():  # it ran to ``until``: what its last steps owe leaves now, as before
                    outbox.deliver(None if self.test_clocks else self.domain, stop=self.stop)

    def _run(self) -> None:
        if isinstance(self.clock, WallClock) and connection.vendor == "postgresql":
            # Listening before the first look: an arming that commits between that look and the first sleep
            # is heard, not lost to a poll's wait (under load a worker's first step took seconds).
            self._listen()
        made_at = None
        while not self.stop.is_set():
            if made_at is None or time.monotonic() - made_at > PARTITIONS_EVERY:
                # History's months ahead (timers/history.py): a fire never waits for one, as the default
                # partition takes its row, but a month of its own is what can be kept or dropped whole.
                history.ensure_partitions()
                made_at = time.monotonic()
            if self.step():
                continue
            nxt = next_owed(self.domain) if self.domain is not None else self._next_wake()
            if self.until is not None and (nxt is None or nxt > self.until):
                return
            if self._held_elsewhere:
                # What is owed now is another worker's to run: look again soon, in case it lets go or dies.
                soon = self.clock.now() + HELD_ELSEWHERE_POLL
                nxt = soon if nxt is None or nxt < soon else nxt
            self.wakes += 1
            self._sleep(nxt)

    def _listen(self):
        connection.ensure_connection()
        conn = connection.connection
        if not self._listening:
            conn.execute("LISTEN keeping_time_wake")
            self._listening = True
        return conn

    def _sleep(self, nxt: datetime | None) -> None:
        if not isinstance(self.clock, WallClock) or connection.vendor != "postgresql":
            self.clock.sleep_until(nxt, self.stop)
            return
        # Live on PostgreSQL: sleep until the next owed timer, or until arming one earlier NOTIFYs us with
        # its domain and owed time (delivered at the arming's commit; the sleep's cap is the poll fallback).
        delay = self.clock.max_sleep if nxt is None else (nxt - self.clock.now()).total_seconds()
        delay = max(0.0, min(delay, self.clock.max_sleep))
        conn = self._listen()
        # What arrived while this worker was busy waits in the connection's backlog (every near arming
        # notifies): take all of it now, each domain once. Taking one a sleep let the backlog grow with the
        # arming rate (memory, and a worker that never slept). A note for a timer owed after this sleep ends
        # wakes nobody: the step after the sleep finds it. Waking on each let four idle workers each run a
        # step per arming, their queries taking the cores the API arms with (issue 26).
        wake_at = self.clock.now().timestamp() + delay
        woken: dict[str, None] = {}
        for note in conn.notifies(timeout=0):
            _wakes(note.payload, wake_at, woken, self._others)
        while not woken:
            left = wake_at - self.clock.now().timestamp()
            if left <= 0:
                break
            # One packet at a time (stop_after=1 yields all of a packet), so no note is read and dropped.
            for note in conn.notifies(timeout=left, stop_after=1):
                _wakes(note.payload, wake_at, woken, self._others)
        self.woken.extend(d for d in woken if d not in self.woken)


def _wakes(payload: str, wake_at: float, woken: dict[str, None], others: set[str] = frozenset()) -> None:
    """(A payload is services.wake_payload's.) Add the payload's domain to ``woken`` if it asks for a wake before ``wake_at`` (epoch seconds)."""
    domain, _, owed = payload.partition(" ")
    if not domain or domain in others:
        return
    try:
        if owed and float(owed) >= wake_at:
            return  # the sleep ends before it is owed
    except ValueError:
        pass  # a payload of another shape wakes, as a bare domain does
    woken[domain] = None
