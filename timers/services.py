"""The runtime's service functions: keyword-only writes that views, commands and domain code call.

Timers armed here (outside a firing) fire on the next tick of their domain; one armed after its owed
time fires at once, in place, and is never late.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, connections, transaction
from django.db.models import F
from django.db.models.functions import Now
from django.dispatch import Signal

from . import gate, history, outbox, prepared
from .clock import MAX_SLEEP, wall_now
from .errors import KeepingTimeError, NotFound, TestClockAdvancing, TestClockBackward, TestClockDeleted
from .handlers import get as get_handler
from .ids import SEED_PATTERN, SEED_RE, brand_domain, domain_seed, new_id
from .keys import parse
from .lease import lease
from .models import ApiKey, Brand, Commit, Event, FireTally, TestClock, Timer, is_live
from .rearm import UNHOLDABLE_KINDS, Rearm
from .rows import insert_one_sql, values_of
from .store import TALLY_ADD, TALLY_INSERT
from .timeutil import iso_z

# Sent when a test clock is deleted, so domain apps void what they keep on it (jobs, subscriptions…).
test_clock_deleted = Signal()
# Sent when the live worker (`tick`) starts, with ``now``: domain apps record what is new in their code.
worker_starting = Signal()


def brand_get_or_create(*, name: str) -> Brand:
    brand = Brand.objects.filter(name=name).first()
    if brand is None:
        brand, _ = Brand.objects.get_or_create(name=name, defaults={"created_at": wall_now()})
    return brand


def api_key_create(*, brand: Brand, name: str = "", live: bool = False) -> tuple[ApiKey, str]:
    """Make a secret key; returns (row, secret). Only the secret's sha256 is stored."""
    secret = f"sk_{'live' if live else 'test'}_{secrets.token_urlsafe(32)}"
    row = ApiKey.objects.create(brand=brand, name=name, prefix=secret[:12], digest=api_key_digest(secret),
                                created_at=wall_now())
    return row, secret


def api_key_digest(secret: str) -> str:
    # A key is 256 random bits: a fast hash is right (a slow KDF protects low-entropy passwords).
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_brand(*, secret: str) -> Brand | None:
    row = ApiKey.objects.select_related("brand").filter(digest=api_key_digest(secret), revoked_at=None).first()
    return None if row is None else row.brand


# -- test clocks -------------------------------------------------------------------------------------
def test_clock_create(*, brand: Brand, frozen_time: datetime, name: str = "", seed: str = "") -> TestClock:
    """A test clock; with a ``seed``, the ids minted on it derive from the seed instead of its random id, so
    the same scenario on a clock of the same seed (another load, another database) makes the same record."""
    seed = seed or ""
    if seed:
        _check_seed(seed, brand)
    try:
        with transaction.atomic():
            return TestClock.objects.create(brand=brand, frozen_time=frozen_time, name=name, seed=seed,
                                            created_at=wall_now())
    except IntegrityError:
        # Two creates raced past the check: the constraint (test_clock_seed_once) refused the second.
        if seed and TestClock.objects.filter(seed=seed).exists():
            raise _seed_taken(seed, brand) from None
        raise


def _check_seed(seed: str, brand: Brand) -> None:
    if not SEED_RE.fullmatch(seed):
        raise KeepingTimeError(f"seed {seed[:80]!r} does not match {SEED_PATTERN}: up to 64 letters, digits and "
                               "_ . : -, and neither \"live\" nor tc_… (they name clock domains)", code="invalid_seed")
    if TestClock.objects.filter(seed=seed).exists():
        raise _seed_taken(seed, brand)


def _seed_taken(seed: str, brand: Brand) -> KeepingTimeError:
    # Seeds are one namespace across brands (ids are), but another brand's clock is never named.
    mine = TestClock.objects.filter(seed=seed, brand=brand).values_list("id", "status").first()
    held = f"test clock {mine[0]} ({mine[1]})" if mine else "another test clock"
    # A deleted clock keeps its timers and record, whose ids came from the seed: it holds the seed too.
    return KeepingTimeError(f"seed {seed!r} is held by {held}; ids minted from it would collide. Pick another "
                            "seed, or remove that clock's load first (loadexample replaces its own)",
                            code="test_clock_seed_taken", status=409)


def test_clock_get(*, clock_id: str, brand: Brand | None = None) -> TestClock:
    qs = TestClock.objects.exclude(status__in=TestClock.GONE)
    if brand is not None:
        qs = qs.filter(brand=brand)
    clock = qs.filter(pk=clock_id).first()
    if clock is None:
        raise NotFound(f"no test clock {clock_id!r}")
    return clock


DEFAULT_TEST_CLOCK = "default"


def test_clock_default(*, brand: Brand) -> TestClock:
    """The brand's default test clock, which ``default`` names where a test clock id goes (POST
    /test_clocks/default/advance, as the seed's example calls it): its first test clock that is not deleted
    (``loadexample`` makes the example's). A brand with none has no default yet: 404, saying how to make one."""
    clock = (TestClock.objects.exclude(status__in=TestClock.GONE).filter(brand=brand)
             .order_by("created_at", "id").first())
    if clock is None:
        raise NotFound("no test clock 'default': the brand has no test clock yet; POST /test_clocks "
                       '{"frozen_time": …} creates one, and its first one is its default')
    return clock


def backward_message(clock: TestClock, to: datetime) -> str:
    return (
        f"test clock {clock.id} is at {iso_z(clock.frozen_time)} and moves only forward; {iso_z(to)} is before it. "
        f'To start there, create a clock: POST /test_clocks {{"frozen_time": "{iso_z(to)}"}}'
    )


def test_clock_request_advance(*, clock: TestClock, to: datetime, redeliver: bool = False) -> TestClock:
    """Ask the worker to advance the clock (202 advancing); the worker fires and then marks it ready."""
    with transaction.atomic():
        clock = TestClock.objects.select_for_update().get(pk=clock.pk)
        if clock.status in TestClock.GONE:
            raise NotFound(f"no test clock {clock.id!r}")
        if clock.status == TestClock.Status.ADVANCING:
            raise TestClockAdvancing(
                f"test clock {clock.id} is already advancing to {iso_z(clock.advance_to)}; wait for test_clock.ready"
            )
        if to < clock.frozen_time:
            raise TestClockBackward(backward_message(clock, to))
        clock.status = TestClock.Status.ADVANCING
        clock.advance_to = to
        clock.redeliver = redeliver
        clock.failure = ""
        clock.save(update_fields=["status", "advance_to", "redeliver", "failure"])
        transaction.on_commit(lambda: _notify_worker(clock.id))
    return clock


def test_clock_delete(*, clock: TestClock) -> TestClock:
    """Void everything on the clock: armed and held timers are superseded by the deletion.

    The clock is marked first, so an advance running on it stops at its next batch; the voiding then
    happens under the clock's lease, after that advance has let go. Nothing lands after
    ``test_clock.deleted``.
    """
    marked = TestClock.objects.filter(pk=clock.pk).exclude(status__in=TestClock.GONE).update(
        status=TestClock.Status.DELETING, advance_to=None)
    if not marked and not TestClock.objects.filter(pk=clock.pk, status=TestClock.Status.DELETING).exists():
        raise NotFound(f"no test clock {clock.id!r}")
    with lease(clock.id):
        test_clock_finish_delete(clock_id=clock.id)
    clock.refresh_from_db()
    return clock


def test_clock_finish_delete(*, clock_id: str) -> bool:
    """The voiding half of a delete; the caller holds the clock's lease. Idempotent: False if done."""
    with transaction.atomic():
        clock = TestClock.objects.select_for_update().filter(pk=clock_id, status=TestClock.Status.DELETING).first()
        if clock is None:
            return False
        Timer.objects.filter(domain=clock.id, status__in=["armed", "held"]).update(
            status="superseded", by="test_clock.deleted", owed_at=None, held_since=None, remaining=None,
            held_by="", moved_at=Now(),  # its month of history (timers/history.py)
        )
        voided = Timer.objects.filter(domain=clock.id, by="test_clock.deleted").count()
        sends = outbox.void(clock.id)
        clock.status = TestClock.Status.DELETED
        clock.advance_to = None
        clock.save(update_fields=["status", "advance_to"])
        fire_tally_retire(domains=[clock.id])
        Event.objects.create(domain=clock.id, brand_id=clock.brand_id, type="test_clock.deleted", subject=clock.id,
                             owed_at=clock.frozen_time, data={"timers_voided": voided, "sends_voided": sends},
                             fired_at=clock.frozen_time)
        test_clock_deleted.send(sender=TestClock, clock=clock)
    return True


def fire_tally_retire(*, domains: list[str]) -> None:
    """Fold the fire tally of test clocks that are gone into one set of rows (``FireTally.RETIRED``): /metrics'
    counters keep every fire they counted, and a scrape reads rows per live domain, not per clock ever made.
    Rows are taken in key order, so two retirements at once lock them in the same order."""
    if not domains:
        return
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            TALLY_INSERT + "SELECT %s, kind, outcome, bucket, sum(fires), sum(late_seconds) FROM timers_firetally "
            "WHERE domain IN (" + ", ".join(["%s"] * len(domains)) + ") "
            "GROUP BY kind, outcome, bucket ORDER BY kind, outcome, bucket" + TALLY_ADD,
            [FireTally.RETIRED, *domains],
        )
    FireTally.objects.filter(domain__in=domains).delete()


# A live timer owed further ahead than a worker's longest sleep wakes nobody: every sleeping worker wakes before
# it is owed and finds it. The second is slack for the arming's commit and a step under way when it lands.
WAKE_HORIZON = timedelta(seconds=MAX_SLEEP + 1)


def wake_payload(domain: str, owed_at: datetime | None = None) -> str:
    """A wake's payload: the domain, and the instant its new timer is owed (none: wake whatever the time)."""
    return domain if owed_at is None else f"{domain} {owed_at.timestamp():.6f}"


def _notify_worker(domain: str, owed_at: datetime | None = None) -> None:
    """Wake the sleeping workers, at the commit, naming the domain that has work (an early timer, an
    advance): a worker runs that domain first. With ``owed_at``, only a worker whose sleep would end after it
    wakes. A lost notification costs a poll's wait, never a firing."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("SELECT pg_notify('keeping_time_wake', %s)", [wake_payload(domain, owed_at)])


# -- timers outside a firing -------------------------------------------------------------------------
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
    conn = connections[TestClock.objects.db]
    if conn.vendor == "postgresql" and conn.in_atomic_block:
        with conn.cursor() as cur:
            cur.execute(f'SELECT 1 FROM "{TestClock._meta.db_table}" WHERE id = %s FOR SHARE', [domain])
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


def timer_arm(*, brand: Brand, key: str, owed_at: datetime, domain: str | None = None, handler: str | None = None,
              data: dict | None = None, opened_at: datetime | None = None, version: str = "",
              runtime: bool = False, checked: bool = False) -> Timer:
    """Arm ``key`` on ``domain``: a test clock, or the brand's live clock (None or "live" name it). Refused on
    a test clock that is advancing or deleted (domain_writable; ``runtime``: the runtime's own write between
    an advance's batches); ``checked``: the caller has asked already (a DirectArmer)."""
    domain = brand_domain(domain, brand.id)
    k = parse(key)
    handler = handler or k.kind
    get_handler(handler)  # unknown handler: an error now, never at fire time
    now = domain_now(domain=domain) if checked else domain_writable(domain=domain, runtime=runtime)
    timer = Timer(id=new_id("tmr", seed=f"{domain_seed(domain)}|{key}"), domain=domain, brand=brand, key=key,
                  owner=k.owner, kind=k.kind, place=k.place, handler=handler, owed_at=owed_at,
                  opened_at=opened_at or now, armed_at=now, version=version, data=data or {})
    live = is_live(domain)
    try:
        with transaction.atomic():
            _arm_insert(timer)
            # Its key may be in history (PostgreSQL keeps history apart: no one unique index spans both). Asked
            # after the INSERT, in a statement of its own: the INSERT waits for a firing of the same key under
            # way, and only a later statement's snapshot sees the row that firing moved to history.
            # A brand's first live timer names its live clock: the live loop runs the domains LiveClock names.
            # A near timer wakes the workers, in the arming's own transaction: PostgreSQL delivers it at the
            # commit, and a NOTIFY of its own after the commit was a second commit (an XID, a WAL flush).
            if _arm_check(timer, name_live_clock=live, notify=live and owed_at < now + WAKE_HORIZON):
                raise IntegrityError(key)
    except IntegrityError:
        raise KeepingTimeError(f"timer {key!r} is already armed on {domain}", code="timer_exists",
                               status=409) from None
    return timer


@functools.cache
def _arm_sql() -> tuple[str, list[tuple], bool]:
    """The arming's INSERT: every column but ``moved_at``, whose default is the database's clock (read back, as
    ``Timer.objects.create`` does, where the database can return it)."""
    sql, plan = insert_one_sql(Timer, omit=frozenset({"moved_at"}))
    returning = connection.features.can_return_columns_from_insert
    return sql + (' RETURNING "moved_at"' if returning else ""), plan, returning


def _arm_insert(timer: Timer) -> None:
    """``Timer.objects.create`` for the arming, one prepared statement (timers/prepared.py): the ORM's
    compiling of the INSERT cost more CPU than the database spent running it."""
    sql, plan, returning = _arm_sql()
    with prepared.cursor() as cur:
        cur.execute(sql, values_of(timer, plan))
        if returning:
            timer.moved_at = cur.fetchone()[0]
    timer._state.adding = False
    timer._state.db = connection.alias


_IN_HISTORY = ("SELECT 1 FROM timers_timer WHERE domain = %s AND key = %s AND status IN ("
               + ", ".join(f"'{status}'" for status in history.LEFT) + ")")
_NAME_LIVE_CLOCK = "INSERT INTO timers_liveclock (id, position) VALUES (%s, NULL) ON CONFLICT DO NOTHING"


def _arm_check(timer: Timer, *, name_live_clock: bool, notify: bool) -> bool:
    """Whether the armed key is in history; with the live clock named and the workers woken as asked. On
    PostgreSQL one statement: the LiveClock upsert rides in it as a CTE (run whatever the SELECT reads) and the
    NOTIFY in its row (undone with the transaction when the key is in history)."""
    domain, key = timer.domain, timer.key
    with prepared.cursor() as cur:
        if connection.vendor != "postgresql":
            cur.execute(_IN_HISTORY + " LIMIT 1", [domain, key])
            found = cur.fetchone() is not None
            if name_live_clock and not found:
                cur.execute(_NAME_LIVE_CLOCK, [domain])
            return found
        sql = f"SELECT EXISTS ({_IN_HISTORY})"
        params: list = [domain, key]
        if name_live_clock:
            sql = f"WITH named AS ({_NAME_LIVE_CLOCK}) {sql}"
            params.insert(0, domain)
        if notify:
            sql += ", pg_notify('keeping_time_wake', %s)"
            params.append(wake_payload(domain, timer.owed_at))
        cur.execute(sql, params)
        return cur.fetchone()[0]


def timer_hold(*, timer: Timer, by: str, now: datetime) -> Timer:
    """Hold an armed timer (``by``: who or what holds it). A clock's rungs and due timer ring on the clock's
    date whoever the work waits on, so they are never held."""
    if timer.kind in UNHOLDABLE_KINDS:
        raise KeepingTimeError(f"timer {timer.id} is a clock's {timer.kind} timer; clock rungs are never held",
                               code="rung_not_holdable", status=409)
    if timer.status != Timer.Status.ARMED:
        raise KeepingTimeError(f"timer {timer.id} is {timer.status}; only an armed timer can be held",
                               code="timer_not_armed", status=409)
    timer.remaining = max(timedelta(0), timer.owed_at - now)
    timer.status, timer.owed_at, timer.held_since, timer.held_by = "held", None, now, by
    timer.save(update_fields=["status", "owed_at", "held_since", "held_by", "remaining"])
    return timer


def timer_resume(*, timer: Timer, now: datetime, cap: datetime | None = None) -> Timer:
    """Resume under the same key at now + remaining (or the cap, if earlier)."""
    if timer.status != Timer.Status.HELD:
        raise KeepingTimeError(f"timer {timer.id} is {timer.status}; only a held timer resumes",
                               code="timer_not_held", status=409)
    owed = now + timer.remaining
    timer.owed_at = min(owed, cap) if cap is not None else owed
    timer.status, timer.held_since, timer.held_by, timer.remaining = "armed", None, "", None
    timer.by = Rearm.RESUME.value  # a re-arm names its cause from the closed list
    timer.tick_pass = 1  # resumed from outside a firing: it starts its instant's first pass
    timer.save(update_fields=["status", "owed_at", "held_since", "held_by", "remaining", "by", "tick_pass"])
    return timer


def timer_wake(*, timer: Timer) -> dict:
    """A wake delivered outside the tick, through the gate's wake path (timers/gate.py): a fired timer
    answers replayed: true with its first commit. Refused while its test clock advances, like any write."""
    domain_writable(domain=timer.domain)
    result = gate.wake(domain=timer.domain, timer_ids=[timer.id])[0]
    if not result.replayed:
        return {"replayed": False, "status": result.status, "commit": None}
    commit = Commit.objects.filter(domain=timer.domain, key=timer.key).order_by("at", "id").first()
    return {"replayed": True, "status": result.status, "commit": commit_json(commit)}


def commit_json(commit: Commit | None, *, events: list[str] | None = None) -> dict | None:
    if commit is None:
        return None
    if events is None:
        events = list(
            Event.objects.filter(domain=commit.domain, key=commit.key).order_by("seq").values_list("id", flat=True)
        )
    return {"id": commit.id, "outcome": commit.outcome, "code": commit.code or None, "at": iso_z(commit.at),
            "events": events}


# Service functions named test_clock_* are not pytest tests when a test module imports them.
for _fn in (test_clock_create, test_clock_get, test_clock_request_advance, test_clock_delete,
            test_clock_finish_delete):
    _fn.__test__ = False  # type: ignore[attr-defined]
