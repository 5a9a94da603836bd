"""Schedules: one mechanism that fires on a spec, for a user's HTTP endpoint and for a Service's jobs.

A schedule's next fire is one timer, ``<sch_…>:schedule:fire:<intended>`` (place 2), whose handler starts
the instant's Run and arms the next fire. What a fire does:

- **Run identity** is (schedule, intended time): ``ScheduleRun``'s unique constraint ``schedule_run_once``.
  A wake that arrives twice (a redelivery, a second timer for the same instant) finds the row and starts
  nothing (``schedule.duplicate`` on the record); it is an insert the constraint refuses, not a check.
- **A tick** per Run started: ``open``, then ``succeeded`` (a 2xx, a job minted) or ``dead_lettered`` (the
  target refused: a ``DeadLetter`` beside it). The Run's own outcome (the job's end, the HTTP answer) is
  the Run's: a Run is open until its job ends or its HTTP call settles.
- **Overlap** when a fire comes while a Run is open: skip (counted), buffer_one / buffer_all (a buffered
  Run, started when the open one closes; a full buffer drops the fire, counted), cancel_other (the open
  Run is asked to cancel, the new one starts), allow.
- **Missed fires** (paused, or the worker down: the fire timer fires late) start only inside
  ``catchup_window`` of now; older ones are counted ``missed``.
- **Pause** holds the fire timer; **resume** brings it back at its own instant, so a fire missed while
  paused fires at once and the window decides.

Targets are registered by kind: ``http`` here (a signed POST through the outbox, its submission id as the
Idempotency-Key; its transport and settle in timers/schedule_http.py); ``service`` by the domain
(services/schedules.py). The runtime knows no Service.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F, QuerySet
from django.db.models.signals import pre_delete

from . import batch as batches
from . import handlers, rows, targets
from . import schedule_spec as specs
from .arming import timer_arm, timer_hold, timer_resume
from .domains import domain_seed, domain_writable
from .errors import KeepingTimeError
from .ids import is_live, new_id
from .models import (
    CATCHUP_MAX,
    CATCHUP_MIN,
    OVERLAPS,
    Brand,
    DeadLetter,
    Event,
    Outbox,
    Schedule,
    ScheduleRun,
    ScheduleTick,
    TestClock,
    Timer,
)
from .timeutil import iso_z, parse_span

if TYPE_CHECKING:
    from .engine import Firing

log = logging.getLogger(__name__)

FIRE = "timers.schedule.fire"
START = "timers.schedule.start"
HTTP = "schedule.http"  # the outbox transport of HTTP targets
MAX_RETRIES = 10
MAX_TIMEOUT = 30.0


class ScheduleError(KeepingTimeError):
    code = "invalid_schedule"


# A user's schedule name, as the seed's Schedule resource writes it: a slug a URL or a log line can carry.
NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
_NAME = re.compile(NAME_PATTERN)


def check_schedule_name(name: object) -> str:
    """The name, or ScheduleError invalid_name; "" is no name."""
    if name == "":
        return ""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ScheduleError(f"name {str(name)[:70]!r} is a lowercase letter, then up to 62 lowercase letters, "
                            "digits or hyphens (e.g. nightly-report)", code="invalid_name")
    return name


# -- names -------------------------------------------------------------------------------------------
def compact(t: datetime) -> str:
    """An instant as a key's occurrence (no ':'): 20271107T0730Z, with seconds when it has them."""
    t = t.astimezone(UTC)
    return t.strftime("%Y%m%dT%H%M%SZ" if t.second or t.microsecond else "%Y%m%dT%H%MZ")


def fire_key(schedule_id: str, at: datetime) -> str:
    return f"{schedule_id}:schedule:fire:{compact(at)}"


def _seeded(prefix: str, domain: str, *parts: str) -> str:
    return new_id(prefix, seed="|".join((domain_seed(domain), *parts)))


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- targets -----------------------------------------------------------------------------------------
@dataclass
class Started:
    """What a target's start says: the Run's ref, and the tick's state now (``open`` until it settles)."""

    ref: str = ""
    tick: str = "open"  # open | succeeded | dead_lettered
    error: str = ""
    status: int | None = None
    payload: dict | None = None


@dataclass(frozen=True)
class TargetKind:
    clean: Callable[[dict, Brand, str], dict]  # the target as stored, or KeepingTimeError
    start: Callable[[Firing, Schedule, ScheduleRun], Started]
    cancel: Callable[[Firing, ScheduleRun], bool] | None = None  # True if the Run was asked to stop
    # Narrows the Runs in state open to those still running (an HTTP call the outbox still owes): one query.
    still_open: Callable[[QuerySet, Schedule], QuerySet] | None = None
    atomic: bool = True  # its start writes rows: a savepoint, so a refusal rolls them back
    schema: Callable[[], dict] | None = None  # the target's JSON schema: exactly what ``clean`` takes


_targets: dict[str, TargetKind] = {}


def register_target(kind: str, target: TargetKind) -> None:
    _targets[kind] = target


def _target(kind: str) -> TargetKind:
    try:
        return _targets[kind]
    except KeyError:
        raise ScheduleError(f"no target kind {kind!r} is registered; known: {', '.join(sorted(_targets))}",
                            code="invalid_target") from None


# -- the HTTP target ---------------------------------------------------------------------------------
URL_PATTERN = r"^https?://[!-~]+$"  # printable ASCII, no spaces
_URL = re.compile(URL_PATTERN[1:-1])


def _http_schema() -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["url"], "properties": {
        "url": {"type": "string", "pattern": URL_PATTERN, "maxLength": 2000},
        "timeout": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": MAX_TIMEOUT},
        "retries": {"type": "integer", "minimum": 0, "maximum": MAX_RETRIES}}}


def targets_schema() -> dict:
    return {"oneOf": [t.schema() for t in _targets.values() if t.schema is not None]}


def _clean_http(target: dict, brand: Brand, domain: str) -> dict:
    url = target.get("url")
    if not isinstance(url, str) or len(url) > 2000 or not _URL.fullmatch(url):
        raise ScheduleError("target.url is an http:// or https:// URL (printable ASCII, at most 2000 characters) "
                            "the fire is POSTed to", code="invalid_target")
    extra = set(target) - {"url", "timeout", "retries"}
    if extra:
        raise ScheduleError(f"an HTTP target has url, timeout and retries; not {sorted(extra)}", code="invalid_target")
    timeout = target.get("timeout", 10)
    retries = target.get("retries", 3)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise ScheduleError(f"target.timeout is seconds, more than 0 and at most {MAX_TIMEOUT:g}",
                            code="invalid_target")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise ScheduleError(f"target.retries is a whole number from 0 to {MAX_RETRIES}", code="invalid_target")
    why = targets.why_refused(url)  # checked again at every send, on the address the POST connects to
    if why:
        err = ScheduleError(f"target.url {url[:100]!r}: {why}", code="invalid_target")
        err.param = "target.url"
        raise err
    return {"url": url, "timeout": timeout, "retries": retries}


def _start_http(f: Firing, sch: Schedule, run: ScheduleRun) -> Started:
    # The submission id is the Idempotency-Key: a resend after a doubt (or a replay) names the same one.
    payload = {"schedule": sch.id, "run": run.id, "scheduled_at": iso_z(run.intended_at),
               "fired_at": iso_z(run.started_at), "url": sch.target["url"], "timeout": sch.target.get("timeout", 10),
               "retries": sch.target.get("retries", 3)}
    return Started(ref=f.send(HTTP, payload))


def _http_open(runs: QuerySet, sch: Schedule) -> QuerySet:
    # On a test clock a call settles at the instant it fires: the outbox sends (and retries) in wall time,
    # outside the clock's time, so whether a later fire finds it open would depend on how the advance was cut
    # (one call, or day by day) and on how fast the far end answered. Live, open is a call the outbox still
    # owes: pending, being sent, retrying; one queued by this very batch has not left yet and settles as soon
    # as the batch is written. The domain's owed HTTP calls are few (the outbox_pending index): read them
    # first, then their Runs.
    if not is_live(sch.domain):
        return runs.none()
    owed = list(Outbox.objects.filter(domain=sch.domain, transport=HTTP, status__in=["pending", "sending"])
                .values_list("id", flat=True)[:1000])
    return _by_ref(runs, owed) if owed else runs.none()


def _by_ref(runs: QuerySet, refs: list[str]) -> QuerySet:
    """The Runs whose call is one of ``refs``, by schedule_run_ref. ``ref <> ''`` says what that partial index's
    predicate says: PostgreSQL proves a predicate from an IN list of at most 100 values, and a claim settles 200,
    so without it each settle read every Run of every schedule (tests/test_query_plans.py)."""
    return runs.filter(ref__in=refs).exclude(ref="")


# -- counting and settling ---------------------------------------------------------------------------
def _writable_now(domain: str) -> datetime:
    # An outside write to a schedule: refused while its test clock advances or once it is deleted (409).
    return domain_writable(domain=domain)


def _settle_tick(tick: ScheduleTick, state: str, now: datetime) -> None:
    ScheduleTick.objects.filter(pk=tick.pk, state=ScheduleTick.State.OPEN).update(state=state, settled_at=now)
    tick.state, tick.settled_at = state, now


def dead_letter(sch: Schedule, tick: ScheduleTick, now: datetime, *, error: str, status: int | None,
                payload: dict | None) -> None:
    """A tick that will not succeed: settled dead-lettered, with its DeadLetter row (once)."""
    _settle_tick(tick, ScheduleTick.State.DEAD_LETTERED, now)
    DeadLetter.objects.get_or_create(tick=tick, defaults={
        "id": new_id("dlq", seed=f"{tick.id}|dead"), "schedule": sch, "at": now, "status": status,
        "error": error[:2000], "payload": payload or {}})


def close_run(run: ScheduleRun, now: datetime, outcome: str) -> None:
    """An open Run closes with its outcome (a Service's mint refused, a job's end, a target's refusal)."""
    ScheduleRun.objects.filter(pk=run.pk, state=ScheduleRun.State.OPEN).update(
        state=ScheduleRun.State.CLOSED, closed_at=now, outcome=outcome[:200])
    run.state, run.closed_at, run.outcome = ScheduleRun.State.CLOSED, now, outcome[:200]


def _direct_arm(sch: Schedule, *, runtime: bool = False) -> Callable[..., None]:
    # runtime: a settle's release, which lands between an advance's batches (timers.domains.domain_writable)
    def arm(key: str, *, owed_at: datetime, handler: str, data: dict, opened_at: datetime, version: str = "") -> None:
        try:
            timer_arm(brand=Brand(id=sch.brand_id), key=key, owed_at=owed_at, domain=sch.domain, handler=handler,
                      data=data, opened_at=opened_at, runtime=runtime)
        except KeepingTimeError as exc:
            if exc.code != "timer_exists":
                raise

    return arm


def _open_runs(sch: Schedule) -> list[ScheduleRun]:
    """The Runs still running (one EXISTS when there is none, the common case)."""
    if sch.target_kind == "http":
        if not is_live(sch.domain):
            return []  # on a test clock an HTTP call settles at its fire (_http_open): no query at all
        held = _http_open_runs(sch)
        if held is not None:
            return held
    runs = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.OPEN)
    kind = _targets.get(sch.target_kind)
    if kind is not None and kind.still_open is not None:
        runs = kind.still_open(runs, sch)
    if not runs.exists():
        return []
    return list(runs.order_by("intended_at")[:100])


OPEN_HTTP = "timers.schedules.open_http"


def _http_open_runs(sch: Schedule) -> list[ScheduleRun] | None:
    """_http_open for every schedule of the domain at once: the HTTP calls the outbox still owes and their open
    Runs, read once a batch (two queries) instead of at each fire; None outside a batch. The batch's own new
    Runs do not drop it (their calls are queued by this batch, not owed yet: see _http_open); any other write
    to the Runs or the outbox does."""
    b = batches.current()
    if b is None:
        return None
    cache = b.cache(OPEN_HTTP, tables=("timers_outbox", "timers_schedulerun"))
    if sch.domain not in cache:
        with b.quiet():
            owed = list(Outbox.objects.filter(domain=sch.domain, transport=HTTP, status__in=["pending", "sending"])
                        .values_list("id", flat=True)[:1000])
            by: dict[str, list[ScheduleRun]] = {}
            if owed:
                for run in _by_ref(ScheduleRun.objects.filter(state=ScheduleRun.State.OPEN), owed).order_by(
                        "intended_at"):
                    by.setdefault(run.schedule_id, []).append(run)
        cache[sch.domain] = by
    return list(cache[sch.domain].get(sch.id, ()))[:100]


def _release_buffered(sch: Schedule, now: datetime, arm: Callable[..., None]) -> None:
    """The open Run closed: the oldest buffered fire starts now (a timer, so it starts inside the tick)."""
    if sch.overlap not in (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL):
        return
    if _open_runs(sch):
        return
    nxt = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.BUFFERED).order_by("intended_at").first()
    if nxt is None:
        return
    arm(f"{sch.id}:schedule:start:{compact(nxt.intended_at)}", owed_at=now, handler=START,
        data={"run": nxt.id}, opened_at=sch.created_at)


def schedule_run_closed(*, armer: Any, ref: str, outcome: str) -> ScheduleRun | None:
    """A Run's work ended (its job was delivered, canceled or lapsed): the Run closes with that outcome and
    the oldest buffered fire, if any, starts. ``armer`` is the caller's (a firing's or a direct one)."""
    run = ScheduleRun.objects.select_related("schedule").filter(ref=ref, state=ScheduleRun.State.OPEN).first()
    if run is None:
        return None
    close_run(run, armer.now, outcome)
    if run.schedule.target_kind != Schedule.Target.SUBSCRIPTION:  # a Service's mints keep their record as it was
        armer.record("schedule.run_closed", subject=run.schedule_id, data={"run": run.id, "outcome": outcome})
    _release_buffered(run.schedule, armer.now, armer.arm)
    return run


# -- firing ------------------------------------------------------------------------------------------
def _begin(f: Firing, sch: Schedule, run: ScheduleRun, now: datetime, *, new: bool = False) -> ScheduleTick:
    """The Run is open: its tick opens and its target starts. A ``new`` Run's row is not written yet: the
    target starts first (it needs the Run's id and instants, not its row), then the Run and its tick are
    written as they end up, kept by the batch and sent with its other Runs and ticks as one statement each."""
    tick = rows.new(ScheduleTick, id=new_id("tck", seed=f"{run.id}|tick"), schedule=sch, run=run,
                    intended_at=run.intended_at, fired_at=now)
    if not new:
        tick.save(force_insert=True)
    kind = _target(sch.target_kind)
    try:
        if kind.atomic:
            with transaction.atomic():
                got = kind.start(f, sch, run)
        else:
            got = kind.start(f, sch, run)
    except KeepingTimeError as exc:
        got = Started(tick="dead_lettered", error=f"{exc.code}: {exc.message}")
    except Exception as exc:  # the target could not start (a Service that cannot open with this input)
        log.exception("schedule %s: its target refused the run of %s", sch.id, iso_z(run.intended_at))
        got = Started(tick="dead_lettered", error=f"{type(exc).__name__}: {exc}")
    if new:
        run.ref = got.ref or run.ref
        if got.tick == "succeeded":
            tick.state, tick.settled_at = ScheduleTick.State.SUCCEEDED, now
        elif got.tick == "dead_lettered":
            tick.state, tick.settled_at = ScheduleTick.State.DEAD_LETTERED, now
            run.state, run.closed_at = ScheduleRun.State.CLOSED, now
            run.outcome = f"refused · {got.error[:180]}"[:200]
        batches.create(run, kept_by=(OPEN_HTTP,))
        batches.create(tick)
        if got.tick == "dead_lettered":
            batches.create(DeadLetter(id=new_id("dlq", seed=f"{tick.id}|dead"), tick=tick, schedule=sch, at=now,
                                      status=got.status, error=got.error[:2000], payload=got.payload or {}))
    else:
        if got.ref:
            ScheduleRun.objects.filter(pk=run.pk).update(ref=got.ref)
            run.ref = got.ref
        if got.tick == "succeeded":
            _settle_tick(tick, "succeeded", now)
        elif got.tick == "dead_lettered":
            dead_letter(sch, tick, now, error=got.error, status=got.status, payload=got.payload)
            close_run(run, now, f"refused · {got.error[:180]}")
    # Not the ref: an HTTP call's submission id derives from the clock's id, which never reaches the record.
    f.record("schedule.fired", subject=sch.id, data={"at": iso_z(run.intended_at), "run": run.id,
                                                     "tick": tick.state})
    return tick


def _insert_run(run: ScheduleRun) -> bool:
    """Insert the Run, or nothing when (schedule, intended time) has one: the constraint decides, not a check."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO timers_schedulerun (id, schedule_id, intended_at, state, started_at, closed_at, ref, "
                "outcome, cancel_requested_at) VALUES (%s, %s, %s, %s, %s, NULL, '', '', NULL) "
                "ON CONFLICT DO NOTHING RETURNING id",
                [run.id, run.schedule_id, run.intended_at, run.state, run.started_at])
            return cur.fetchone() is not None
    try:
        with transaction.atomic():
            run.save(force_insert=True)
    except IntegrityError:
        return False
    return True


def _start(f: Firing, sch: Schedule, at: datetime, now: datetime) -> ScheduleRun | None:
    run = rows.new(ScheduleRun, id=_seeded("run", sch.domain, f.timer.key, compact(at)), schedule=sch,
                   intended_at=at, state=ScheduleRun.State.OPEN, started_at=now)
    b = batches.current()
    if b is not None and b.keep_writes:
        # Kept, and sent with the batch's other Runs as one statement. Nothing is checked first: a second Run
        # for the instant (a wake that arrived twice) is refused by schedule_run_once when the batch's Runs
        # are sent; the batch is rolled back and runs again with each write in its firing's savepoint, where
        # that wake finds the Run and starts nothing.
        _begin(f, sch, run, now, new=True)
        return run
    if not _insert_run(run):  # schedule_run_once: this instant's Run started already
        f.record("schedule.duplicate", subject=sch.id, data={"at": iso_z(at)})
        return None
    _begin(f, sch, run, now)
    return run


def _fire_at(f: Firing, sch: Schedule, at: datetime, now: datetime) -> str:
    """One fire due for ``at``: the overlap policy decides what it starts. Returns what it did."""
    open_runs = _open_runs(sch) if sch.overlap != Schedule.Overlap.ALLOW else []
    if open_runs:
        policy = sch.overlap
        if policy == Schedule.Overlap.SKIP:
            Schedule.objects.filter(pk=sch.pk).update(skipped=F("skipped") + 1)
            f.record("schedule.skipped", subject=sch.id, data={"at": iso_z(at), "open": open_runs[0].id})
            return "skipped"
        if policy in (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL):
            limit = 1 if policy == Schedule.Overlap.BUFFER_ONE else sch.buffer_limit
            waiting = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.BUFFERED).count()
            if waiting >= limit:
                Schedule.objects.filter(pk=sch.pk).update(dropped=F("dropped") + 1)
                f.record("schedule.dropped", subject=sch.id, data={"at": iso_z(at), "buffered": waiting})
                return "dropped"
            if not _insert_run(ScheduleRun(id=_seeded("run", sch.domain, f.timer.key, compact(at)), schedule=sch,
                                           intended_at=at, state=ScheduleRun.State.BUFFERED)):
                f.record("schedule.duplicate", subject=sch.id, data={"at": iso_z(at)})
                return "duplicate"
            f.record("schedule.buffered", subject=sch.id, data={"at": iso_z(at), "behind": open_runs[0].id})
            return "buffered"
        if policy == Schedule.Overlap.CANCEL_OTHER:
            cancel = _target(sch.target_kind).cancel
            for run in open_runs:
                ScheduleRun.objects.filter(pk=run.pk).update(cancel_requested_at=now)
                asked = cancel(f, run) if cancel is not None else False
                f.record("schedule.cancel_requested", subject=sch.id, data={"run": run.id, "asked": asked})
    return "started" if _start(f, sch, at, now) is not None else "duplicate"


def _evaluator(sch: Schedule) -> specs.Evaluator:
    """The schedule's spec parsed, once a batch for each spec and zone (a chain of fires parses it once)."""
    b = batches.current()
    if b is None:
        return specs.parse(sch.spec, sch.zone)
    cache = b.cache("timers.schedules.specs", tables=())
    key = (json.dumps(sch.spec, sort_keys=True), sch.zone)
    ev = cache.get(key)
    if ev is None:
        ev = cache[key] = specs.parse(sch.spec, sch.zone)
    return ev


def _locked(f: Firing) -> Schedule | None:
    """The fire's schedule, locked for the batch (a pause or an edit waits for the fires that read it): read
    once a batch with the schedules of every fire the batch holds, one query."""
    return batches.row(f, f.key.owner, name="timers.schedules", load=partial(_load_schedules, f.run.domain),
                       ahead=(FIRE, START), key_of=lambda t: t.owner, tables=("timers_schedule",),
                       pk=lambda v, _: (v.pk,))


def _load_schedules(domain: str, ids: set) -> dict:
    return {s.id: s for s in Schedule.objects.select_for_update().filter(domain=domain, id__in=ids)}


AHEAD = 1000  # next fires' timers one query looks for (a chain of fires in one advance)


def _read_ahead(f: Firing, sch: Schedule, ev: Any, nxt: datetime) -> None:
    """Look for the timers of the next fires up to the run's end in one query, this schedule's and those of
    the fires the batch holds (AHEAD in all, shared out): those not found are armed without the engine asking
    about each (Firing.absent), where a chain of fires, each arming the next, asked once a fire. Only while the
    next fire is inside this run (a test clock's advance, a catch-up): else there is nothing to chain."""
    b = batches.current()
    if b is None or nxt > f.run.to:
        return
    checked = b.cache("timers.schedules.ahead", tables=())
    key = fire_key(sch.id, nxt)
    if key in checked:
        return
    locked = b.caches.get("timers.schedules") or {}
    starts: dict[str, tuple[Any, datetime, bool]] = {sch.id: (ev, nxt, True)}
    for t in f.run.holding((FIRE,)):
        other = locked.get(t.owner)
        if other is not None and t.owner not in starts:
            with contextlib.suppress(KeepingTimeError):
                starts[t.owner] = (_evaluator(other), _instant(t.data["at"]), False)
    per = max(1, AHEAD // len(starts))
    keys: list[str] = []
    for owner, (e, d, first) in starts.items():
        got = [fire_key(owner, d)] if first else []
        while len(got) < per:
            d = e.after(d)
            if d is None or d > f.run.to:
                break
            got.append(fire_key(owner, d))
        keys.extend(k for k in got if k not in checked)
    there = {t.key for t in f.run.store.load_many(f.run.domain, keys)}  # the store's cursor: not the batch's
    absent = [k for k in keys if k not in there]
    for k in keys:
        checked[k] = True
    f.absent(absent)


def fire(f: Firing) -> None:
    """The fire timer: start the instant's Run (and any missed since, inside the window), arm the next."""
    sch = _locked(f)
    if sch is None:
        f.what = "schedule gone"
        return
    at = _instant(f.timer.data["at"])
    now = max(f.now, f.instant)
    if sch.paused:  # held while paused; a fire that slipped through starts nothing
        f.what = "paused"
        return
    ev = _evaluator(sch)
    horizon = now - sch.catchup_window
    # Missed fires are counted, with the first and the last: a long gap is never held in memory.
    count, first_missed, last_missed, kept, last = 0, None, None, [], at
    for d in itertools.chain([at], specs.fires(ev, at, now)):
        last = d
        if d < horizon:
            count += 1
            first_missed = first_missed or d
            last_missed = d
        else:
            kept.append(d)
    nxt = ev.after(max(now, last))
    if nxt is not None:
        _read_ahead(f, sch, ev, nxt)
        f.arm(fire_key(sch.id, nxt), owed_at=nxt, handler=FIRE, data={"at": iso_z(nxt)}, opened_at=sch.created_at,
              what=f"{sch.name or sch.id} · the next fire")
    if count:
        Schedule.objects.filter(pk=sch.pk).update(missed=F("missed") + count)
        f.record("schedule.missed", subject=sch.id, data={"count": count, "first": iso_z(first_missed),
                                                          "last": iso_z(last_missed),
                                                          "window": int(sch.catchup_window.total_seconds())})
    done = [_fire_at(f, sch, d, now) for d in kept]
    f.what = (f"{sch.name or sch.id} · {', '.join(done) or 'nothing'}"
              + (f" · {count} missed, older than the window" if count else ""))


def start(f: Firing) -> None:
    """A buffered fire whose turn came, or a trigger."""
    sch = _locked(f)
    if sch is None:
        f.what = "schedule gone"
        return
    now = max(f.now, f.instant)
    data = f.timer.data
    if data.get("run"):
        started = ScheduleRun.objects.filter(pk=data["run"], schedule=sch, state=ScheduleRun.State.BUFFERED).update(
            state=ScheduleRun.State.OPEN, started_at=now)
        if not started:
            f.what = "started already"
            return
        run = ScheduleRun.objects.get(pk=data["run"])
        _begin(f, sch, run, now)
        f.what = f"{sch.name or sch.id} · buffered fire of {iso_z(run.intended_at)} started"
        return
    f.what = f"{sch.name or sch.id} · trigger · {_fire_at(f, sch, _instant(data['at']), now)}"


def register() -> None:
    handlers.register(FIRE, fire, atomic=True, replace=True)
    handlers.register(START, start, atomic=True, replace=True)
    register_target("http", TargetKind(clean=_clean_http, start=_start_http, still_open=_http_open, atomic=False,
                                       schema=_http_schema))
    pre_delete.connect(_removed_with_clock, sender=TestClock, dispatch_uid="timers.schedules.clock_removed")


def _removed_with_clock(sender, instance: TestClock, **kwargs) -> None:
    # A test clock's rows removed (a reload of an example frees its seed): its schedules go with it, so the
    # ids the seed mints again are free too. Runs, ticks and dead letters follow them.
    Schedule.objects.filter(domain=instance.pk).delete()


# -- service functions (outside the tick) ------------------------------------------------------------
# A window as a span: each unit up to its bound, so that every span the pattern admits is within 10s to 365d.
WINDOW_PATTERN = (r"^(?:[1-9][0-9]{1,6}s|[1-9][0-9]{0,4}(?:m|min)|[1-9][0-9]{0,2}h"
                  r"|(?:36[0-5]|3[0-5][0-9]|[12][0-9]{2}|[1-9][0-9]?)d|(?:5[0-2]|[1-4][0-9]|[1-9])w)$")
_WINDOW = re.compile(WINDOW_PATTERN[1:-1])
WINDOW_SCHEMA = {"oneOf": [
    {"type": "integer", "minimum": int(CATCHUP_MIN.total_seconds()), "maximum": int(CATCHUP_MAX.total_seconds()),
     "description": "seconds"},
    {"type": "string", "pattern": WINDOW_PATTERN, "description": "a span: 10s, 45m, 6h, 30d, 52w"},
]}


def parse_window(value: object) -> timedelta:
    """A catch-up window: whole seconds, or a span (``45m``, ``10s``, ``365d``), from 10 seconds to 365 days."""
    if value is None:
        return CATCHUP_MAX
    span = None
    if isinstance(value, int) and not isinstance(value, bool):
        span = timedelta(seconds=value)
    elif isinstance(value, str) and _WINDOW.fullmatch(value):
        rd = parse_span(value)
        span = timedelta(days=rd.days, hours=rd.hours, minutes=rd.minutes, seconds=rd.seconds)  # weeks are days
    if span is None or not CATCHUP_MIN <= span <= CATCHUP_MAX:
        raise KeepingTimeError(f"catchup_window {str(value)[:40]!r} is a duration from 10 seconds to 365 days: "
                               "seconds, or a span such as 10s, 45m, 6h, 365d", code="invalid_catchup_window")
    return span


def _clean(spec: object, zone: str, overlap: str, buffer_limit: object) -> specs.Evaluator:
    ev = specs.parse(spec, zone)
    if overlap not in OVERLAPS:
        raise ScheduleError(f"overlap is one of {', '.join(OVERLAPS)}; not {str(overlap)[:40]!r}",
                            code="invalid_overlap")
    if isinstance(buffer_limit, bool) or not isinstance(buffer_limit, int) or not 1 <= buffer_limit <= 1000:
        raise ScheduleError("buffer_limit is a whole number from 1 to 1000", code="invalid_buffer_limit")
    return ev


@transaction.atomic
def schedule_create(*, brand: Brand, domain: str, spec: dict, target: dict, zone: str = "UTC", name: str = "",
                    overlap: str = "skip", buffer_limit: int = 100, catchup_window: object = None,
                    paused: bool = False, pause_note: str = "", owner_ref: str = "",
                    target_kind: str | None = None) -> Schedule:
    """A schedule on a clock domain; its first fire is the spec's first instant after the domain's now."""
    ev = _clean(spec, zone, overlap, buffer_limit)
    name = name[:200] if owner_ref else check_schedule_name(name)
    window = parse_window(catchup_window)
    if not isinstance(target, dict):
        raise ScheduleError('target is an object: {"url": …} or {"service": …, "subject": …}', code="invalid_target")
    kind = target_kind or ("http" if "url" in target else "service" if "service" in target else "")
    if kind not in _targets:
        raise ScheduleError('target is {"url": "https://…", "timeout": 10, "retries": 3} or '
                            '{"service": "…", "subject": "sbj_…"}', code="invalid_target")
    cleaned = _targets[kind].clean(target, brand, domain)
    now = _writable_now(domain)
    n = Schedule.objects.filter(domain=domain).count()
    try:
        with transaction.atomic():  # the name's uniqueness is the constraint's to keep, not a check before
            sch = Schedule.objects.create(
                id=_seeded("sch", domain, "schedule", owner_ref or name, now.isoformat(), str(n)), brand=brand,
                domain=domain, name=name, spec=spec, zone=zone, target_kind=kind, target=cleaned,
                secret=f"whsec_{secrets.token_urlsafe(24)}" if kind == "http" else "", overlap=overlap,
                buffer_limit=buffer_limit, catchup_window=window, owner_ref=owner_ref, created_at=now)
    except IntegrityError:
        if not name or not Schedule.objects.filter(brand=brand, domain=domain, name=name, owner_ref="").exists():
            raise
        raise ScheduleError(f"a schedule named {name!r} is already on this clock; pick another name",
                            code="schedule_name_taken", status=409) from None
    first = ev.after(now)
    if first is not None:
        _direct_arm(sch)(fire_key(sch.id, first), owed_at=first, handler=FIRE, data={"at": iso_z(first)},
                         opened_at=now)
    Event.objects.create(domain=domain, brand=brand, type="schedule.created", subject=sch.id, owed_at=now,
                         fired_at=now, data={"spec": spec, "zone": zone, "target": kind, "overlap": overlap,
                                             "next": iso_z(first)})
    if paused:
        schedule_pause(schedule=sch, note=pause_note)
    return sch


def _fire_timer(sch: Schedule, status: str) -> Timer | None:
    """The schedule's next fire: its one armed (or, paused, held) fire timer."""
    return (Timer.objects.filter(domain=sch.domain, owner=sch.id, handler=FIRE, status=status)
            .order_by("armed_at", "key").last())


def next_fire_at(sch: Schedule) -> datetime | None:
    """The instant the schedule fires next (a Service's schedule: its subscription's next mint)."""
    if sch.target_kind == Schedule.Target.SUBSCRIPTION:
        sub, name = sch.target.get("subscription", ""), sch.target.get("schedule", "")
        return (Timer.objects.filter(domain=sch.domain, owner=sub, kind="schedule", status="armed",
                                     key__startswith=f"{sub}:schedule:{name}:")
                .order_by("owed_at").values_list("owed_at", flat=True).first())
    timer = _fire_timer(sch, "armed") or _fire_timer(sch, "held")
    return None if timer is None else _instant(timer.data["at"])


def _managed(sch: Schedule, what: str) -> None:
    if sch.target_kind == Schedule.Target.SUBSCRIPTION:
        raise KeepingTimeError(f"{sch.id} is {sch.owner_ref.split(':')[0]}'s schedule; {what} the subscription "
                               "(POST /subscriptions/<id>/pause, …/resume)", code="schedule_of_subscription",
                               status=409)


@transaction.atomic
def schedule_pause(*, schedule: Schedule, note: str = "") -> Schedule:
    """Pause: the fire timer is held; the spec, zone, target and revision stay as they are."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "pause")
    if sch.paused:
        raise KeepingTimeError(f"{sch.id} is paused already", code="schedule_paused", status=409)
    now = _writable_now(sch.domain)
    timer = _fire_timer(sch, "armed")
    if timer is not None:
        timer_hold(timer=timer, by="schedule.paused", now=now)
    sch.paused, sch.pause_note, sch.paused_at = True, (note or "")[:200], now
    sch.save(update_fields=["paused", "pause_note", "paused_at"])
    Event.objects.create(domain=sch.domain, brand_id=sch.brand_id, type="schedule.paused", subject=sch.id,
                         owed_at=now, fired_at=now, data={"note": sch.pause_note})
    return sch


@transaction.atomic
def schedule_resume(*, schedule: Schedule) -> Schedule:
    """Resume: the held fire comes back at its own instant; one whose instant passed fires at once, and the
    catch-up window decides which of the fires missed while paused still start."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "resume")
    if not sch.paused:
        raise KeepingTimeError(f"{sch.id} is not paused", code="schedule_not_paused", status=409)
    now = _writable_now(sch.domain)
    timer = _fire_timer(sch, "held")
    if timer is not None:
        timer_resume(timer=timer, now=now, cap=_instant(timer.data["at"]))
    paused_for = now - sch.paused_at
    sch.paused, sch.pause_note, sch.paused_at = False, "", None
    sch.save(update_fields=["paused", "pause_note", "paused_at"])
    Event.objects.create(domain=sch.domain, brand_id=sch.brand_id, type="schedule.resumed", subject=sch.id,
                         owed_at=now, fired_at=now, data={"paused_for": int(paused_for.total_seconds())})
    return sch


@transaction.atomic
def schedule_trigger(*, schedule: Schedule) -> Timer:
    """Fire now, as if the spec said so (the overlap policy applies): a timer owed now, which the tick fires
    at once on the live clock and at the next advance (``advance`` to its frozen time) on a test clock."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "trigger")
    now = _writable_now(sch.domain)
    try:
        return timer_arm(brand=Brand(id=sch.brand_id), key=f"{sch.id}:schedule:trigger:{compact(now)}", owed_at=now,
                         domain=sch.domain, handler=START, data={"at": iso_z(now)}, opened_at=sch.created_at)
    except KeepingTimeError as exc:
        if exc.code == "timer_exists":
            raise KeepingTimeError(f"{sch.id} was triggered at {iso_z(now)} already; one Run per instant",
                                   code="schedule_triggered", status=409) from None
        raise


# -- reading -----------------------------------------------------------------------------------------
def tick_json(t: ScheduleTick | None) -> dict | None:
    if t is None:
        return None
    return {"id": t.id, "object": "schedule_tick", "state": t.state, "scheduled_at": iso_z(t.intended_at),
            "fired_at": iso_z(t.fired_at), "settled_at": iso_z(t.settled_at), "run": run_json(t.run)}


def run_json(r: ScheduleRun) -> dict:
    return {"id": r.id, "object": "schedule_run", "state": r.state, "scheduled_at": iso_z(r.intended_at),
            "started_at": iso_z(r.started_at), "closed_at": iso_z(r.closed_at), "ref": r.ref or None,
            "outcome": r.outcome or None}


def dead_letter_json(d: DeadLetter) -> dict:
    return {"id": d.id, "object": "dead_letter", "tick": d.tick_id, "at": iso_z(d.at), "status": d.status,
            "error": d.error, "payload": d.payload}


def fired_count(sch: Schedule) -> int:
    """Runs started: counted from the Runs, so a fire writes no counter."""
    return sch.runs.filter(started_at__isnull=False).count()


def schedule_json(sch: Schedule, *, recent: int = 10, upcoming: int = 5) -> dict:
    ticks = list(ScheduleTick.objects.filter(schedule=sch).select_related("run").order_by("-fired_at", "-intended_at")
                 [:recent])
    nxt: list[datetime] = []
    first = None if sch.paused else next_fire_at(sch)
    if first is not None:
        try:
            ev = specs.parse(sch.spec, sch.zone)
            nxt = [first, *specs.next_fires(ev, first, upcoming - 1)]
        except KeepingTimeError:  # a Service's schedule: its mints follow its clocks
            nxt = [first]
    return {
        "id": sch.id, "object": "schedule", "name": sch.name, "spec": sch.spec, "zone": sch.zone,
        "target": {"kind": sch.target_kind, **sch.target}, "overlap": sch.overlap,
        "buffer_limit": sch.buffer_limit, "catchup_window": int(sch.catchup_window.total_seconds()),
        "paused": sch.paused, "pause_note": sch.pause_note or None, "paused_at": iso_z(sch.paused_at),
        "revision": sch.revision, "test_clock": None if is_live(sch.domain) else sch.domain,
        "next_fire_times": [iso_z(t) for t in nxt],
        "last_tick": tick_json(ticks[0]) if ticks else None,
        "recent_ticks": [tick_json(t) for t in ticks],
        "dead_letters": [dead_letter_json(d) for d in sch.dead_letters.order_by("-at")[:recent]],
        "buffered": [iso_z(t) for t in sch.runs.filter(state=ScheduleRun.State.BUFFERED).order_by("intended_at")
                     .values_list("intended_at", flat=True)[:100]],
        "counters": {"fired": fired_count(sch), "skipped": sch.skipped, "dropped": sch.dropped, "missed": sch.missed,
                     "dead_lettered": sch.ticks.filter(state=ScheduleTick.State.DEAD_LETTERED).count(),
                     "open_runs": sch.runs.filter(state=ScheduleRun.State.OPEN).count()},
        "created": iso_z(sch.created_at),
    }
