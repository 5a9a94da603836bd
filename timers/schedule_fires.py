"""A schedule's fires inside the tick: the fire timer (``<sch_…>:schedule:fire:<intended>``, place 2) starts the
instant's Run and arms the next fire; the start timer starts a buffered fire whose turn came, or a trigger.

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

In a batch, the schedules are read once with those of every fire the batch holds, the spec parsed once, and
the next fires' timers looked for in one query (``_read_ahead``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F
from django.db.models.signals import pre_delete

from . import batch as batches
from . import handlers, rows
from . import schedule_spec as specs
from .errors import KeepingTimeError
from .ids import new_id
from .models import DeadLetter, Schedule, ScheduleRun, ScheduleTick, TestClock
from .schedule_bounds import Bounds
from .schedule_runs import OPEN_HTTP, close_run, dead_letter, open_runs, settle_tick
from .schedule_targets import (
    FIRE,
    START,
    Started,
    compact,
    fire_key,
    instant,
    register_http,
    seeded,
    target_kind,
)
from .sql import schedules as schedule_sql
from .timeutil import iso_z

if TYPE_CHECKING:
    from .engine import Firing

log = logging.getLogger(__name__)


def _begin(f: Firing, sch: Schedule, run: ScheduleRun, now: datetime, *, new: bool = False) -> ScheduleTick:
    """The Run is open: its tick opens and its target starts. A ``new`` Run's row is not written yet: the
    target starts first (it needs the Run's id and instants, not its row), then the Run and its tick are
    written as they end up, kept by the batch and sent with its other Runs and ticks as one statement each."""
    tick = rows.new(ScheduleTick, id=new_id("tck", seed=f"{run.id}|tick"), schedule=sch, run=run,
                    intended_at=run.intended_at, fired_at=now)
    if not new:
        tick.save(force_insert=True)
    kind = target_kind(sch.target_kind)
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
            settle_tick(tick, "succeeded", now)
        elif got.tick == "dead_lettered":
            dead_letter(sch, tick, now, error=got.error, status=got.status, payload=got.payload)
            close_run(run, now, f"refused · {got.error[:180]}")
    # Not the ref: an HTTP call's submission id derives from the clock's id, which never reaches the record.
    f.record("schedule.fired", subject=sch.id, data={"at": iso_z(run.intended_at), "run": run.id,
                                                     "tick": tick.state})
    return tick


def _start_run(f: Firing, sch: Schedule, at: datetime, now: datetime) -> ScheduleRun | None:
    run = rows.new(ScheduleRun, id=seeded("run", sch.domain, f.timer.key, compact(at)), schedule=sch,
                   intended_at=at, state=ScheduleRun.State.OPEN, started_at=now)
    b = batches.current()
    if b is not None and b.keep_writes:
        # Kept, and sent with the batch's other Runs as one statement. Nothing is checked first: a second Run
        # for the instant (a wake that arrived twice) is refused by schedule_run_once when the batch's Runs
        # are sent; the batch is rolled back and runs again with each write in its firing's savepoint, where
        # that wake finds the Run and starts nothing.
        _begin(f, sch, run, now, new=True)
        return run
    if not schedule_sql.insert_run(run):  # schedule_run_once: this instant's Run started already
        f.record("schedule.duplicate", subject=sch.id, data={"at": iso_z(at)})
        return None
    _begin(f, sch, run, now)
    return run


def _fire_at(f: Firing, sch: Schedule, at: datetime, now: datetime, *, overlap: str | None = None) -> str:
    """One fire due for ``at``: the overlap policy (the schedule's, or a backfill's own) decides what it starts.
    Returns what it did."""
    policy = overlap or sch.overlap
    running = open_runs(sch) if policy != Schedule.Overlap.ALLOW else []
    if running:
        if policy == Schedule.Overlap.SKIP:
            Schedule.objects.filter(pk=sch.pk).update(skipped=F("skipped") + 1)
            f.record("schedule.skipped", subject=sch.id, data={"at": iso_z(at), "open": running[0].id})
            return "skipped"
        if policy in (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL):
            limit = 1 if policy == Schedule.Overlap.BUFFER_ONE else sch.buffer_limit
            waiting = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.BUFFERED).count()
            if waiting >= limit:
                Schedule.objects.filter(pk=sch.pk).update(dropped=F("dropped") + 1)
                f.record("schedule.dropped", subject=sch.id, data={"at": iso_z(at), "buffered": waiting})
                return "dropped"
            if not schedule_sql.insert_run(ScheduleRun(id=seeded("run", sch.domain, f.timer.key, compact(at)), schedule=sch,
                                           intended_at=at, state=ScheduleRun.State.BUFFERED)):
                f.record("schedule.duplicate", subject=sch.id, data={"at": iso_z(at)})
                return "duplicate"
            f.record("schedule.buffered", subject=sch.id, data={"at": iso_z(at), "behind": running[0].id})
            return "buffered"
        if policy == Schedule.Overlap.CANCEL_OTHER:
            cancel = target_kind(sch.target_kind).cancel
            for run in running:
                ScheduleRun.objects.filter(pk=run.pk).update(cancel_requested_at=now)
                asked = cancel(f, run) if cancel is not None else False
                f.record("schedule.cancel_requested", subject=sch.id, data={"run": run.id, "asked": asked})
    return "started" if _start_run(f, sch, at, now) is not None else "duplicate"


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


def _load_schedules(domain: str, ids: set[str]) -> dict[str, Schedule]:
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
    key = fire_key(sch.id, nxt, sch.revision)
    if key in checked:
        return
    locked: Mapping[str, Schedule | None] = b.caches.get("timers.schedules") or {}
    starts: dict[str, tuple[Any, datetime, bool, int]] = {sch.id: (ev, nxt, True, sch.revision)}
    for t in f.run.holding((FIRE,)):
        other = locked.get(t.owner)
        if other is not None and t.owner not in starts:
            with contextlib.suppress(KeepingTimeError):
                starts[t.owner] = (Bounds.of(other).ruled(_evaluator(other)), instant(t.data["at"]), False, other.revision)
    # No more than the batch can fire: what is read ahead is forgotten when the batch is written, so a run of
    # small batches (KT_ADVANCE_BATCH_SIZE=1, a live fire at a time) would read AHEAD keys to use one.
    per = max(1, min(AHEAD, f.run.batch_size) // len(starts))
    keys: list[str] = []
    for owner, (e, d, first, rev) in starts.items():
        got = [fire_key(owner, d, rev)] if first else []
        while len(got) < per:
            d = e.after(d)
            if d is None or d > f.run.to:
                break
            got.append(fire_key(owner, d, rev))
        keys.extend(k for k in got if k not in checked)
    there = {t.key for t in f.run.store.load_many(f.run.domain, keys)}  # the store's cursor: not the batch's
    absent = [k for k in keys if k not in there]
    for k in keys:
        checked[k] = True
    f.absent(absent)


def fire(f: Firing) -> None:
    """The fire timer: start the instant's Run (and any missed since, inside the window), arm the next. Fires
    outside the schedule's bounds never start; a skip rule's are recorded skipped; each Run made takes one of
    ``remaining_actions``, and at 0 (or past ``end_at``) no next fire is armed: ``schedule.ended`` says why."""
    sch = _locked(f)
    if sch is None:
        f.what = "schedule gone"
        return
    if sch.deleted_at is not None:  # its timers were superseded at the delete; one that slipped through: nothing
        f.what = "deleted"
        return
    at = instant(f.timer.data["at"])
    now = max(f.now, f.instant)
    if sch.paused:  # held while paused; a fire that slipped through starts nothing
        f.what = "paused"
        return
    bounds = Bounds.of(sch)
    ev = bounds.ruled(_evaluator(sch))
    horizon = now - sch.catchup_window
    # Missed fires are counted, with the first and the last: a long gap is never held in memory. An instant is
    # judged by when its fire was owed (where the calendar rolled it, and its jitter); the chain of instants
    # passed stops at one whose fire is not owed yet (rolled ahead), which is armed next.
    count, first_missed, last_missed, kept, last = 0, None, None, [], at
    nxt: datetime | None = None
    for d in itertools.chain([at], specs.fires(ev, at, now)):
        owed = bounds.owed(ev, d)
        if d != at and owed > now:
            nxt = d
            break
        last = d
        if not bounds.within(d):
            continue
        if owed < horizon:
            count += 1
            first_missed = first_missed or d
            last_missed = d
        else:
            kept.append(d)
    if count:
        Schedule.objects.filter(pk=sch.pk).update(missed=F("missed") + count)
        f.record("schedule.missed", subject=sch.id, data={"count": count, "first": iso_z(first_missed),
                                                          "last": iso_z(last_missed),
                                                          "window": int(sch.catchup_window.total_seconds())})
    remaining = sch.remaining_actions
    done = []
    for d in kept:
        why = bounds.skipped_by(d)
        if why is not None:
            f.record("schedule.skipped", subject=sch.id, data={"at": iso_z(d), "why": why})
            done.append(f"skipped ({why})")
            continue
        if remaining == 0:
            break
        rolled = bounds.rolled(d)
        if rolled is not None:
            f.record("schedule.rolled", subject=sch.id, data={"at": iso_z(d), "to": iso_z(rolled[0]),
                                                              "why": rolled[1]})
        got = _fire_at(f, sch, d, now)
        done.append(got)
        if remaining is not None and got in ("started", "buffered"):
            remaining -= 1
    if remaining != sch.remaining_actions:
        Schedule.objects.filter(pk=sch.pk).update(remaining_actions=remaining)
    if remaining == 0:
        nxt = None
    elif nxt is None:
        nxt = bounds.first(ev, max(now, last))
    if nxt is not None:
        _read_ahead(f, sch, ev, nxt)
        f.arm(fire_key(sch.id, nxt, sch.revision), owed_at=bounds.owed(ev, nxt), handler=FIRE,
              data={"at": iso_z(nxt)}, opened_at=sch.created_at, what=f"{sch.name or sch.id} · the next fire")
    else:
        why_ended = "remaining_actions" if remaining == 0 else "end_at" if sch.end_at is not None else "spec"
        f.record("schedule.ended", subject=sch.id, data={"why": why_ended, "last": iso_z(last)})
        done.append(f"ended ({why_ended})")
    f.what = (f"{sch.name or sch.id} · {', '.join(done) or 'nothing'}"
              + (f" · {count} missed, older than the window" if count else ""))


def start(f: Firing) -> None:
    """A buffered fire whose turn came, or a trigger."""
    sch = _locked(f)
    if sch is None:
        f.what = "schedule gone"
        return
    if sch.deleted_at is not None:
        f.what = "deleted"
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
    what = "backfill" if data.get("backfill") else "trigger"
    f.what = f"{sch.name or sch.id} · {what} · {_fire_at(f, sch, instant(data['at']), now, overlap=data.get('overlap'))}"


def register() -> None:
    handlers.register(FIRE, fire, atomic=True, replace=True)
    handlers.register(START, start, atomic=True, replace=True)
    register_http()
    pre_delete.connect(_removed_with_clock, sender=TestClock, dispatch_uid="timers.schedules.clock_removed")


def _removed_with_clock(sender: type[TestClock], instance: TestClock, **kwargs: Any) -> None:
    # A test clock's rows removed (a reload of an example frees its seed): its schedules go with it, so the
    # ids the seed mints again are free too. Runs, ticks and dead letters follow them.
    Schedule.objects.filter(domain=instance.pk).delete()
