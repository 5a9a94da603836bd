"""Outside sends, after the commit: one submission id per attempt, claimed with a lease, asked before resent.

A row names its transport (timers/transports.py: ``send(submission_id, payload) -> receipt`` and
``lookup(submission_id) -> receipt | None``, registered by name). This module is the control flow; its
statements, each beside its SQLite fallback, are timers/sql/outbox.py's.

A sender claims owed rows in sets (one statement, SKIP LOCKED) under a lease: ``claimed_by`` names its
database session and ``lease_until`` bounds the claim. While the lease holds and the session lives, no
other sender touches the row, so a slow send is never sent twice by two workers. A row whose sender died
(its session is gone: kill -9) or whose lease ran out is *in doubt*: the next sender asks the outside
system about that submission and sends only if it never arrived. Receipts are recorded in sets.

A domain may be *ordered* (``order_domains``: a webhook endpoint's, timers/webhooks.py): its rows leave one
after another in key order, never past one still owed. Its claim takes the owed rows in key order up to the
first that is not free to send (held by a live sender, or waiting out a backoff), one claimer at a time; a
failed send puts the rest of its claim back; each receipt is written right after its send.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db.models import Q

from .clock import wall_now
from .models import Outbox, TestClock
from .prepared import TickCursor
from .sql import outbox as statements
from .sql.sessions import sender_id, unflushed_session
from .transports import PermanentFailure, Transport, transport

log = logging.getLogger(__name__)


class Stop(Protocol):
    """What a send loop asks before each send whether to stop: a threading.Event (a worker's SIGTERM), or a
    test clock's lease keeper (timers/advance.py, Keeper: its holder lost it, or the clock is being deleted)."""

    def is_set(self) -> bool: ...


CLAIM = 200  # rows one claim takes
RECORD_EVERY = 0.5  # seconds between receipt writes (and lease renewals) while a claim is being sent
MAX_TRIES = 5  # sends that raised before a row is failed for good


# Called once a transport's submissions settle (sent, or failed for good): [(submission id, ok, receipt or error)].
_settled_hooks: dict[str, Callable[[list[tuple[str, bool, Any]]], None]] = {}
# Ordered domains, by id prefix: the one transport their rows use, and whether a domain is held (nothing of it
# is claimed while so).
_ordered: dict[str, tuple[str, Callable[[str], bool]]] = {}


def on_settled(name: str, hook: Callable[[list[tuple[str, bool, Any]]], None]) -> None:
    """Hear when ``name``'s submissions settle (a schedule's HTTP call closes its Run, or dead-letters it)."""
    _settled_hooks[name] = hook


def order_domains(prefix: str, *, transport: str, held: Callable[[str], bool] | None = None) -> None:
    """Send the rows of every domain whose id starts with ``prefix`` (all of ``transport``) in key order, one
    at a time, never past one still owed (head of line); ``held(domain)`` true keeps a domain's rows where
    they are."""
    _ordered[prefix] = (transport, held or (lambda domain: False))


def order_of(domain: str) -> tuple[str, Callable[[str], bool]] | None:
    """(transport, held) of an ordered domain (``order_domains``), or None: its rows leave in any order."""
    for prefix, order in _ordered.items():
        if domain.startswith(prefix):
            return order
    return None


def _notify(settled: list[tuple[str, str, bool, Any]]) -> None:
    by: dict[str, list[tuple[str, bool, Any]]] = {}
    for name, sid, ok, detail in settled:
        if name in _settled_hooks:
            by.setdefault(name, []).append((sid, ok, detail))
    for name, results in by.items():
        try:
            _settled_hooks[name](results)
        except Exception:  # the sends stand; what hears them must not undo or block them
            log.exception("settled hook of %s failed", name)


@dataclass
class DeliverStats:
    sent: int = 0  # sent now
    confirmed: int = 0  # in doubt, and the outside system had it: recorded without sending again
    failed: int = 0  # refused for good, or out of tries
    in_doubt: int = 0  # a send raised: kept, with its reason, for a later try that asks first
    held: int = 0  # left being sent by another live sender
    taken: int = 0  # claimed here, but taken over by another sender while this one was held up: not sent here

    def __iadd__(self, other: DeliverStats) -> DeliverStats:
        for f in ("sent", "confirmed", "failed", "in_doubt", "taken"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.held = other.held
        return self

    @property
    def done(self) -> int:
        return self.sent + self.confirmed + self.failed + self.in_doubt


@dataclass
class Claimed:
    id: str
    transport: str
    payload: dict[str, Any]
    in_doubt: bool  # someone claimed it before: ask the outside system first
    domain: str = ""  # its clock domain: every later write names it, so each stays on the domain's rows


@dataclass
class Taken:
    """A batch's own sends, written already claimed by this sender (``claim_ahead``): sent by ``deliver`` once
    the batch has committed, with no claim of their own."""

    rows: list[Claimed]
    sender: str
    claimed_at: float  # monotonic, no later than the lease's start


def claim_ahead(cur: TickCursor) -> tuple[str, datetime, float]:
    """For sends a transaction is about to write and this same session sends once it commits (a test clock's
    advance, batch by batch): this sender, the lease's end by the database's clock, and the monotonic instant
    the lease counts from (just before it was read). Written so, a row is written once before its receipt, where
    a claim wrote it a second time; a sender that dies before sending leaves it in doubt, as after a claim."""
    me = sender_id()
    at = time.monotonic()
    return me, statements.lease_end(cur, _lease()), at


def _lease() -> timedelta:
    return timedelta(seconds=float(settings.KEEPING_TIME.get("OUTBOX_LEASE_SECONDS", 30)))


def _backoff(tries: int) -> timedelta:
    return timedelta(seconds=min(300, 2 ** tries))


# -- claiming, in sets -----------------------------------------------------------------------------
def _claim(domain: str, me: str, limit: int) -> list[Claimed]:
    """Claim a set of one domain's owed rows (an ordered domain's: its head, in key order), in the order they
    are to be sent."""
    order = order_of(domain)
    if order is not None:
        rows = statements.claim_ordered(domain, order[0], me, limit, _lease())
    else:
        rows = statements.claim(domain, me, limit, _lease())
    return [Claimed(*row) for row in rows]


def _fail(sid: str, domain: str, error: str, *, permanent: bool, max_tries: int = MAX_TRIES,
          retry_after: Callable[[dict[str, Any], int, datetime], timedelta | None] | None = None) -> bool:
    """A send that raised: in doubt (asked first next time, after a backoff), or failed for good. A transport
    with ``retry_after(payload, tries, created_at)`` decides the backoff itself (None: failed for good)."""
    row = Outbox.objects.filter(domain=domain, pk=sid).values("tries", "payload", "created_at").first()
    if row is None:
        return True
    tries = row["tries"] + 1
    if retry_after is not None:
        wait = None if permanent else retry_after(row["payload"], tries, row["created_at"])
        final = wait is None
    else:
        final = permanent or tries >= max_tries
        wait = _backoff(tries)
    # Never over a receipt, nor over a void (its endpoint or clock is gone): those stand.
    Outbox.objects.filter(domain=domain, pk=sid).exclude(status__in=["sent", "voided"]).update(
        status="failed" if final else "sending", error=error[:500], tries=tries, lease_until=None,
        next_try_at=None if final else wall_now() + wait)  # type: ignore[operator]  # not final: a wait was chosen
    return final


def _release(ids: list[str], me: str, domains: list[str], stop: Stop | None = None) -> None:
    # Claimed but never attempted (stopping): back to pending, no doubt about them. Voided instead where the stop
    # says their test clock is being deleted (advance.Keeper): pending, another sender could claim them before
    # the delete voids what is pending, and send them after it.
    if ids:
        void = bool(getattr(stop, "voids", False))
        Outbox.objects.filter(domain__in=domains, pk__in=ids, claimed_by=me, status="sending").update(
            **({"status": "voided", "error": VOIDED_BY_DELETE} if void else {"status": "pending"}),
            claimed_by="", lease_until=None)


TEST_CLOCK_PREFIX = "tc_"  # a test clock's id (timers.models.clocks: new_id("tc"))
WATCH_EVERY = 1.0  # seconds: how often a claim of a test clock's sends looks whether the clock is being deleted


class _ClockWatch:
    """The stop of a claim of test clocks' rows: the caller's, and once a WATCH_EVERY a look at whether a clock of
    the claim is being deleted; then the rows not yet attempted are voided (``_release``), never sent after the
    delete. The claims of a worker's sender thread need it: they carry the sends an advance's slice left them."""

    def __init__(self, clocks: list[str], inner: Stop | None):
        self.clocks = clocks
        self.inner = inner
        self._gone = False
        self._at = time.monotonic()

    @property
    def voids(self) -> bool:
        return self._gone or bool(getattr(self.inner, "voids", False))

    def is_set(self) -> bool:
        if self._gone or (self.inner is not None and self.inner.is_set()):
            return True
        now = time.monotonic()
        if now - self._at >= WATCH_EVERY:
            self._at = now
            self._gone = TestClock.objects.filter(pk__in=self.clocks, status__in=TestClock.GONE).exists()
        return self._gone


def _send_claimed(rows: list[Claimed], me: str, stats: DeliverStats, stop: Stop | None,
                  claimed_at: float) -> None:
    settled: list[tuple[str, str, bool, Any]] = []
    clocks = sorted({r.domain for r in rows if r.domain.startswith(TEST_CLOCK_PREFIX)})
    if clocks:
        stop = _ClockWatch(clocks, stop)
    try:
        _send_claimed_rows(rows, me, stats, stop, settled, claimed_at)
    finally:
        _notify(settled)


# One send's outcome: (the receipt, confirmed without sending, or what it raised).
Attempted = tuple["dict[str, Any] | None", bool, "Exception | None"]


def _attempt(t: Transport | None, row: Claimed) -> Attempted:
    """One row's outside call: (receipt, confirmed without sending, or what it raised). The transport's ask and
    send only, nothing written here: a transport that allows it (``concurrent_sends``) runs this in a sender
    thread, and every write stays with the claim's own database connection."""
    try:
        if t is None:
            raise PermanentFailure(f"no transport {row.transport!r} is configured")
        receipt = t.lookup(row.id) if row.in_doubt else None
        if receipt is not None:
            return receipt, True, None
        return t.send(row.id, row.payload), False, None
    except Exception as exc:
        return None, False, exc


_senders: list[concurrent.futures.ThreadPoolExecutor] = []


def send_threads() -> int:
    """The most sends of one claim in flight at once (a transport's concurrent_sends, bounded): KT_SEND_THREADS."""
    return max(1, int(settings.KEEPING_TIME.get("SEND_THREADS", 4)))


def _sender_pool() -> concurrent.futures.ThreadPoolExecutor:
    if not _senders:
        _senders.append(concurrent.futures.ThreadPoolExecutor(send_threads(), thread_name_prefix="kt-send"))
    return _senders[0]


os.register_at_fork(after_in_child=_senders.clear)  # a forked worker makes its own threads


def _send_claimed_rows(rows: list[Claimed], me: str, stats: DeliverStats, stop: Stop | None,
                       settled: list[tuple[str, str, bool, Any]], claimed_at: float) -> None:
    """Send a claim's rows, writing receipts and renewing the lease as it goes.

    A row is sent only while at least half its lease is left, by this process's monotonic clock from just
    before the statement that claimed or renewed it: a sender that was frozen (a stop, a long pause, a
    swapped-out VM) renews before its next send and drops the rows another sender took meanwhile, instead
    of sending them a second time. What no sender can close is a freeze of more than half a lease between
    that check and the request leaving: the far end sees the same submission id twice, and a far end that
    keeps submissions by id answers the second with the first's receipt.

    The rows leave in order; a transport with ``concurrent_sends`` has up to that many (at most send_threads()) in
    flight at once, each started only after the checks above, and each outcome (a receipt, a failed try, a
    failure for good) is written here as it comes back, by this thread."""
    receipts: list[tuple[str, dict[str, Any] | None]] = []
    domains = sorted({r.domain for r in rows})
    # An ordered domain's claim (one domain) goes one row after another: each receipt written at once, and
    # nothing sent past a row that failed.
    ordered = len(domains) == 1 and order_of(domains[0]) is not None
    half = _lease().total_seconds() / 2
    fresh_until = claimed_at + half
    taken: set[str] = set()
    names = sorted({r.transport for r in rows})
    # A transport may read what its sends need for the whole set at once (webhooks: events, endpoints, log).
    for name in names:
        prepare = getattr(transport(name), "prepare", None)
        if prepare is not None:
            prepare([(r.id, r.payload) for r in rows if r.transport == name])
    # Receipts of a far end that takes a send twice commit without waiting for their flush (statements.record).
    relaxed = all(getattr(transport(name), "relaxed_receipts", False) for name in names)
    width = 1 if ordered else max(1, min([send_threads(), *(getattr(transport(n), "concurrent_sends", 1)
                                                             for n in names)]))
    # The sends in flight, and where each comes back when done (a queue: no waiter per future and per wait).
    flying = 0
    back: queue.SimpleQueue[tuple[Claimed, Transport | None, Attempted]] = queue.SimpleQueue()

    def outcome(row: Claimed, t: Transport | None, result: Attempted) -> bool:
        """Write what one send came to; False when an ordered domain must stop behind it."""
        nonlocal receipts
        receipt, confirmed, exc = result
        if exc is None:
            if confirmed:
                stats.confirmed += 1
            else:
                stats.sent += 1
            settled.append((row.transport, row.id, True, receipt))
            own = getattr(t, "record_receipt", None)
            if own is not None:  # the transport writes what it keeps of the send with it (webhooks: the log row)
                own(row.id, receipt, relaxed=relaxed)
                return True
            receipts.append((row.id, receipt))
            if ordered:  # a kill -9 then leaves at most the one send in flight in doubt
                statements.record(receipts, relaxed=relaxed)
                receipts = []
            return True
        permanent = isinstance(exc, PermanentFailure)
        log.warning("send %s failed: %s", row.id, exc)
        statements.record(receipts, relaxed=relaxed)
        receipts = []
        tries = getattr(t, "max_tries", None)
        if _fail(row.id, row.domain, f"{type(exc).__name__}: {exc}", permanent=permanent,
                 max_tries=tries(row.payload) if tries is not None else MAX_TRIES,
                 retry_after=getattr(t, "retry_after", None)):
            settled.append((row.transport, row.id, False, f"{exc}"))
            stats.failed += 1
            return True
        stats.in_doubt += 1
        return not ordered

    def land(block: bool) -> None:
        # Write the outcome of one send that came back (of every one in flight, when ``block``).
        nonlocal flying
        while flying:
            row, t, result = back.get()
            flying -= 1
            outcome(row, t, result)
            if not block:
                return

    def fly(row: Claimed, t: Transport | None) -> None:
        result: Attempted = (None, False, RuntimeError("the send's thread stopped before it finished"))
        try:
            result = _attempt(t, row)
        finally:  # always back: the claim's thread waits for every send it started
            back.put((row, t, result))

    last = time.monotonic()
    # Receipts of a far end that takes a send twice: the session skips every commit's flush wait while the claim
    # is sent, so a receipt that is one statement commits as that statement alone.
    with unflushed_session() if relaxed else contextlib.nullcontext():
        try:
            for n, row in enumerate(rows):
                if stop is not None and stop.is_set():
                    land(True)
                    statements.record(receipts, relaxed=relaxed)
                    _release([r.id for r in rows[n:] if r.id not in taken], me, domains, stop)
                    return
                now = time.monotonic()
                if now >= fresh_until or (receipts and now - last >= RECORD_EVERY):
                    statements.record(receipts, relaxed=relaxed)
                    receipts, last = [], now
                    rest = [r.id for r in rows[n:] if r.id not in taken]
                    held = statements.renew(me, rest, _lease())
                    fresh_until = now + half
                    if len(held) < len(rest):
                        lost = set(rest) - held
                        taken |= lost
                        stats.taken += len(lost)
                        log.warning("%d claimed sends were taken over by another sender while this one was held "
                                    "up; not sending them", len(lost))
                if row.id in taken:
                    continue
                t = transport(row.transport)
                if width == 1:
                    if not outcome(row, t, _attempt(t, row)):
                        # the rest waits behind it, in order: back to pending, never attempted here
                        _release([r.id for r in rows[n + 1:] if r.id not in taken], me, domains)
                        return
                    continue
                while flying >= width:
                    land(False)
                _sender_pool().submit(fly, row, t)
                flying += 1
            land(True)
        finally:
            if flying:  # an error here: the sends already out still land before the claim is left
                land(True)
        statements.record(receipts, relaxed=relaxed)


def deliver(domain: str | None, *, limit: int | None = None, stop: Stop | None = None,
            once: bool = False, taken: Taken | None = None) -> DeliverStats:
    """Send everything owed that no live sender holds (settling what is in doubt first); in sets.

    With no domain (the worker loop), every domain that owes sends, a set from each in turn: each claim
    stays on one domain's rows, and a domain with a backlog does not hold the others' sends back.

    ``once``: one claim, and no count of what other senders hold, for a caller that looks at what is left
    itself (a compare's pinned clock, timers/advance.py: its rows are uncommitted, no other sender sees them).
    ``taken``: a batch's sends written claimed by this sender (``claim_ahead``), sent first, CLAIM at a time, as
    claims are (a session that is not the one they name, after a reconnect, leaves them to the claims: in doubt)."""
    stats = DeliverStats()
    me = sender_id()
    if taken is not None and taken.sender == me:
        for n in range(0, len(taken.rows), CLAIM):
            rows = taken.rows[n:n + CLAIM]
            if stop is not None and stop.is_set():
                rest = taken.rows[n:]
                _release([r.id for r in rest], me, sorted({r.domain for r in rest}), stop)
                break
            _send_claimed(rows, me, stats, stop, taken.claimed_at)
    active = [domain] if domain is not None else statements.owed_domains()
    while active:
        still = []
        for d in active:
            if (stop is not None and stop.is_set()) or (limit is not None and stats.done >= limit):
                active = []
                break
            order = order_of(d)
            if order is not None and order[1](d):
                continue  # held (a disabled endpoint): its rows wait where they are
            claimed_at = time.monotonic()  # before the claim: the lease runs from no earlier than this
            rows = _claim(d, me, CLAIM if limit is None else min(CLAIM, limit - stats.done))
            if rows:
                _send_claimed(rows, me, stats, stop, claimed_at)
                still.append(d)
        else:
            active = [] if once else still
    if not once:
        stats.held = _held_elsewhere(domain, me)
    return stats


def _held_elsewhere(domain: str | None, me: str) -> int:
    qs = Outbox.objects.filter(status="sending", lease_until__gt=wall_now()).exclude(claimed_by=me)
    if domain is not None:
        qs = qs.filter(domain=domain)
    return qs.count()


def settle(domain: str, *, wait: float | None = None, stop: Stop | None = None) -> DeliverStats:
    """Deliver what the domain owes and wait for sends other live senders hold, so that on return every
    owed send has been made, has failed, or is in doubt with its reason (``Outbox.error``); or until ``stop``."""
    stats = deliver(domain, stop=stop)
    deadline = time.monotonic() + (wait if wait is not None else 2 * _lease().total_seconds())
    while stats.held and time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        time.sleep(0.05)
        stats += deliver(domain, stop=stop)
    return stats


def owed(domain: str | None = None) -> dict[str, int]:
    """What the outbox still owes: pending, being sent (leased), in doubt (a send raised)."""
    qs = Outbox.objects.filter(status__in=["pending", "sending"])
    if domain is not None:
        qs = qs.filter(domain=domain)
    now: datetime = wall_now()
    return {
        "pending": qs.filter(status="pending").count(),
        "sending": qs.filter(status="sending", lease_until__gt=now).count(),
        "in_doubt": qs.filter(status="sending").filter(Q(lease_until__isnull=True) | Q(lease_until__lte=now)).count(),
    }


VOIDED_BY_DELETE = "test_clock.deleted"


def void(domain: str) -> int:
    """A deleted test clock's sends that never left: voided, never sent. Returns how many the delete voided in
    all, with those its advance's sender voided as it stopped (``_release``)."""
    Outbox.objects.filter(domain=domain, status="pending").update(status="voided", error=VOIDED_BY_DELETE)
    return Outbox.objects.filter(domain=domain, status="voided", error=VOIDED_BY_DELETE).count()
