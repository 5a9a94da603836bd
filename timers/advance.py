"""A test clock's advance: the run that fires every timer owed on the way to an instant, each instant in turn,
under the clock's lease; the advances the API requested, claimed with SKIP LOCKED; the deletes whose requester
died; and a compare's clock held still (``Pinned``), whose advances ask the database only for their own work.

Every batch is fenced by the lease's epoch and checked for the clock's liveness (``Guard``), and a batch whose
kept write failed runs again with each write in its firing's savepoint (``execute_run``): a brand's live
clock's turn (timers/live.py) runs on the same two. The clock refuses outside writes while it advances
(Stripe's rule), and is ready again once every send the advance owes has been made, has failed, or is in doubt.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from . import batch as batches
from . import outbox
from .batch import KeptWriteFailed
from .clock import wall_now
from .engine import Run, RunStats
from .errors import KeepingTimeError, NotFound, TestClockBackward, TestClockDeleted
from .gate import wake
from .lease import Held, current, lease
from .lease import ttl as lease_ttl
from .models import Event, TestClock
from .sql import clocks, leases, sessions
from .store import get_store
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
        self.owed = clocks.owes_sends(self.clock.id)

    def idle(self, to: datetime, *, mark: bool) -> bool:
        """Whether no armed timer is owed by ``to``. With ``mark`` (an advance's), the advance's mark goes with
        the look, and where nothing is owed the frozen time's move to ``to`` (the observers told, as a flush
        tells them); without, the frozen time is at ``to`` already (a turn at the instant the last ran to)."""
        owed = clocks.mark_idle(self.clock.id, to) if mark else clocks.owed_by(self.clock.id, to)
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


def pinned_on(domain: str) -> Pinned | None:
    """The pin on ``domain``, while this thread holds it under the lease the pin was made with."""
    pin = _pinned.get()
    if pin is None or pin.clock.id != domain or current(domain) is not pin.held:
        return None
    return pin


def deliver_batch(domain: str, taken: outbox.Taken | None = None, keeper: Keeper | None = None) -> outbox.DeliverStats:
    """A run's deliver, called after each batch that queued sends (``taken``: those the batch claimed for it;
    ``keeper``: the advance's, which keeps its lease through the sends and stops them once it is lost or the
    clock is being deleted)."""
    pin = pinned_on(domain)
    if pin is None:
        return outbox.deliver(domain, taken=taken, stop=keeper)
    pin.owed = True  # written after the batch's look (timers/store.py writes the sends last)
    # What one claim leaves is the look's to see, and the settle's to send.
    got = outbox.deliver(domain, once=True, taken=taken)
    pin.look()
    return got


def flush_frozen(clock_id: str) -> Callable[[datetime], None]:
    """A test clock's run's ``on_flush``: the frozen time moved to where the batch reached (a pinned clock's, a
    compare's way, looks at the outbox in the same statement), and the flush's observers told."""

    def write(at: datetime) -> None:
        pin = pinned_on(clock_id)
        owed = clocks.move_frozen(clock_id, at, look=pin is not None)
        if pin is not None:
            pin.owed = bool(owed)
            if at > pin.clock.frozen_time:
                pin.clock.frozen_time = at
        for report in _flush_observers.get():
            report(clock_id, at)

    return write


class LeaseLost(KeepingTimeError):
    """The domain's lease expired and another worker took it over: this one stopped before writing more."""

    code = "lease_lost"
    status = 409


class Guard:
    """The Run's guard, composed: the lease's fence first (it renews the lease and orders this batch after
    any taker), then the test clock's liveness, then the turn's budget of batches. Remembers why it stopped."""

    def __init__(self, held: Held, batches: int | None = None, *, clock_id: str | None = None,
                 pinned: bool = False):
        self.held = held
        self.clock_id = clock_id  # a test clock's liveness, checked with the fence in one statement
        self.pinned = pinned  # a compare's way (Pinned): the lease and the clock's status are known to hold
        self.left = batches
        self.why = ""
        self.until: float | None = None  # a slice's end (time.monotonic()): no batch begins after it but the first
        self._passed = 0

    def __call__(self) -> bool:
        decide = self.send()
        return decide is not None and decide()

    def send(self) -> Callable[[], bool] | None:
        """The guard's statement sent, and the function that reads its answer and decides: the Run sends it in
        one pipeline with the batch's claim (Run._open), which is read only once this says go on. None: it
        stops here without asking the database (the slice is over), and the batch claims nothing."""
        if self.until is not None and self._passed and time.monotonic() >= self.until:
            self.why = "slice"  # the advance yields here: the next slice goes on from this batch boundary
            return None
        if self.pinned:
            self.held.batches += 1
            return lambda: self._decide(True, True)
        if self.clock_id is not None:
            read_locking = self.held.fence_locking_sent(self.clock_id)

            def locking() -> bool:
                fenced, status = read_locking()
                return self._decide(fenced, status is not None and status not in TestClock.GONE)

            return locking
        read = self.held.fence_sent()
        return lambda: self._decide(read(), True)

    def _decide(self, fenced: bool, alive: bool) -> bool:
        if not fenced:
            self.why = "lease"
        elif not alive:
            self.why = "deleted"
        elif self.left is not None and self.left <= 0:
            self.why = "turn"
        else:
            if self.left is not None:
                self.left -= 1
            self._passed += 1
            return True
        return False


KEEP_EVERY = 1.0  # seconds: how often an advance's sends renew its lease and look whether the clock is being deleted


class Keeper:
    """Keeps an advance's lease while its holder sends between batches (a batch's sends, and the settle's).

    A batch's fence renews the lease only as the batch begins; one batch of thousands of fires has thousands
    of sends after it, at a slow far end minutes of them, and a lease that ran out under them was taken over by
    a second worker while the first was alive and sending (issue 36). The send loop asks ``is_set()`` before each
    send (outbox.Stop); once a KEEP_EVERY (or a third of the lease, if that is shorter) it renews the lease
    with the fence and reads the clock's status in the same statement. It says stop once the fence finds the
    lease taken over (this holder was paused past it: the new holder sends the rest) or the clock marked
    deleting: the unsent rows go back to pending, the next batch's guard stops the run, and a delete waits
    for at most one send and a KEEP_EVERY, where it waited for every send of the batch."""

    def __init__(self, held: Held, clock_id: str):
        self.held = held
        self.clock_id = clock_id
        self.why = ""  # "lease", "deleted" or "slice", once it said stop
        self.renewals = 0
        self.until: float | None = None  # a slice's end: the sends left then go to the sender, not this step
        self._at = time.monotonic()
        # Read once: is_set is asked before every send, and the settings' lookup was most of what it cost.
        self._every = min(KEEP_EVERY, lease_ttl().total_seconds() / 3)

    def is_set(self) -> bool:
        if self.why:
            return True
        now = time.monotonic()
        if self.until is not None and now >= self.until:
            self.why = "slice"  # what is unsent goes back to pending, for the worker's sender thread
            return True
        if now - self._at < self._every:
            return False
        self._at = now
        fenced, status = leases.fence_locking(domain=self.held.domain, holder=self.held.holder,
                                              epoch=self.held.epoch, expires=wall_now() + lease_ttl(),
                                              clock_id=self.clock_id)
        self.renewals += 1
        if not fenced:
            self.why = "lease"
        elif status is None or status in TestClock.GONE:
            self.why = "deleted"
        return bool(self.why)

    @property
    def voids(self) -> bool:
        """The sends it stopped are voided, not put back (outbox._release): the clock is being deleted."""
        return self.why == "deleted"


def lease_lost(domain: str, held: Held) -> LeaseLost:
    return LeaseLost(f"the lease on {domain} (epoch {held.epoch}) expired and another worker took it over; "
                     "this run stopped at a batch boundary and wrote nothing after it")


def clock_deleted(clock_id: str) -> TestClockDeleted:
    return TestClockDeleted(f"test clock {clock_id} was deleted while it advanced; it stopped at a batch boundary "
                            "and nothing landed after test_clock.deleted")


def advance(clock_id: str, to: datetime, *, redeliver: bool = False, trace: bool = False,
            on: set[str] | None = None, slice_seconds: float | None = None) -> RunStats:
    """Advance a test clock to ``to``, firing every timer owed on the way, each instant in turn.

    ``slice_seconds`` (an advance the API asked for, run by a worker): run about that long and yield, the clock
    still advancing at the position its last batch wrote, for the worker's live turns; the next slice goes on
    from there, as a tick goes on after a crash, so the record is the same. The slice's batches end within it,
    and the sends still owed as it ends go to the worker's sender thread. ``stats.sliced`` says it yielded."""
    with lease(clock_id) as held:
        pin = pinned_on(clock_id)
        clock = pin.clock if pin is not None else (
            TestClock.objects.exclude(status__in=TestClock.GONE).filter(pk=clock_id).first())
        if clock is None:
            raise NotFound(f"no test clock {clock_id!r}")
        if to < clock.frozen_time:
            raise TestClockBackward(backward_message(clock, to))
        start = clock.frozen_time
        guard = Guard(held, clock_id=clock.id, pinned=pin is not None)
        # A compare's way holds the lease's row locked for its length (Pinned): nothing to keep there.
        keeper = Keeper(held, clock.id) if pin is None else None
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
        if slice_seconds is not None and not marked and pin is None and keeper is not None:
            # Only an advance marked by its requester slices: one marked here is put back to ready on its way out.
            guard.until = keeper.until = time.monotonic() + slice_seconds
        if idle:
            assert pin is not None  # only a pinned advance is found idle
            _finish_pinned(pin, to, marked)
            return RunStats(domain=clock.id, start=start, to=to)
        # So the run may keep its timers and its handlers' rows from one batch to the next (Run.carry): a
        # batch of thousands reads them once, not once a batch. Not worth a statement for small batches.
        carry = (lambda: _carry_token(clock.id)) if size >= CARRY_MIN_BATCH else None

        def run(keep_writes: bool, floor: datetime | None) -> Run:
            made = Run(domain=clock.id, floor=floor, to=to, store=get_store(), redeliver=wake if redeliver else None,
                       trace=trace, on=on, on_flush=flush_frozen(clock.id),
                       deliver=lambda taken: deliver_batch(clock.id, taken, keeper), guard=guard, keep_writes=keep_writes,
                       batch_size=size, carry=carry, claim_sends=True)
            if guard.until is not None and slice_seconds is not None:
                made.batch_seconds = min(made.batch_seconds, slice_seconds)  # a batch ends within the slice
            return made

        try:
            stats = execute_run(clock.id, run, clock.frozen_time, lambda: reread(clock.id, pin))
            if (stats.stopped and guard.why == "slice") or (keeper is not None and keeper.why == "slice"):
                stats.sliced = True  # yielded: still advancing, at the position the last batch wrote
                return stats
            if stats.stopped:
                raise lease_lost(clock.id, held) if guard.why == "lease" else clock_deleted(clock.id)
            # Ready only once every send the advance owes has been made, has failed, or is in doubt with its
            # reason.
            if pin is None or pin.owed or redeliver:
                stats.add_sends(outbox.settle(clock.id, stop=keeper))
                if keeper is not None and keeper.why == "slice":
                    stats.sliced = True  # its sends outlasted the slice: the sender makes them; ready in a later one
                    return stats
            if pin is not None:
                _finish_pinned(pin, to, marked)
                return stats
            with transaction.atomic():
                if not held.fence():  # the last write is fenced like every batch
                    raise lease_lost(clock.id, held)
                # The row lock orders this against a delete's mark: a clock marked gone is never moved or readied.
                current = TestClock.objects.select_for_update().filter(pk=clock.id).first()
                if current is None or current.status in TestClock.GONE:
                    raise clock_deleted(clock.id)
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


def execute_run(domain: str, run: Callable[[bool, datetime | None], Run], floor: datetime | None,
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
    stats.add(first.landed)
    return stats


def _mark_ready(clock: TestClock, at: datetime) -> None:
    TestClock.objects.filter(pk=clock.id).update(status=TestClock.Status.READY, advance_to=None, redeliver=False)
    Event.objects.create(domain=clock.id, brand_id=clock.brand_id, type="test_clock.ready", subject=clock.id,
                         owed_at=at, data={"frozen_time": iso_z(at)}, fired_at=at)


def advance_slice() -> float | None:
    """How long a worker runs a requested advance before it yields to its live turns (KT_ADVANCE_SLICE_SECONDS;
    0: to the end, as before)."""
    seconds = float(settings.KEEPING_TIME.get("ADVANCE_SLICE_SECONDS", 1.0))
    return seconds if seconds > 0 else None


BUSY_TRIES = 5  # times an advance is run again at once when SQLite's lock was another writer's
BUSY_PAUSE = 0.05  # seconds before the first of those, doubling


def run_requested_advances(*, limit: int = 10, slice_seconds: float | None = None) -> int:
    """Claim clocks whose advance was requested (SKIP LOCKED) and run each (with ``slice_seconds``, a slice of
    each, once per call: the clocks still advancing are the next call's); returns how many ran."""
    done = 0
    seen: set[str] = set()
    began = time.monotonic()
    for _ in range(limit):
        if slice_seconds is not None and done and time.monotonic() - began >= slice_seconds:
            break  # a slice's worth of advances this step: the live turns go next (first asked, first done)
        with transaction.atomic():
            clock = (
                TestClock.objects.select_for_update(skip_locked=True)
                .filter(status=TestClock.Status.ADVANCING).exclude(pk__in=seen)
                .order_by("created_at")
                .first()
            )
            if clock is None:
                return done
            # The row lock is only the claim; the advance itself runs under the domain's lease.
            target, redeliver = clock.advance_to, clock.redeliver
            seen.add(clock.id)
        with lease(clock.id, wait=False) as got:
            if not got:
                continue  # another worker holds this clock
            clock.refresh_from_db()
            if clock.status != TestClock.Status.ADVANCING:
                continue
            assert target is not None  # an advancing clock's row says where to
            for busy in range(BUSY_TRIES + 1):
                if not _advance_claimed(clock.id, target, redeliver=redeliver, slice_seconds=slice_seconds):
                    break
                if busy < BUSY_TRIES:
                    time.sleep(BUSY_PAUSE * 2**busy)
            else:
                log.warning("advance of %s: the database stayed busy; the next step goes on", clock.id)
            done += 1
    return done


def _advance_claimed(clock_id: str, target: datetime, *, redeliver: bool, slice_seconds: float | None) -> bool:
    """Run a claimed clock's advance under its lease; True when SQLite's lock was another writer's (an API request
    reading the clock): the batch rolled back whole, the advance goes on from its last committed batch, and it is
    not the clock's failure. Any other error pushes the clock out (internal_failure), never crash-looped."""
    try:
        advance(clock_id, target, redeliver=redeliver, slice_seconds=slice_seconds)
    except TestClockDeleted:
        pass  # deleted while it advanced: the delete finishes under the lease we let go
    except LeaseLost:
        log.warning("lost the lease on %s mid-advance; its new holder goes on", clock_id)
    except Exception as exc:
        if sessions.connection_lost(exc):
            # Not the advance's failure but the session's: the clock stays advancing and its lease dies with the
            # session, so the next step (in a new session) takes the advance up where its last batch committed.
            # Pushing it out would need the session that is gone.
            raise
        if sessions.database_busy(exc):
            return True
        log.exception("advance of %s failed", clock_id)
        TestClock.objects.filter(pk=clock_id, status=TestClock.Status.ADVANCING).update(
            status=TestClock.Status.INTERNAL_FAILURE, failure=str(exc)[:500])
    return False


def reread(domain: str, pin: Pinned | None) -> datetime | None:
    """The position a run goes on from after a batch was rolled back (``execute_run``): read, and a pin told,
    since the rolled-back batch may have moved it before its kept writes failed."""
    at = clocks.position(domain)
    if pin is not None and at is not None:
        pin.clock.frozen_time = at
    return at


def finish_deletes() -> int:
    """Finish deletes whose requester died between marking the clock and voiding it."""
    done = 0
    for clock_id in TestClock.objects.filter(status=TestClock.Status.DELETING).values_list("id", flat=True)[:10]:
        with lease(clock_id, wait=False) as got:
            if got and test_clock_finish_delete(clock_id=clock_id):
                done += 1
    return done
