"""The tick: fire every owed timer of one clock domain exactly once, in one fixed order.

Order at one instant: owed time, place (1 cycle … 8 money), when the owner opened, key byte by byte.
A firing that arms a timer owed at or before its instant fires it in a further pass of the same instant
(a fixpoint, at most MAX_PASSES deep). A test clock visits every instant in turn, so an advance is never
a gap; the live loop visits them the same way after an outage, with the wall's time as `now`.

Fast and exact together: one indexed query takes the next batch of armed timers in tick order; they
fire in memory from a heap, into which every timer a firing arms is merged; the batch's effects are
written with set statements in one transaction (timers/store.py). The order and the record are exactly
as if each instant were processed alone, because a heap entry is only taken while it sorts before the
last row the query returned (the horizon): anything still in the database sorts after it.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import heapq
import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from django.conf import settings
from django.db import transaction

from . import batch as batches
from . import gcpause, handlers
from .domains import domain_seed
from .errors import Refused
from .ids import new_id
from .keys import PLACES, Key, parse
from .lease import ttl
from .models import LATE_BUCKETS
from .rearm import UNHOLDABLE_KINDS, Rearm, rearm_cause

if TYPE_CHECKING:
    from .outbox import DeliverStats, Taken

log = logging.getLogger(__name__)

ZERO = timedelta(0)
LATE_LOGGED = timedelta(minutes=5)
HOLDING_REFRESH = 250  # fires after which Run.holding() looks at the heap again
# Timers Run.holding() shows ahead of the tick, at most: enough for a set read to cover the next thousands of
# fires, while taking them (every HOLDING_REFRESH fires) costs the heap's size, not a large batch's.
READ_AHEAD = 8000
# A batch's wall time, at most, as a share of the lease: the lease is renewed as a batch starts, and a batch that
# outlived it could not commit (its fence would find the domain taken), so a large batch on a slow machine ends
# early and the next one renews. Looked at every BATCH_CLOCK_EVERY fires.
BATCH_LEASE_SHARE = 1 / 3
BATCH_CLOCK_EVERY = 256
HORIZON_REST_LIMIT = 20_000  # timers of the horizon's instant read at once by Run._rest_of_horizon()
OWNER_READ_LIMIT = 200  # an owner with more timers than this is read a key at a time (Run._lookup)
OWNERS_READ_AHEAD = 500  # owners of held timers read with the one asked after, at most (Run._lookup)
# What a run keeps in memory from one batch to the next (Run._trim) is a cache with a size, not a list of all it
# touched: the timers on the heap, and the most recently touched owners (each whole) whose other timers come to a
# share of a batch (at least KEEP_AT_LEAST timers). An advance of 1M timers then holds what one of 100k does, and
# one of 3,000 subscribers (every one firing at each instant) what one of 1,000 does.
KEEP_BATCHES = 0.25
KEEP_AT_LEAST = 500
# A batch ends early once it holds this many timers off the heap (fired, read with their owners): a firing
# that reads whole owners could otherwise fill memory within one large batch. The handlers' rows carried to
# the next batch are capped alike (a cache that would pass the cap is read again instead).
HOLD_LIMIT = 75_000
CARRIED_ROWS_LIMIT = 75_000
# A batch ends early, too, once the rows it writes at its flush (commits, events, sends), held in memory until
# then, pass this many: about a year of 100 Tax Plan subscribers (29,300). A domain's fires write several rows
# each, with their payloads and the handlers' kept writes beside them (about 4 KB a fire), so a batch of 50,000
# fires held 100 MB or more at its flush, and the peak RSS of a year grew with the subscribers up to that.
BATCH_ROWS_LIMIT = 32_000
TIMER_FIELDS = (
    "id", "key", "owner", "kind", "place", "handler", "status", "owed_at", "opened_at", "armed_at",
    "fired_at", "late_by", "attempt", "wakes", "version", "superseded_by", "by", "held_since", "held_by",
    "remaining", "armed_by", "data", "brand_id", "tick_pass",
)  # fmt: skip


# A row field a partial Item leaves out (a test's Item of a key alone) is None, as a stored row's never is: typed
# as the column, defaulted through Any.
_LEFT_OUT: Any = None


@dataclass(slots=True, eq=False)
class Item:
    """A timer in memory while the tick holds it: the row's fields (TIMER_FIELDS, in that order) plus its place
    in this run. Compared by identity (``eq=False``), as the heap and the run's maps hold it."""

    id: str = _LEFT_OUT
    key: str = _LEFT_OUT
    owner: str = _LEFT_OUT
    kind: str = _LEFT_OUT
    place: int = _LEFT_OUT
    handler: str = _LEFT_OUT
    status: str = _LEFT_OUT
    owed_at: datetime | None = None
    opened_at: datetime = _LEFT_OUT
    armed_at: datetime = _LEFT_OUT
    fired_at: datetime | None = None
    late_by: timedelta | None = None
    attempt: int = _LEFT_OUT
    wakes: int = _LEFT_OUT
    version: str = _LEFT_OUT
    superseded_by: str = _LEFT_OUT
    by: str = _LEFT_OUT
    held_since: datetime | None = None
    held_by: str = _LEFT_OUT
    remaining: timedelta | None = None
    armed_by: str = _LEFT_OUT
    data: dict[str, Any] = _LEFT_OUT
    brand_id: str = _LEFT_OUT
    tick_pass: int | None = None
    domain: str | None = None  # the run's, once it holds the item
    new: bool = False  # armed in this run: inserted at the flush
    dirty: bool = field(init=False)  # written at the flush
    pass_no: int = field(default=1, init=False)
    instant: datetime = field(default=_LEFT_OUT, init=False)  # set when the run takes it (None until then)
    gen: int = field(default=0, init=False)  # bumped whenever its heap entries go stale
    unverified: bool = field(default=False, init=False)  # armed here without asking the database (Run._verify)
    was: str | None = field(init=False)  # the status as stored: a row already in history is written there

    def __post_init__(self) -> None:
        self.dirty = self.new
        self.was = self.status

    def sort_key(self) -> SortKey:
        # Python compares str by code point, which is UTF-8 byte order: the same as collation "C".
        return (self.instant, self.pass_no, self.owed_at, self.place, self.opened_at, self.key)


# An item's place in tick order: (instant, pass, owed_at, place, opened_at, key). The horizon is the last row a
# batch's query returned, as one; the store's query goes on after its last four.
SortKey: TypeAlias = tuple[datetime, int, "datetime | None", int, datetime, str]
After: TypeAlias = tuple["datetime | None", int, datetime, str]
# A heap entry: the sort key, a sequence number (ties), the item's gen when pushed (stale if it moved on), the item.
Entry: TypeAlias = tuple[datetime, int, "datetime | None", int, datetime, str, int, int, Item]

# What a firing proposes (Firing.ops), in order, each tagged with its kind; Run._apply applies them.
ArmOp: TypeAlias = tuple[  # key, timer id, owed_at, handler, data, opened_at, version, what
    Literal["arm"], Key, str, datetime, str, dict[str, Any], datetime, str, "str | None"]
SupersedeOp: TypeAlias = tuple[Literal["supersede"], str, str, str]  # key, by, successor
HoldOp: TypeAlias = tuple[Literal["hold"], str, str]  # key, by
ResumeOp: TypeAlias = tuple[Literal["resume"], str, "datetime | None"]  # key, cap
RetimeOp: TypeAlias = tuple[Literal["retime"], str, datetime, str]  # key, owed_at, by
RepinOp: TypeAlias = tuple[Literal["repin"], str, str]  # key, version
SendOp: TypeAlias = tuple[Literal["send"], str, str, dict[str, Any], int, int]  # submission, transport, payload,
# attempt, seq
Op: TypeAlias = ArmOp | SupersedeOp | HoldOp | ResumeOp | RetimeOp | RepinOp | SendOp
# What a firing records: type, subject, data, key (None: the firing timer's).
Recorded: TypeAlias = tuple[str, str, dict[str, Any], "str | None"]

# The rows a batch writes (Run's buffers, the store's write): a commit (id, domain, key, timer id, outcome, code,
# at); an event (id, domain, brand id, type, subject, owed_at, key, data, fired_at, late_by); a send (id, domain,
# brand id, key, attempt, transport, payload, created_at, seq); a tally (domain, kind, outcome, late_by bucket,
# fires, late seconds); a repinned timer (id, version).
CommitRow: TypeAlias = tuple[str, str, str, str, str, str, datetime]
EventRow: TypeAlias = tuple[str, str, str, str, str, "datetime | None", str, dict[str, Any], datetime,
                            "timedelta | None"]
SendRow: TypeAlias = tuple[str, str, str, str, int, str, dict[str, Any], datetime, int]
TallyRow: TypeAlias = tuple[str, str, str, int, int, float]
VersionRow: TypeAlias = tuple[str, str]


class Store(Protocol):
    """The tick's reads and writes (timers/store.py: PostgresStore, OrmStore)."""

    def fetch(self, domain: str, to: datetime, after: After | None, limit: int) -> list[Item]: ...

    def fetch_sent(self, domain: str, to: datetime, after: After | None, limit: int) -> Callable[[], list[Item]]:
        """``fetch`` sent (inside ``pipelined``), its rows read by the function it returns."""
        ...

    def pipelined(self) -> contextlib.AbstractContextManager[object]:
        """The statements sent inside go in one round trip, their answers read after it (PostgreSQL)."""
        ...

    def load(self, domain: str, key: str) -> Item | None: ...

    def load_owners(self, domain: str, owners: list[str], limit: int) -> list[Item]: ...

    def load_many(self, domain: str, keys: list[str]) -> list[Item]: ...

    def write(self, *, domain: str, new: list[Item], changed: list[Item], commits: list[CommitRow],
              events: list[EventRow], sends: list[SendRow], tallies: Sequence[TallyRow] = (),
              versions: Sequence[VersionRow] = (), also: Callable[[], None] | None = None,
              claim_sends: bool = False) -> Taken | None: ...


class Redelivered(Protocol):
    @property
    def replayed(self) -> bool: ...


class Redeliver(Protocol):
    """The wake path a batch's fired timers are delivered through again (timers.gate.wake)."""

    def __call__(self, *, domain: str, timer_ids: list[str]) -> Sequence[Redelivered]: ...


@dataclass
class TraceRow:
    kind: str  # fired | armed | held | superseded | refused | failed | replayed | runaway
    pass_no: int
    owed_at: datetime | None
    fired_at: datetime | None
    place: int
    timer_kind: str
    owner: str
    what: str
    children: list[TraceRow] = field(default_factory=list)


@dataclass
class RunStats:
    domain: str
    start: datetime | None
    to: datetime
    fired: int = 0
    armed: int = 0
    held: int = 0
    superseded: int = 0
    refused: int = 0
    failed: int = 0
    replayed: int = 0
    runaways: int = 0
    passes: int = 0
    instants: int = 0
    batches: int = 0
    stopped: bool = False  # the run's guard stopped it at a batch (its test clock was deleted)
    sliced: bool = False  # an advance that yielded at its slice's end, still advancing (timers/advance.py)
    sends: DeliverStats | None = None  # the outbox's, once the run has settled what it owes
    trace: list[TraceRow] = field(default_factory=list)

    def add_sends(self, got: DeliverStats | None) -> None:
        if got is not None:
            if self.sends is None:
                self.sends = got
            else:
                self.sends += got

    def add(self, stats: RunStats) -> None:
        """Count another run's stats in (a run again after a kept write failed, a tick over every live clock)."""
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(stats, name))
        self.passes = max(self.passes, stats.passes)
        if stats.start is not None and (self.start is None or stats.start < self.start):
            self.start = stats.start
        self.trace.extend(stats.trace)
        self.add_sends(stats.sends)


_SUMMED = ("fired", "armed", "held", "superseded", "refused", "failed", "replayed", "runaways", "instants",
           "batches")


def _passed() -> Callable[[], bool] | None:
    return lambda: True


def _capped(caches: dict[str, batches.Cache]) -> dict[str, batches.Cache]:
    """The handlers' caches to carry, while their rows stay within CARRIED_ROWS_LIMIT; the rest are read again."""
    kept, rows = {}, 0
    for name, cache in caches.items():
        if rows + len(cache) <= CARRIED_ROWS_LIMIT:
            rows += len(cache)
            kept[name] = cache
    return kept


class Firing:
    """What a handler sees and proposes through. Nothing it proposes lands unless the gate commits it."""

    __slots__ = ("run", "timer", "instant", "now", "pass_no", "events", "ops", "what", "_key", "instead")

    def __init__(self, run: Run, item: Item, instant: datetime, pass_no: int):
        self.run = run
        self.timer = item
        self.instant = instant
        self.now = run.now
        self.pass_no = pass_no
        self.events: list[Recorded] = []
        self.ops: list[Op] = []
        self.what = ""
        self._key: Key | None = None
        self.instead: tuple[str, str] | None = None

    @property
    def key(self) -> Key:
        if self._key is None:
            self._key = parse(self.timer.key)
        return self._key

    @property
    def domain(self) -> str:
        return self.run.domain

    def holding(self, handler_names: tuple[str, ...]) -> list[Item]:
        """The armed timers the tick holds next with one of these handlers (``Run.holding``): what a handler
        may read ahead for, with one set query, before the firings that will ask."""
        return self.run.holding(handler_names)

    def record(self, type: str, *, subject: str | None = None, data: dict[str, Any] | None = None,
               key: str | None = None) -> None:
        self.events.append((type, subject or self.timer.owner, data or {}, key))

    def arm(self, key: str, *, owed_at: datetime, handler: str | None = None, data: dict[str, Any] | None = None,
            opened_at: datetime | None = None, version: str | None = None, what: str | None = None) -> str:
        k = parse(key)
        timer_id = new_id("tmr", seed=f"{domain_seed(self.run.domain)}|{key}")
        self.ops.append(("arm", k, timer_id, owed_at, handler or k.kind, data or {},
                         opened_at or self.timer.opened_at, self.timer.version if version is None else version,
                         what))
        return timer_id

    def supersede(self, key: str, *, by: Rearm | str, successor: str = "") -> None:
        """End a timer. With a successor it is a re-arm, whose cause must be on the closed list; without
        one it only ends the timer (job.delivered, …), and nothing is armed in its place."""
        if successor:
            by = rearm_cause(by)
        self.ops.append(("supersede", key, str(by), successor))

    def superseded_instead(self, *, by: str, successor: str) -> None:
        """Do not fire: this timer is recorded superseded, ``superseded_by`` the ``successor`` timer (already
        armed and owed by now) that stands for it. A gap rule (clock rungs after a gap: only the latest owed
        notice or escalate is sent), not a re-arm: nothing is armed in its place, and nothing else the
        handler proposed lands. No commit is made, so a later wake finds it superseded, never replayed."""
        self.instead = (by, successor)

    def hold(self, key: str, *, by: Rearm, who: str = "") -> None:
        """Hold an armed timer (``held_by`` is ``who``, else the cause). A clock's rung or due timer is
        never held: the proposal is refused with rung_not_holdable."""
        by = rearm_cause(by)
        if parse(key).kind in UNHOLDABLE_KINDS:
            raise Refused("rung_not_holdable", f"{key} rings on its clock's date: clock rungs are never held",
                          {"key": key})
        self.ops.append(("hold", key, who or str(by)))

    def resume(self, key: str, *, cap: datetime | None = None) -> None:
        self.ops.append(("resume", key, cap))

    def retime(self, key: str, *, owed_at: datetime, by: Rearm) -> None:
        """Move an armed timer under its own key (a run rung whose clock moved before it rang); ``by`` is
        the cause from the closed list, kept in the timer's ``by``."""
        self.ops.append(("retime", key, owed_at, str(rearm_cause(by))))

    def repin(self, key: str, *, version: str) -> None:
        """Pin an armed or held timer to ``version`` under its own key and owed time (a clock's repin keeps
        the timers the newer bundle arms alike): what it arms from then on is pinned there too."""
        self.ops.append(("repin", key, version))

    def state(self, key: str) -> tuple[str, datetime | None] | None:
        """A timer's status and owed time as the tick sees it now, with what this firing has proposed for it
        so far: a handler reads its own proposal as code outside the tick reads its own writes (a firing
        that moves two dates moves a deadline that follows them twice, @1 then @2)."""
        item = self.run._lookup(key, self.timer)
        got = None if item is None else (item.status, item.owed_at)
        for op in self.ops:
            if op[0] == "arm":
                if got is None and str(op[1]) == key:  # arming a key that is there changes nothing
                    got = ("armed", op[3])
            elif got is None or op[1] != key:
                continue
            elif op[0] == "supersede" and got[0] in ("armed", "held"):
                got = ("superseded", got[1])
            elif op[0] == "retime" and got[0] == "armed":
                got = ("armed", op[2])
            elif op[0] == "hold" and got[0] == "armed":
                got = ("held", got[1])
            elif op[0] == "resume" and got[0] == "held":
                got = ("armed", got[1])
        return got

    def owed_by_now(self, key: str) -> tuple[str, datetime | None] | None:
        """``state(key)`` for a question only a timer owed by now can answer yes to (a later rung owed by
        now). Every armed timer owed before the last row the batch's query returned is in memory, so below
        that point this asks the database nothing; at or past it, it asks as ``state`` does."""
        run = self.run
        if key in run._unverified:
            run._verify()
        item = run._by_key.get(key)
        if item is None and run._horizon is not None:
            now = max(self.now, self.instant)
            if now > run._horizon[0] or not run._rest_of_horizon():
                return self.state(key)
            item = run._by_key.get(key)  # at the horizon's own instant: the rest of it is in memory now
        return None if item is None else (item.status, item.owed_at)

    def new_owner(self, owner: str) -> None:
        """``owner``'s row was made by this firing (a job, a clock just opened), so none of its timers is stored:
        what it arms needs no look in the database. (Had the row been there, its insert fails the batch.)"""
        self.run._owners.add(owner)

    def absent(self, keys: set[str] | list[str]) -> None:
        """Keys the handler found in no timer with one set query in this batch (a schedule's next fires, read
        ahead): arming one of them asks the database nothing more (Run._verify), where a chain of fires, each
        arming the next, would ask once a fire. Forgotten when the batch is written."""
        self.run._absent.update(keys)

    def touched(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(key, owner, data) of the timers the run holds in memory since its last flush (armed in this batch,
        or changed): a query of the timers table does not see them yet, so domain code listing an owner's
        timers adds these. The rest of what the run holds is as the table has it."""
        return [(key, item.owner, item.data or {}) for key, item in self.run._touched.items() if item.dirty]

    def send(self, transport: str, payload: dict[str, Any]) -> str:
        """Queue an outside send; it leaves through the outbox after the commit. Each send of a firing is
        its own submission: (attempt, seq), seq counting the firing's sends from 0."""
        attempt = (self.timer.attempt or 0) + 1
        seq = sum(1 for op in self.ops if op[0] == "send")
        # The clock's own id, not its seed: a far end dedupes on the submission id, and a second load of a
        # scenario sends anew. Stable within the domain (a replay or a resume names the same submission);
        # submission ids never reach the record's hash.
        suffix = f"|{seq}" if seq else ""
        submission = new_id("sub", seed=f"{self.run.domain}|{self.timer.key}|{attempt}{suffix}")
        self.ops.append(("send", submission, transport, payload, attempt, seq))
        return submission


class Run:
    """One pass of the tick over one clock domain, from its floor to ``to``.

    ``now`` is the domain's "now" for handlers: None on a test clock (each instant is now as it is
    visited); the wall's (or a virtual wall's) time for the live loop.
    """

    def __init__(self, *, domain: str, floor: datetime | None, to: datetime, store: Store,
                 now: Callable[[], datetime] | None = None, redeliver: Redeliver | None = None,
                 trace: bool = False,
                 on: set[str] | None = None, on_flush: Callable[[datetime], None] | None = None,
                 deliver: Callable[[Taken | None], DeliverStats | None] | None = None,
                 guard: Callable[[], bool] | None = None,
                 keep_writes: bool = True, batch_size: int | None = None,
                 carry: Callable[[], object] | None = None, claim_sends: bool = False):
        cfg = settings.KEEPING_TIME
        # Handlers' row writes kept by the batch and sent as set statements (timers/batch.py); False writes
        # each in its firing's savepoint, the way a batch whose kept write failed runs again.
        self.keep_writes = keep_writes
        self.domain = domain
        self.floor = floor
        self.to = to
        self.store = store
        self.now_fn = now
        # The wake path each batch's fired timers are delivered through a second time, after its commit
        # (timers.gate.wake, which answers replayed: true with the first commit); None: each wake once.
        self.redeliver = redeliver
        self.tracing = trace
        self.on = on
        self.on_flush = on_flush
        self.deliver = deliver  # called with what the batch's write claimed for it (None: nothing claimed)
        # The batch writes its sends claimed by this session's sender (the store's claim_sends), for ``deliver``
        # to send once the batch commits: a deliver in this thread, on this connection (an advance's).
        self.claim_sends = claim_sends
        self.taken: Taken | None = None
        self.guard = guard  # checked at each batch: False stops the run before it writes anything more
        # A guard that can send its statement and read its answer later (timers.advance.Guard.send) goes in
        # one round trip with the batch's claim (Run._open).
        self._guard_send: Callable[[], Callable[[], bool] | None] | None = getattr(guard, "send", None)
        # What the run may keep in memory from one batch to the next (its timers, and the rows its handlers
        # read) while nobody else writes to the domain: given only while a test clock advances, when its
        # objects refuse outside writes (409 test_clock_advancing). It returns a token of the writes the
        # runtime itself makes between batches (a send's receipt): a changed token drops what was kept.
        self.carry = carry if not redeliver else None
        self._carry_token: object = None
        self._carried: dict[str, batches.Cache] | None = None  # the handlers' caches kept from the last batch (timers/batch.py)
        self._carry_ok = False  # this batch goes on from what the last one kept
        self._ran = False  # a batch of this run has been written (the next one goes on from it)
        self._batch_fired: list[str] = []  # ids fired in the batch being written, for redelivery
        self.batch_size = int(batch_size or cfg["BATCH_SIZE"])
        self.batch_seconds = ttl().total_seconds() * BATCH_LEASE_SHARE
        self.max_passes = int(cfg["MAX_PASSES"])
        self.stats = RunStats(domain=domain, start=floor, to=to)
        self.landed = RunStats(domain=domain, start=floor, to=to)
        self.now: datetime = floor or to
        self._heap: list[Entry] = []
        self._armed: dict[str, Item] = {}  # armed items in memory, by id
        self._by_key: dict[str, Item] = {}  # every item touched since the last flush, by key
        # Keys armed since the last check that were in neither memory nor asked of the database: one set
        # query answers them all at the next point that needs to know (a fire, a lookup, the flush).
        self._unverified: dict[str, tuple[Item, TraceRow | None, TraceRow | None]] = {}
        self._owners: set[str] = set()  # owners all of whose timers are in _by_key (read since the last fetch)
        self._big_owners: set[str] = set()  # owners with more timers than OWNER_READ_LIMIT
        # _held_owners()'s memo: (holding's view, handler, owners)
        self._owners_ahead: tuple[tuple[int, list[Entry]], str, dict[str, None]] | None = None
        self._next: tuple[int, list[Entry]] | None = None  # (fires then, the heap's next batch): holding()'s
        self._rest: bool | None = None  # _rest_of_horizon() read since the fetch (and found it all)
        self._horizon: SortKey | None = None
        self._complete = False
        self._seq = itertools.count()
        self._instant: datetime | None = None
        self.sends_flushed = False
        self._runaway_instant: datetime | None = None
        self._batch: batches.Batch | None = None
        self._reset_buffers()

    # -- buffers written at each flush -------------------------------------------------------------
    def _reset_buffers(self) -> None:
        self.commits: list[CommitRow] = []
        self.events: list[EventRow] = []
        self.sends: list[SendRow] = []
        self._failed: list[tuple[str, float]] = []  # (kind, late seconds) of each timer pushed out, for the tally
        self._repinned: set[str] = set()  # ids of stored timers whose version a repin changed
        self._absent: set[str] = set()  # keys a handler found in no timer this batch (Firing.absent)
        # The items made dirty since the flush, by key (Firing.touched): a firing that lists an owner's timers asks
        # for these, which a scan of _by_key would find among every timer the run holds (a heap of thousands).
        self._touched: dict[str, Item] = {}
        for item in self._by_key.values():
            item.new = False
            item.dirty = False

    # -- the loop ----------------------------------------------------------------------------------
    def execute(self) -> RunStats:
        need_fetch = True
        while True:
            try:
                with gcpause.paused(), transaction.atomic(), batches.batch(keep_writes=self.keep_writes) as self._batch:
                    passed, claimed = self._open(need_fetch and not self._complete)
                    if not passed:
                        self.stats.stopped = True
                        return self.stats
                    self._carry_in(self._batch)
                    if self.now_fn is not None:
                        self.now = self.now_fn()  # read "now" once per batch
                    if claimed is not None:
                        self._fetch(claimed())
                    need_fetch = self._drain()
                    self._flush()
                    if self._carry_token is not None:
                        self._carried = _capped(self._batch.carried())
                    self._ran = True
                    self._trim()
            finally:
                self._batch = None
            # What has landed so far: a run that fails in a later batch reports only this.
            self.landed = dataclasses.replace(self.stats, trace=list(self.stats.trace))
            if self._batch_fired:
                self._redeliver()
            if self.deliver is not None and self.sends_flushed:
                taken, self.taken = self.taken, None
                self.stats.add_sends(self.deliver(taken))
            if self._complete and not self._heap:
                return self.stats

    def _trim(self) -> None:
        """Let go, once a batch is written, of what it touched beyond its most recently touched owners, whose
        timers off the heap come to KEEP_BATCHES of a batch at most (``_recent_owners``): the database has it as
        memory had it (flushed), so what is asked again is read again. An
        owner is kept or let go of whole, so one kept in _owners still has all its timers in memory; the
        timers on the heap stay (the heap and the lookups must share one item a key)."""
        by_key = self._by_key
        armed = self._armed
        keep = min(HOLD_LIMIT // 2, max(KEEP_AT_LEAST, int(self.batch_size * KEEP_BATCHES)))
        if len(by_key) - len(armed) <= keep:
            return
        recent = self._recent_owners(keep)
        kept: dict[str, Item] = {}
        dropped: set[str] = set()
        for key, item in by_key.items():
            if item.owner in recent or armed.get(item.id) is item:
                kept[key] = item
            else:
                dropped.add(item.owner)
        self._by_key = kept
        self._owners -= dropped

    def _recent_owners(self, keep: int) -> set[str]:
        """The most recently touched owners (by first touch: an arm, a read; a subscriber firing all year arms anew
        each time) whose timers off the heap number ``keep`` at most, each counted whole. Not the owners of the
        ``keep`` most recent timers: where every owner fires at each instant (K subscribers on one plan), those
        are nearly all the owners, and keeping them whole kept every timer the year had touched."""
        armed = self._armed
        held = Counter(item.owner for item in self._by_key.values() if armed.get(item.id) is not item)
        recent: set[str] = set()
        total = 0
        for item in reversed(self._by_key.values()):
            owner = item.owner
            if owner in recent:
                continue
            total += held[owner]
            if total > keep:
                break
            recent.add(owner)
        return recent

    def _carry_in(self, batch: batches.Batch) -> None:
        """Give the batch what the last one kept if nothing outside the run can have written since: the token,
        read after the guard, is the one read at the last batch's start. The first token is read only once a
        fetch says another batch will follow (``_fetch``): an advance of one batch asks nothing."""
        carried, self._carried = self._carried, None
        self._carry_ok = False
        if self.carry is None:
            return
        if self._carry_token is None:
            # A run whose first fetch read every armed timer can still take many batches (a long chain: the
            # budget ends a batch). Its second batch is the first one the token can vouch for: read it now,
            # before any handler of this batch reads a row, and keep from here on.
            if self._ran:
                self._carry_token = self.carry()
            return
        token = self.carry()
        self._carry_ok = token is not None and token == self._carry_token
        self._carry_token = token
        if self._carry_ok and carried:
            batch.take(carried)

    def _open(self, fetching: bool) -> tuple[bool, Callable[[], list[Item]] | None]:
        """A batch's first statements: the guard's, then (``fetching``) the claim of its timers, sent in one
        pipeline (one round trip on PostgreSQL, where each waited for its answer: a batch of one timer paid it
        per timer). The claim only reads: its rows are taken only once the guard's answer says go on, and
        nothing is written before that answer. Returns (go on, the claim's rows to read)."""
        send = self._guard_send
        if send is None:
            if self.guard is not None and not self.guard():
                return False, None
            send = _passed
        if not fetching:
            decide = send()
            return decide is not None and decide(), None
        after = None if self._horizon is None else self._horizon[2:]
        with self.store.pipelined():
            decide = send()
            # A guard that stopped without asking (an advance's slice is over) has the batch claim nothing.
            claimed = None if decide is None else self.store.fetch_sent(self.domain, self.to, after, self.batch_size)
        if decide is None or not decide():
            return False, None
        return True, claimed

    def _fetch(self, rows: list[Item]) -> None:
        """Take a batch's claimed rows (Run._open), sorted after what is kept in memory."""
        # Pass-1 items in memory sort after the horizon and are in the database now: the query
        # returns them again, in order. Items of a later pass stay in memory with their pass.
        keep = [e for e in self._heap if e[-1].pass_no > 1 and e[-1].gen == e[-2] and e[-1].status == "armed"]
        self._armed = {e[-1].id: e[-1] for e in keep}
        if self._carry_ok:
            # Nobody else wrote to the domain since the last batch: what it read and wrote is as the database
            # has it now (flushed), and an owner read whole is still whole (Run._trim keeps it so).
            for e in keep:
                self._by_key[e[-1].key] = e[-1]
        else:
            self._by_key = {e[-1].key: e[-1] for e in keep}
            self._owners = set()
        self._next = None
        self._rest = None
        self._heap = keep
        heapq.heapify(self._heap)
        self.stats.batches += 1
        self._take(rows)
        if len(rows) < self.batch_size:
            self._complete = True
            self._horizon = None
        else:
            self._horizon = self._row_horizon(rows[-1])
            if self.carry is not None and self._carry_token is None:
                self._carry_token = self.carry()  # before any handler of this batch reads a row

    def _take(self, rows: list[Item]) -> None:
        """Put armed rows the store returned in tick order on the heap (what is in memory already wins)."""
        for item in rows:
            # The store's rows are armed, so owed (only a held timer's owed_at is None).
            item.instant = item.owed_at if self.floor is None or item.owed_at > self.floor else self.floor  # type: ignore[assignment,operator]
            # A timer a firing armed for this very instant keeps its pass, even across a crash and resume.
            item.pass_no = (item.tick_pass or 1) if item.instant == self.floor else 1
            if item.id in self._armed:
                continue
            known = self._by_key.get(item.key)
            if known is not None:
                # Read before (a lookup of its owner), never put on the heap: fire it unless the tick changed it.
                if known.status != "armed" or known.id in self._armed or known.owed_at != item.owed_at:
                    continue
                known.instant, known.pass_no = item.instant, item.pass_no
                item = known
            else:
                item.domain = self.domain
                self._by_key[item.key] = item
            self._push(item)

    @staticmethod
    def _row_horizon(last: Item) -> SortKey:
        return (last.instant, 1, last.owed_at, last.place, last.opened_at, last.key)

    def _push(self, item: Item) -> None:
        item.gen += 1
        self._armed[item.id] = item
        heapq.heappush(self._heap, (*item.sort_key(), next(self._seq), item.gen, item))

    def _drain(self) -> bool:
        """Fire from the heap; True when the next item waits on a fetch, False to flush and go on."""
        heap = self._heap
        budget = self.batch_size
        ends = time.monotonic() + self.batch_seconds
        while heap:
            entry = heap[0]
            if self._horizon is not None and entry[:6] > self._horizon:
                return True
            if budget <= 0 or (budget % BATCH_CLOCK_EVERY == 0 and (
                    time.monotonic() > ends or len(self._by_key) - len(self._armed) > HOLD_LIMIT
                    or len(self.commits) + len(self.events) + len(self.sends) > BATCH_ROWS_LIMIT)):
                # A long chain, a slow one, or one holding too much: write what fired so far, keep the rest
                # in memory.
                return False
            budget -= 1
            heapq.heappop(heap)
            item = entry[-1]
            if entry[-2] != item.gen or item.status != "armed":
                continue
            if item.unverified:
                self._verify()
                if entry[-2] != item.gen:
                    continue  # its key was in the database already: arming it again changed nothing
            self._armed.pop(item.id, None)
            instant = entry[0]
            if instant != self._instant:
                self._instant = instant
                self.stats.instants += 1
            if item.pass_no > self.max_passes:
                self._runaway(item, instant)
                continue
            if item.pass_no > self.stats.passes:
                self.stats.passes = item.pass_no
            self._fire(item, instant)
        return not self._complete

    # -- the gate ----------------------------------------------------------------------------------
    def _fire(self, item: Item, instant: datetime) -> None:
        now = instant if self.now_fn is None else self.now
        f = Firing(self, item, instant, item.pass_no)
        f.now = now
        outcome, code = "committed", ""
        try:
            handler = handlers.get(item.handler)
            if handler.atomic:
                with self._batch.handler() if self._batch is not None else transaction.atomic():
                    handler.fire(f)
            else:
                handler.fire(f)
        except batches.KeptWriteFailed:
            raise  # an earlier firing's kept write: the batch is lost whole, and runs again without keeping
        except Refused as refusal:
            outcome, code = "refused", refusal.code
            f.ops.clear()
            f.events = [("gate.refused", item.owner, {"code": refusal.code, "message": refusal.message,
                                                      **refusal.data}, None)]
            f.what = f"refused {refusal.code}"
        except Exception as exc:  # a bad row is pushed out, never crash-looped
            log.exception("timer %s failed", item.key)
            self._push_out(item, now, f"{type(exc).__name__}: {exc}")
            return
        if f.instead is not None and outcome == "committed":
            self._supersede_instead(item, f, f.instead, now)
            return
        tracing = self.tracing and self._traced(item)
        row = None
        if tracing:
            row = TraceRow("fired" if outcome == "committed" else "refused", item.pass_no, item.owed_at, now,
                           item.place, item.kind, item.owner, f.what or item.key)
            self.stats.trace.append(row)
        # Commit: the key once (the unique constraint backs this), the events in order, the ops.
        self.commits.append((new_id("cmt"), self.domain, item.key, item.id, outcome, code, now))
        item.status = "fired"
        item.fired_at = now
        item.late_by = self._late_by(item, now)
        if item.late_by > LATE_LOGGED:
            log.warning("timer %s fired %s late (owed %s, fired %s)", item.key, item.late_by, item.owed_at, now)
        item.attempt = (item.attempt or 0) + 1
        item.wakes = (item.wakes or 0) + 1
        item.dirty = True
        self._touched[item.key] = item
        for type_, subject, data, key in f.events:
            self.events.append((new_id("evt"), self.domain, item.brand_id, type_, subject, item.owed_at,
                                item.key if key is None else key, data, now, item.late_by))
        for op in f.ops:
            self._apply(op, item, instant, now, row)
        if outcome == "committed":
            self.stats.fired += 1
        else:
            self.stats.refused += 1
        if self.redeliver:
            self._batch_fired.append(item.id)

    def _supersede_instead(self, item: Item, f: Firing, instead: tuple[str, str], now: datetime) -> None:
        by, successor = instead
        succ = self._lookup(successor, item)
        item.status, item.by, item.dirty = "superseded", by, True
        self._touched[item.key] = item
        item.superseded_by = succ.id if succ is not None else successor
        self.stats.superseded += 1
        if self.tracing and self._traced(item):
            self.stats.trace.append(TraceRow("superseded", item.pass_no, item.owed_at, now, item.place, item.kind,
                                             item.owner, f.what or f"{item.key} by {by}"))

    def _redeliver(self) -> None:
        """Deliver every wake of the batch a second time, after its commit, through the real wake path:
        the timer is claimed again and the gate answers replayed: true with the first commit."""
        ids, self._batch_fired = self._batch_fired, []
        assert self.redeliver is not None  # a batch's fired ids are kept only to redeliver them
        results = self.redeliver(domain=self.domain, timer_ids=ids)
        self.stats.replayed += sum(1 for r in results if r.replayed)

    def refire(self, items: list[Item]) -> None:
        """Fire timers that already fired once, whose wake the gate let through again (it must not):
        what any first wake would do, without the commit the gate has already written."""
        for item in items:
            item.domain = self.domain
            self._by_key[item.key] = item
            before = len(self.commits)
            assert item.fired_at is not None  # they fired once
            self._fire(item, item.fired_at)
            del self.commits[before:]
        self._flush()

    def _traced(self, item: Item) -> bool:
        # --on names owners: a job's own timers and those of the clocks it opened (data "of").
        if self.on is None:
            return True
        return item.owner in self.on or item.owner.split("#", 1)[0] in self.on or (item.data or {}).get("of") in self.on

    def _late_by(self, item: Item, now: datetime) -> timedelta:
        if self.now_fn is None:
            return ZERO
        # A firing timer is armed, so owed (only a held timer's owed_at is None).
        due: datetime = item.owed_at if item.owed_at >= item.armed_at else item.armed_at  # type: ignore[assignment,operator]
        return max(ZERO, now - due)

    def _push_out(self, item: Item, now: datetime, error: str) -> None:
        self._set_held(item, now, by="error")
        self.stats.failed += 1
        self._failed.append((item.kind, self._late_by(item, now).total_seconds()))
        self.events.append((new_id("evt"), self.domain, item.brand_id, "timer.failed", item.owner,
                            item.owed_at, item.key, {"error": error[:500]}, now, self._late_by(item, now)))
        if self.tracing and self._traced(item):
            self.stats.trace.append(TraceRow("failed", item.pass_no, item.owed_at, now, item.place,
                                             item.kind, item.owner, error[:120]))

    def _runaway(self, item: Item, instant: datetime) -> None:
        # The chain is deeper than MAX_PASSES: hold what is left of it and alarm, once per instant.
        self._set_held(item, instant, by="tick.runaway")
        if self._runaway_instant != instant:
            self._runaway_instant = instant
            self.stats.runaways += 1
            self.events.append((new_id("evt"), self.domain, item.brand_id, "tick.runaway", item.owner, instant,
                                "", {"passes": self.max_passes, "held": item.key}, instant, None))
            if self.tracing:
                self.stats.trace.append(TraceRow("runaway", item.pass_no, item.owed_at, instant, item.place,
                                                 item.kind, item.owner, f"chain deeper than {self.max_passes}"
                                                 f" passes · {item.key} held"))

    def _set_held(self, item: Item, now: datetime, *, by: str) -> None:
        owed = item.owed_at
        item.status = "held"
        item.remaining = max(ZERO, owed - now) if owed is not None else ZERO
        item.owed_at = None
        item.held_since = now
        item.held_by = by
        item.dirty = True
        self._touched[item.key] = item
        item.gen += 1
        self._armed.pop(item.id, None)
        self.stats.held += 1

    def _lookup(self, key: str, asking: Item | None = None) -> Item | None:
        """The timer under ``key`` as the tick sees it, read from the database if it is not in memory: with
        every timer of its owner and, when the firing ``asking`` asks after its own owner's timers or a held
        one's, those of the owners of the held timers its handler fires next, which will ask the same (a
        rung after its item's other rungs)."""
        if key in self._unverified:
            self._verify()
        item = self._by_key.get(key)
        if item is None:
            owner = parse(key).owner
            if owner in self._owners:
                return None  # every timer of its owner is in memory: the key has none
            if owner not in self._big_owners:
                self._read_owners(owner, asking)
                if owner in self._owners:
                    return self._by_key.get(key)
            item = self.store.load(self.domain, key)  # an owner with too many timers to hold: this key alone
            if item is not None:
                item.domain = self.domain
                self._by_key[key] = item
        return item

    def _read_owners(self, owner: str, asking: Item | None) -> None:
        owners = [owner]
        held = self._held_owners(asking.handler) if asking is not None else {}
        if asking is not None and (owner == asking.owner or owner in held):
            for o in held:
                if o != owner and o not in self._owners and o not in self._big_owners:
                    owners.append(o)
                    if len(owners) >= OWNERS_READ_AHEAD:
                        break
        found: dict[str, list[Item]] = {o: [] for o in owners}
        for row in self.store.load_owners(self.domain, owners, OWNER_READ_LIMIT + 1):
            found[row.owner].append(row)
        for o, rows in found.items():
            if len(rows) > OWNER_READ_LIMIT:
                self._big_owners.add(o)
                continue
            self._owners.add(o)
            for row in rows:
                if row.key not in self._by_key:
                    row.domain = self.domain
                    self._by_key[row.key] = row

    def _rest_of_horizon(self) -> bool:
        """Read, once a batch, the armed timers of the horizon's instant the batch's query did not return
        (its limit fell inside the instant), to fire in this batch: True when every armed timer owed by then
        is in memory."""
        if self._rest is None:
            assert self._horizon is not None  # asked only while a fetch has left a horizon
            rows = self.store.fetch(self.domain, self._horizon[0], self._horizon[2:], HORIZON_REST_LIMIT)
            # They join this batch's heap and the horizon moves past them: the next fetch does not read
            # them again (with more subscribers than a batch holds, every instant straddles two batches).
            self._take(rows)
            if rows:
                self._horizon = self._row_horizon(rows[-1])
            self._rest = len(rows) < HORIZON_REST_LIMIT
        return self._rest

    def _held_owners(self, handler: str) -> dict[str, None]:
        """The owners of the held timers ``handler`` fires next, in tick order (kept with holding()'s view)."""
        view = self._held_view()
        memo = self._owners_ahead
        if memo is None or memo[0] is not view or memo[1] != handler:
            owners = dict.fromkeys(t.owner for t in self.holding((handler,)))
            memo = self._owners_ahead = (view, handler, owners)
        return memo[2]

    def _held_view(self) -> tuple[int, list[Entry]]:
        # (fires when taken, the heap's next batch of entries), taken again after HOLDING_REFRESH fires.
        fired = self.stats.fired + self.stats.refused + self.stats.failed
        if self._next is None or fired - self._next[0] >= HOLDING_REFRESH:
            self._next = (fired, heapq.nsmallest(min(self.batch_size, READ_AHEAD), self._heap))
        return self._next

    def holding(self, handler_names: tuple[str, ...]) -> list[Item]:
        """The armed timers in memory, next in tick order up to a batch's worth, with one of these handlers:
        what domain code may read ahead for. A hint, not a promise: the heap's next batch is taken again only
        after HOLDING_REFRESH fires (what it missed is read when asked)."""
        return [e[-1] for e in self._held_view()[1]
                if e[-1].gen == e[-2] and e[-1].status == "armed" and e[-1].handler in handler_names]

    def _verify(self) -> None:
        """Ask the database, in one query, whether the keys armed unverified were there already. Such a key
        (a replay arming what it armed before) keeps its row: the arm changed nothing, as if it had been
        looked up one by one at the arm."""
        if not self._unverified:
            return
        pending, self._unverified = self._unverified, {}
        for item, _, _ in pending.values():
            item.unverified = False
        for row in self.store.load_many(self.domain, list(pending)):
            tentative, parent_row, child = pending[row.key]
            tentative.gen += 1
            tentative.new = tentative.dirty = False
            tentative.status = "void"
            self._armed.pop(tentative.id, None)
            self.stats.armed -= 1
            if parent_row is not None and child is not None:
                parent_row.children.remove(child)
            row.domain = self.domain
            self._by_key[row.key] = row

    def _arm_item(self, item: Item, owed: datetime, instant: datetime, pass_no: int) -> None:
        # ``owed`` is the item's owed_at, just set: armed, so owed.
        if owed <= instant:
            item.instant, item.pass_no = instant, pass_no + 1
        else:
            item.instant, item.pass_no = owed, 1
        if owed <= self.to:
            self._push(item)

    # ``op`` is one of Op's tuples, dispatched on its tag read once into a local: the checker narrows a union of
    # tuples only on op[0] itself, and reading it again at each test would cost the tick at every op.
    def _apply(self, op: tuple[Any, ...], parent: Item, instant: datetime, now: datetime, row: TraceRow | None) -> None:
        item: Item | None
        kind = op[0]
        if kind == "arm":
            _, k, timer_id, owed_at, handler, data, opened_at, version, what = op
            key = str(k)
            if key in self._by_key:
                return  # a replay arms the same key: arming it again changes nothing
            item = Item(id=timer_id, key=key, owner=k.owner, kind=k.kind, place=PLACES[k.kind], handler=handler,
                        status="armed", owed_at=owed_at, opened_at=opened_at, armed_at=now, attempt=0, wakes=0,
                        version=version or "", superseded_by="", by="", held_by="", armed_by=parent.id,
                        data=data, brand_id=parent.brand_id, domain=self.domain, new=True)
            # Else its owner's timers are all in memory, or a handler read the key ahead and found no timer.
            item.unverified = k.owner not in self._owners and key not in self._absent
            self._by_key[key] = self._touched[key] = item
            self._arm_item(item, owed_at, instant, parent.pass_no)
            self.stats.armed += 1
            child = None
            if row is not None:
                child = TraceRow("armed", parent.pass_no, owed_at, None, item.place, item.kind, item.owner,
                                 what or f"{k.name} · {k.occurrence}")
                row.children.append(child)
            if item.unverified:
                self._unverified[key] = (item, row, child)
        elif kind == "supersede":
            _, key, by, successor = op
            item = self._lookup(key, parent)
            if item is None or item.status not in ("armed", "held"):
                return
            succ = self._lookup(successor, parent) if successor else None
            item.status, item.by, item.dirty = "superseded", by, True
            self._touched[key] = item
            item.superseded_by = succ.id if succ is not None else successor
            item.gen += 1
            self._armed.pop(item.id, None)
            self.stats.superseded += 1
            if row is not None:
                row.children.append(TraceRow("superseded", parent.pass_no, item.owed_at, None, item.place,
                                             item.kind, item.owner, f"{key} by {by}"))
        elif kind == "hold":
            _, key, by = op
            item = self._lookup(key, parent)
            if item is None or item.status != "armed":
                return
            self._set_held(item, now, by=by)
            if row is not None:
                row.children.append(TraceRow("held", parent.pass_no, None, None, item.place, item.kind,
                                             item.owner, f"{key} by {by} · {item.remaining} left"))
        elif kind == "resume":
            _, key, cap = op
            item = self._lookup(key, parent)
            if item is None or item.status != "held":
                return
            owed: datetime = now + item.remaining  # type: ignore[operator]  # a held timer keeps what it had left
            if cap is not None and cap < owed:
                owed = cap
            item.status, item.owed_at, item.dirty, item.by = "armed", owed, True, Rearm.RESUME.value
            self._touched[key] = item
            item.held_since, item.held_by, item.remaining = None, "", None
            self._arm_item(item, owed, instant, parent.pass_no)
            if row is not None:
                row.children.append(TraceRow("armed", parent.pass_no, owed, None, item.place, item.kind,
                                             item.owner, f"{key} resumed"))
        elif kind == "retime":
            _, key, owed_at, by = op
            item = self._lookup(key, parent)
            if item is None or item.status != "armed" or item.owed_at == owed_at:
                return
            item.owed_at, item.by, item.dirty = owed_at, by, True
            self._touched[key] = item
            item.gen += 1
            self._armed.pop(item.id, None)
            self._arm_item(item, owed_at, instant, parent.pass_no)
            if row is not None:
                row.children.append(TraceRow("armed", parent.pass_no, owed_at, None, item.place, item.kind,
                                             item.owner, f"{key} retimed"))
        elif kind == "repin":
            _, key, version = op
            item = self._lookup(key, parent)
            if item is None or item.status not in ("armed", "held") or item.version == version:
                return
            item.version, item.dirty = version, True
            self._touched[key] = item
            self._repinned.add(item.id)
        elif kind == "send":
            _, submission, transport, payload, attempt, seq = op
            self.sends.append((submission, self.domain, parent.brand_id, parent.key, attempt, transport, payload,
                               now, seq))
        else:  # pragma: no cover - the Firing only builds the ops above
            raise ValueError(kind)

    # -- writing -----------------------------------------------------------------------------------
    def _flush(self) -> None:
        self._verify()
        dirty = [i for i in self._by_key.values() if i.dirty]
        for i in dirty:
            i.tick_pass = i.pass_no
        # The domain's new position: ``to`` once every armed timer owed by then has fired, else the last instant
        # fired at, behind which nothing owed is left (tick order). A batch that fired nothing (a resumed run whose
        # first batches read only timers that sort after their horizon: pass-2 timers at the floor) has moved
        # nowhere: the floor stays, or a kill after it would leave armed timers behind the position, fired late.
        at = self.to if (self._complete and not self._heap) else (self._instant or self.floor)
        also: Callable[[], None] | None = None
        if self.on_flush is not None and at is not None:  # no position yet, and none reached: none written
            on_flush, reached = self.on_flush, at
            also = lambda: on_flush(reached)  # noqa: E731
        self.taken = self.store.write(
            domain=self.domain,
            new=[i for i in dirty if i.new],
            changed=[i for i in dirty if not i.new],
            commits=self.commits,
            events=self.events,
            sends=self.sends,
            tallies=self._tallies(dirty),
            versions=[(i.id, i.version) for i in dirty if not i.new and i.id in self._repinned],
            # The domain's new position, written with the batch (in its round trip, where the store pipelines).
            also=also,
            claim_sends=self.claim_sends,
        )
        self.sends_flushed = bool(self.sends)
        self._reset_buffers()

    def _tallies(self, dirty: list[Item]) -> list[TallyRow]:
        """The batch's commits counted by kind, outcome and late_by bucket (FireTally's rows to add to): a
        few rows a batch, written with it, so /metrics never counts the fired timers themselves."""
        if not (self.commits or self._failed):
            return []
        by_id = {i.id: i for i in dirty}
        tally: dict[tuple[str, str, int], list[Any]] = {}  # (kind, outcome, bucket) → [fires, late seconds]
        for kind, late in self._failed:  # pushed out: no commit, counted as outcome "failed"
            row = tally.setdefault((kind, "failed", bisect.bisect_left(LATE_BUCKETS, late)), [0, 0.0])
            row[0] += 1
            row[1] += late
        for _, _, key, timer_id, outcome, _, _ in self.commits:
            item = by_id.get(timer_id)
            kind = item.kind if item is not None else parse(key).kind
            late = item.late_by.total_seconds() if item is not None and item.late_by is not None else 0.0
            row = tally.setdefault((kind, outcome, bisect.bisect_left(LATE_BUCKETS, late)), [0, 0.0])
            row[0] += 1
            row[1] += late
        return [(self.domain, k, o, b, n, late) for (k, o, b), (n, late) in sorted(tally.items())]

