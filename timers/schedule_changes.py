"""A schedule changed after it is made (keyword-only service functions): updated (a new revision; a change of
spec, zone, bounds, jitter or calendar re-arms the next fire only), deleted (nothing fires after it; it stays
readable), backfilled (each past instant with no Run yet, in order), and rolled again when its calendar
changes. Bounds, skip rules, jitter and business days themselves: timers/schedule_bounds.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from . import quotas
from . import schedule_spec as specs
from .armer import DirectArmer
from .arming import timer_arm
from .errors import KeepingTimeError
from .models import OVERLAPS, Brand, Event, Schedule, ScheduleRun, Timer
from .rearm import Rearm
from .schedule_bounds import (
    MAX_BACKFILL,
    Bounds,
    calendar_of,
    check_closed_days,
    check_jitter,
    check_remaining,
    check_skip,
)
from .schedule_targets import FIRE, START, ScheduleError, fire_key, instant, known_target
from .schedules import (
    _clean,
    _fire_timer,
    _managed,
    _period,
    _writable_now,
    check_schedule_name,
    parse_window,
    schedule_pause,
    schedule_resume,
)
from .timeutil import iso_z

UNSET: Any = object()  # an update's field that was not given
# The fields whose change moves the next fire: the armed fire is re-armed (schedule.update on the re-arm list).
TIMING = ("spec", "zone", "start_at", "end_at", "remaining_actions", "jitter", "calendar", "closed_days")


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    return value


@transaction.atomic
def schedule_update(*, schedule: Schedule, revision: int | None = None, spec: Any = UNSET, zone: Any = UNSET,
                    target: Any = UNSET, name: Any = UNSET, overlap: Any = UNSET, buffer_limit: Any = UNSET,
                    catchup_window: Any = UNSET, start_at: Any = UNSET, end_at: Any = UNSET,
                    remaining_actions: Any = UNSET, skip: Any = UNSET, jitter: Any = UNSET, calendar: Any = UNSET,
                    closed_days: Any = UNSET, paused: Any = UNSET, pause_note: Any = UNSET) -> Schedule:
    """Change what is given; each change is a new revision (``schedule.updated`` with what changed). ``revision``,
    when given, is the revision the caller read: another is 409 schedule_revision_conflict. A change of spec,
    zone or bounds re-arms the next fire only: Runs already started keep theirs. ``paused`` pauses or resumes
    (as pause and resume do: no new revision for that alone)."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "update")
    if revision is not None and revision != sch.revision:
        raise KeepingTimeError(f"{sch.id} is at revision {sch.revision}, not {revision}: read it again and "
                               "apply the change to what it is now", code="schedule_revision_conflict", status=409)
    now = _writable_now(sch.domain)
    given = {k: v for k, v in (("spec", spec), ("zone", zone), ("target", target), ("name", name),
                               ("overlap", overlap), ("buffer_limit", buffer_limit),
                               ("catchup_window", catchup_window), ("start_at", start_at), ("end_at", end_at),
                               ("remaining_actions", remaining_actions), ("skip", skip), ("jitter", jitter),
                               ("calendar", calendar), ("closed_days", closed_days))
             if v is not UNSET}
    new = {f: getattr(sch, f) for f in ("spec", "zone", "overlap", "buffer_limit", "start_at", "end_at")}
    new.update({k: v for k, v in given.items() if k in new})
    ev = _clean(new["spec"], new["zone"], new["overlap"], new["buffer_limit"])
    if "spec" in given and not sch.owner_ref:
        quotas.period_within(_period(ev, now))  # as at its making: no more often than the shortest period
    if "remaining_actions" in given:
        given["remaining_actions"] = check_remaining(given["remaining_actions"])
    if "skip" in given:
        given["skip"] = check_skip(given["skip"])
    if "jitter" in given:
        given["jitter"] = check_jitter(given["jitter"])
    if "closed_days" in given:
        given["closed_days"] = check_closed_days(given["closed_days"])
    if "calendar" in given:
        given["calendar"] = given["calendar"] or ""
        if given["calendar"]:
            calendar_of(sch.brand_id, given["calendar"])
    if "catchup_window" in given:
        given["catchup_window"] = parse_window(given["catchup_window"])
    if "name" in given:
        given["name"] = check_schedule_name(given["name"])
    if "target" in given:
        if not isinstance(given["target"], dict):
            raise ScheduleError('target is an object: {"url": …} or {"service": …, "subject": …}',
                                code="invalid_target")
        kind = "http" if "url" in given["target"] else "service" if "service" in given["target"] else ""
        target_of = known_target(kind)
        if target_of is None:
            raise ScheduleError('target is {"url": "https://…", "timeout": 10, "retries": 3} or '
                                '{"service": "…", "subject": "sbj_…"}', code="invalid_target")
        if kind != sch.target_kind:
            raise KeepingTimeError(f"{sch.id} fires a {sch.target_kind} target; a schedule keeps its kind of target "
                                   "(its Runs and secret are of that kind): make another schedule for a "
                                   f"{kind} target", code="schedule_target_kind", status=409)
        given["target"] = target_of.clean(given["target"], Brand(id=sch.brand_id), sch.domain)
    changed = {k: v for k, v in given.items() if getattr(sch, k) != v}
    if changed:
        for k, v in changed.items():
            setattr(sch, k, v)
        sch.revision += 1
        try:
            with transaction.atomic():
                sch.save(update_fields=[*changed, "revision"])
        except IntegrityError:
            raise ScheduleError(f"a schedule named {changed.get('name')!r} is already on this clock; pick another "
                                "name", code="schedule_name_taken", status=409) from None
        nxt = _rearm(sch, ev, now) if any(k in TIMING for k in changed) else None
        data: dict[str, Any] = {"revision": sch.revision,
                                "changed": {k: _json_value(v) for k, v in changed.items() if k != "target"}}
        if "target" in changed:
            data["changed"]["target"] = sch.target_kind  # a target's fields may hold a secret's place: its kind
        if any(k in TIMING for k in changed):
            data["next"] = iso_z(nxt)
        Event.objects.create(domain=sch.domain, brand_id=sch.brand_id, type="schedule.updated", subject=sch.id,
                             owed_at=now, fired_at=now, data=data)
    if paused is not UNSET and paused is not None and bool(paused) != sch.paused:
        if paused:
            schedule_pause(schedule=sch, note="" if pause_note is UNSET else (pause_note or ""))
        else:
            schedule_resume(schedule=sch)
    elif pause_note is not UNSET and sch.paused and (pause_note or "") != sch.pause_note:
        Schedule.objects.filter(pk=sch.pk).update(pause_note=(pause_note or "")[:200])
    sch.refresh_from_db()
    return sch


def _rearm(sch: Schedule, ev: specs.Evaluator, now: datetime) -> datetime | None:
    """The next fire after an update: the new spec's first instant after now, inside the new bounds, armed under
    the new revision's key (held, if paused); the fire it replaces is superseded, naming it."""
    old = _fire_timer(sch, "armed") or _fire_timer(sch, "held")
    bounds = Bounds.of(sch)
    ev = bounds.ruled(ev)
    first = None if sch.remaining_actions == 0 else bounds.first_from(ev, now)
    key = fire_key(sch.id, first, sch.revision) if first is not None else ""
    armer = DirectArmer(brand=sch.brand_id, domain=sch.domain, now=now)
    if first is not None:
        armer.arm(key, owed_at=bounds.owed(ev, first), handler=FIRE, data={"at": iso_z(first)}, opened_at=sch.created_at)
        if sch.paused:
            armer.hold(key, by=Rearm.HOLD, who="schedule.paused")
    if old is not None:
        if key:
            armer.supersede(old.key, by=Rearm.SCHEDULE_UPDATE, successor=key)
        else:
            armer.supersede(old.key, by="schedule.ended")
    return first


@transaction.atomic
def schedule_delete(*, schedule: Schedule) -> Schedule:
    """Delete: nothing fires after it (its fire, trigger and start timers are superseded; buffered fires are
    dropped); a Run already open keeps going and settles. The schedule stays readable (``deleted``), with its
    ticks and dead letters; its name is free again."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "delete")
    now = _writable_now(sch.domain)
    keys = list(Timer.objects.filter(domain=sch.domain, owner=sch.id, status__in=["armed", "held"])
                .values_list("key", flat=True))
    DirectArmer(brand=sch.brand_id, domain=sch.domain, now=now).supersede_all(keys, by="schedule.deleted")
    dropped, _ = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.BUFFERED).delete()
    sch.deleted_at = now
    sch.save(update_fields=["deleted_at"])
    Event.objects.create(domain=sch.domain, brand_id=sch.brand_id, type="schedule.deleted", subject=sch.id,
                         owed_at=now, fired_at=now,
                         data={"open_runs": sch.runs.filter(state=ScheduleRun.State.OPEN).count(),
                               "buffered_dropped": dropped})
    return sch


def backfill_key(schedule_id: str, at: datetime) -> str:
    # Seconds always, so a backfill's start timers sort by key in the order of their instants.
    return f"{schedule_id}:schedule:backfill:{at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"


@transaction.atomic
def schedule_backfill(*, schedule: Schedule, start: datetime, end: datetime, overlap: str | None = None
                      ) -> dict[str, Any]:
    """Fire every intended time of the spec in [start, end] that has no Run yet, in order, under ``overlap``
    (the schedule's when absent): a start timer each, owed now (the live worker starts them at once, a test
    clock at its next advance). An instant that already ran starts nothing and is answered ``already_run``.
    A span longer than the catch-up window is allowed: it is asked for, not missed. Skip rules apply. The span
    ends at now at the latest (what is ahead fires on its own); an empty span asks for nothing. At most
    MAX_BACKFILL instants a call: ``has_more`` and ``next_start`` say where the next call begins."""
    sch = Schedule.objects.select_for_update().get(pk=schedule.pk)
    _managed(sch, "backfill")
    now = _writable_now(sch.domain)
    end = min(end, now)
    policy = overlap or sch.overlap
    buffers = (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL)
    if policy not in OVERLAPS:
        raise ScheduleError(f"overlap is one of {', '.join(OVERLAPS)}", code="invalid_overlap")
    if policy in buffers and sch.overlap not in buffers:
        raise KeepingTimeError(f"{sch.id}'s overlap is {sch.overlap}: a backfill buffers only on a schedule that "
                               "buffers (use allow, skip or cancel_other)", code="schedule_not_buffering", status=409)
    bounds = Bounds.of(sch)
    ev = bounds.ruled(specs.parse(sch.spec, sch.zone))
    instants: list[datetime] = []
    skipped: list[str | None] = []
    next_start: datetime | None = None
    for n, at in enumerate(specs.fires(ev, start - timedelta(microseconds=1), end)):
        if len(instants) >= MAX_BACKFILL or n >= 10 * MAX_BACKFILL:  # skipped ones count too, ten times over
            next_start = at
            break
        if bounds.skipped_by(at) is not None:
            skipped.append(iso_z(at))
            continue
        instants.append(at)
    ran = set(ScheduleRun.objects.filter(schedule=sch, intended_at__in=instants).values_list("intended_at", flat=True))
    asked: list[str | None] = []
    already: list[str | None] = []
    for at in instants:
        if at in ran:
            already.append(iso_z(at))
            continue
        try:
            timer_arm(brand=Brand(id=sch.brand_id), key=backfill_key(sch.id, at), owed_at=now, domain=sch.domain,
                      handler=START, data={"at": iso_z(at), "overlap": policy, "backfill": True},
                      opened_at=sch.created_at)
        except KeepingTimeError as exc:
            if exc.code != "timer_exists":
                raise
            already.append(iso_z(at))  # asked for already: its start timer is there, and starts it once
            continue
        asked.append(iso_z(at))
    Event.objects.create(domain=sch.domain, brand_id=sch.brand_id, type="schedule.backfilled", subject=sch.id,
                         owed_at=now, fired_at=now,
                         data={"start": iso_z(start), "end": iso_z(end), "overlap": policy, "fires": len(asked),
                               "already_run": len(already), "skipped": len(skipped)})
    return {"object": "schedule_backfill", "schedule": sch.id, "start": iso_z(start), "end": iso_z(end),
            "overlap": policy, "fires": asked, "already_run": already, "skipped": skipped,
            "has_more": next_start is not None, "next_start": iso_z(next_start)}


def schedules_reroll(*, brand_id: str, calendar_id: str, why: str) -> int:
    """A calendar changed (a day closed or opened, its weekends or holidays): every schedule on it has its next
    fire rolled again (``calendar.closed_days`` on the re-arm list), recorded ``schedule.rerolled`` with why.
    Returns how many moved."""
    moved = 0
    for sch in Schedule.objects.select_for_update().filter(brand_id=brand_id, calendar=calendar_id,
                                                           deleted_at__isnull=True).order_by("created_at", "id"):
        timer = _fire_timer(sch, "armed")
        if timer is None:
            continue  # paused (its held fire rolls when it resumes and fires), or ended
        intended = instant(timer.data["at"])
        bounds = Bounds.of(sch)
        owed = bounds.owed(bounds.ruled(specs.parse(sch.spec, sch.zone)), intended)
        if owed == timer.owed_at:
            continue
        armer = DirectArmer(brand=sch.brand_id, domain=sch.domain)
        armer.retime(timer.key, owed_at=owed, by=Rearm.CLOSED_DAYS)
        armer.record("schedule.rerolled", subject=sch.id, data={"at": iso_z(intended), "to": iso_z(owed),
                                                                 "why": why})
        moved += 1
    return moved
