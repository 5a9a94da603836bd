"""The loop behind `tick --forever`: the brands' live clocks' turns, the test clocks' requested work, the sends.

One worker holds a clock domain at a time (a Lease row, timers/lease.py), and every batch it writes is
fenced by the lease's epoch, so more workers scale across domains, never by racing on one. A live domain's
lease is kept between turns a moment apart, and let go before a longer sleep. Each brand's
live clock is its own domain; the loop gives each owed domain a turn of a few batches in turn
(timers/live.py), so one brand's backlog never holds another's owed timers back. Requested advances are
claimed with SKIP LOCKED (timers/advance.py). Between steps it sleeps until the next owed instant, or until a
wake names a domain (LISTEN, where the database carries wakes); sends go from a thread beside it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta

import psycopg
from django.db import connection

from . import history, outbox
from .advance import LeaseLost, advance_slice, finish_deletes, pinned_on, run_requested_advances
from .clock import Clock, WallClock
from .lease import Kept, holder
from .live import affinity, live_next, live_step, next_owed, owed_now, turn, turn_batches
from .models import is_live
from .sql import sessions
from .sql.clocks import LiveNext
from .wakes import CHANNEL

log = logging.getLogger(__name__)


HELD_ELSEWHERE_POLL = timedelta(milliseconds=100)
RECONNECT_FIRST = 0.1  # seconds: the wait before connecting again after the database session was lost
RECONNECT_MOST = 5.0  # seconds: the longest of those waits, while the database stays gone
STOP_POLL = 0.2  # seconds: the longest a sleep listening for wakes goes without looking whether it was stopped
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
        self._listening: psycopg.Connection | None = None  # the session that LISTENs, once one does
        self._others: set[str] = set()  # live domains another worker runs, as the last sleep's look found them
        self._looked: list[LiveNext] | None = None  # the last step's live_next(), if it ran none
        self._queued = False  # whether the last step's turns left sends for the sender (or advances ran)
        self._test_clocks_at: float | None = None  # time.monotonic() when a step last looked at test clocks
        self._sender: threading.Thread | None = None  # run()'s sends, beside the firing (see _send_loop)
        self._send_now = threading.Event()
        self._sender_stop = threading.Event()
        self.reconnects = 0  # times this worker lost its database session and connected again (_reconnect)
        self._backoff: float | None = None  # the last wait before connecting again; None while connected
        self._kept = Kept()  # the live domains' leases kept between turns (let go before a longer sleep)

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
            self._kept.release()  # an advance may take a while: no live domain waits on this worker meanwhile
            # A slice of each advance asked for, then the live turns again (live first): one that yielded is
            # looked at again in the next step, not a poll later.
            ran = run_requested_advances(slice_seconds=advance_slice() if self.domain is None else None)
            if ran:
                self._test_clocks_at = None
            deleted = finish_deletes()
            self._queued = self._queued or ran > 0 or deleted > 0  # an advance's unsent sends are the sender's
            found = ran > 0 or deleted > 0 or found
        if self._sender is not None and self._sender.is_alive():
            if self._queued:
                # What this step fired left sends: the sender takes them now. Not on every step that fired: a
                # noop fire nudged it into two statements of its own, its backend's CPU beside the next fire's.
                self._send_now.set()
            return found
        pin = None if self.domain is None or self.test_clocks else pinned_on(self.domain)
        if pin is not None and not pin.owed:
            return found  # the turn's last batch found nothing owed (Pinned)
        sends = outbox.deliver(None if self.test_clocks else self.domain, stop=self.stop)
        return found or sends.done > 0

    def _test_clocks_due(self, asked: bool) -> bool:
        """Whether this step looks for test clocks' work. Every step, but on the live loop on PostgreSQL,
        where an asked advance wakes the workers by name: then when one did, and else once a TEST_CLOCK_POLL
        (a lost wake, a requester that died mid-delete). Looking every step was three round trips a step,
        on a busy live loop the most of a step's statements besides its batch."""
        if not isinstance(self.clock, WallClock) or not sessions.hears_wakes():
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
                except Exception as exc:
                    if sessions.connection_lost(exc):  # the step's loop says so too; one line here
                        log.info("the sender lost its database connection; trying again in %ss", SEND_POLL)
                    else:
                        log.exception("the sender failed; trying again in %ss", SEND_POLL)
                    with contextlib.suppress(Exception):
                        connection.close()
                    done = 0
                if not done:
                    self._send_now.wait(SEND_POLL)
                    self._send_now.clear()
        finally:
            with contextlib.suppress(Exception):
                connection.close()

    def _theirs(self, nxt: datetime, last: str | None, now: datetime) -> bool:
        """Another worker ran this domain's last turn and what is owed there is not yet ``affinity()`` late: it
        is that worker's to run. Without this, every worker woke at every owed instant of every domain and all
        but one found it held (four workers on one brand: four steps a fire, the API's cores taken)."""
        return last is not None and last != holder() and nxt > now - affinity()

    def _next_wake(self) -> datetime | None:
        """The next owed instant of a domain this worker runs; another's, an ``affinity()`` later. From the
        step's own look when it ran no turn (nothing owed then, nothing written since: what was armed since is
        in the listening session's backlog, which the sleep reads first), else looked up again."""
        now = self.clock.now()
        rows, self._looked = (live_next() if self._looked is None else self._looked), None
        # A note for another's domain changes nothing here: its worker runs it, and this one's look for a stuck
        # worker is an affinity after the domain's earliest owed timer, which a later arming cannot move.
        self._others = {d for d, nxt, last, _ in rows if self._theirs(nxt, last, now)}
        return min((nxt + affinity() if d in self._others else nxt for d, nxt, *_ in rows), default=None)

    def _live_turns(self) -> bool:
        now = self.clock.now()
        # Every domain's next owed instant, not only those owed now: a step that finds nothing owed hands its
        # rows to the sleep (_next_wake), one statement a step where the step and the sleep each sent one.
        rows = live_next()
        self._looked = rows
        self._queued = False
        owed = [d for d, nxt, last, _ in rows if nxt <= now and not self._theirs(nxt, last, now)]
        # Whose each domain's last lease was (its session alive): where it was this worker's or nobody's, the
        # take's look for another holder would find none, and the take goes straight to its conditional upsert.
        ours = {d for d, _, last, _ in rows if last is None or last == holder()}
        # Each domain's position as the look read it: where this worker kept the lease since its last turn there,
        # nobody else moved it, and the turn starts from it without reading it again.
        positions = {d: pos for d, _, _, pos in rows}
        # A domain a NOTIFY named goes first: an early timer armed there waits for no other brand's turn.
        woken = [d for d in self.woken if d in set(owed)]
        self.woken.clear()
        found = held_elsewhere = False
        for n, domain in enumerate(dict.fromkeys([*woken, *owed])):
            if self.stop.is_set():
                break
            if n and not owed_now(domain, self.clock.now()):
                # Another worker ran it since this step looked: taking it would write for nothing. (The first
                # was looked at just now, by owed_domains.)
                continue
            self._looked = None  # a turn writes: the sleep looks again
            kept = domain in self._kept
            try:
                with self._kept.turn(domain, look=domain not in ours) as held:
                    if held is None:
                        held_elsewhere = True  # another worker runs it
                        continue
                    stats = turn(self.clock, domain, held, batches=self.batches,
                                 position=(positions[domain],) if kept else None)
            except LeaseLost:  # the kept lease, if it was one, is let go with it
                log.warning("lost the lease on %s; its new holder goes on", domain)
                self.lost.append(domain)
                continue
            self._queued = self._queued or stats.sends is not None
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
        if sessions.threads_send_apart() and self._sender is None and (self.domain is None
                                                                       or pinned_on(self.domain) is None):
            self._sender = threading.Thread(target=self._send_loop, name="kt-sender", daemon=True)
            self._sender.start()
        try:
            self._run()
        finally:
            self._kept.release()
            if self._sender is not None:
                self._sender_stop.set()
                self._send_now.set()
                self._sender.join(timeout=60)
                self._sender = None
                if not self.stop.is_set():  # it ran to ``until``: what its last steps owe leaves now, as before
                    outbox.deliver(None if self.test_clocks else self.domain, stop=self.stop)

    def _run(self) -> None:
        made_at = None
        while not self.stop.is_set():
            try:
                if isinstance(self.clock, WallClock) and sessions.hears_wakes():
                    # Listening before the first look: an arming that commits between that look and the first
                    # sleep is heard, not lost to a poll's wait (under load a worker's first step took seconds).
                    # Again after a reconnect: a new session listens to nothing yet.
                    self._listen()
                if made_at is None or time.monotonic() - made_at > PARTITIONS_EVERY:
                    # History's months ahead (timers/history.py): a fire never waits for one, as the default
                    # partition takes its row, but a month of its own is what can be kept or dropped whole.
                    history.ensure_partitions()
                    made_at = time.monotonic()
                if self.step():
                    self._reconnected()
                    continue
                nxt = next_owed(self.domain) if self.domain is not None else self._next_wake()
                if self.until is not None and (nxt is None or nxt > self.until):
                    return
                if self._held_elsewhere:
                    # What is owed now is another worker's to run: look again soon, in case it lets go or dies.
                    soon = self.clock.now() + HELD_ELSEWHERE_POLL
                    nxt = soon if nxt is None or nxt < soon else nxt
                self.wakes += 1
                self._reconnected()
                if self._kept and (nxt is None or nxt - self.clock.now() > affinity() / 2):
                    # A sleep past a moment: the kept leases go, so a domain owed meanwhile waits on nobody.
                    self._kept.release()
                self._sleep(nxt)
            except Exception as exc:
                if not sessions.connection_lost(exc):
                    raise
                self._reconnect(exc)

    def _reconnect(self, exc: BaseException) -> None:
        """The database session is gone (a restart, a failover, a terminated backend, a dropped network): drop
        it and wait, longer each time it stays gone (RECONNECT_FIRST doubling to RECONNECT_MOST), then the loop
        goes on in a new session. What the lost step left is safe where it stopped: its batch was rolled back,
        its lease is free (its session is gone), a send it made is in doubt and asked about before it is sent
        again, and an advance it was running is still marked advancing, so the next step takes it up."""
        self.reconnects += 1
        first = self._backoff is None
        wait = RECONNECT_FIRST if self._backoff is None else min(self._backoff * 2, RECONNECT_MOST)
        self._backoff = wait
        log_at = log.warning if first else log.info
        log_at("lost the database connection (%s); connecting again in %.1fs",
               str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, wait)
        self._listening = None
        self._kept.forget()  # they went with the session
        with contextlib.suppress(Exception):
            connection.close()
        self.stop.wait(wait)

    def _reconnected(self) -> None:
        if self._backoff is not None:  # a step ran (or looked) in the new session
            log.warning("connected to the database again; going on")
            self._backoff = None

    def _listen(self) -> psycopg.Connection:
        conn = sessions.session()
        if self._listening is not conn:  # first, or a new session since (a reconnect): it listens to nothing yet
            conn = sessions.listen(CHANNEL)
            self._listening = conn
        return conn

    def _sleep(self, nxt: datetime | None) -> None:
        if not isinstance(self.clock, WallClock) or not sessions.hears_wakes():
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
            if self.stop.is_set():
                break  # SIGTERM: a signal's handler runs here, but the wait it interrupted would go on
            # One packet at a time (stop_after=1 yields all of a packet), so no note is read and dropped.
            for note in conn.notifies(timeout=min(left, STOP_POLL), stop_after=1):
                _wakes(note.payload, wake_at, woken, self._others)
        self.woken.extend(d for d in woken if d not in self.woken)


def _wakes(payload: str, wake_at: float, woken: dict[str, None], others: AbstractSet[str] = frozenset()) -> None:
    """(A payload is timers.wakes.wake_payload's.) Add the payload's domain to ``woken`` if it asks for a wake before ``wake_at`` (epoch seconds)."""
    domain, _, owed = payload.partition(" ")
    if not domain or domain in others:
        return
    try:
        if owed and float(owed) >= wake_at:
            return  # the sleep ends before it is owed
    except ValueError:
        pass  # a payload of another shape wakes, as a bare domain does
    woken[domain] = None

