"""Schedules outside the tick: made, paused, resumed and triggered (keyword-only service functions), and read
as the API answers them; updated, deleted, backfilled and rolled again by a calendar: timers/schedule_changes.py.

A schedule fires on a spec (cron, an interval with a phase, a calendar period) in a zone, for a user's HTTP
endpoint or a Service's jobs; its next fire is one timer whose firing (timers/schedule_fires.py) starts the
instant's Run. **Pause** holds the fire timer; **resume** brings it back at its own instant, so a fire missed
while paused fires at once and the catch-up window decides. A trigger is a start timer owed now. Names and
targets: timers/schedule_targets.py; a Run's settling: timers/schedule_runs.py.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from . import quotas
from . import schedule_spec as specs
from .arming import timer_arm, timer_hold, timer_resume
from .domains import domain_writable
from .errors import KeepingTimeError
from .ids import LIVE_PREFIX, is_live
from .models import (
    CATCHUP_MAX,
    CATCHUP_MIN,
    OVERLAPS,
    Brand,
    DeadLetter,
    Event,
    Schedule,
    ScheduleRun,
    ScheduleTick,
    TestClock,
    Timer,
)
from .schedule_bounds import (
    Bounds,
    calendar_of,
    check_closed_days,
    check_jitter,
    check_remaining,
    check_skip,
)
from .schedule_runs import direct_arm
from .schedule_targets import FIRE, START, ScheduleError, compact, fire_key, instant, known_target, seeded
from .timeutil import iso_z, parse_span

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


def _writable_now(domain: str) -> datetime:
    # An outside write to a schedule: refused while its test clock advances or once it is deleted (409).
    return domain_writable(domain=domain)


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
def schedule_create(*, brand: Brand, domain: str, spec: dict[str, Any], target: dict[str, Any], zone: str = "UTC", name: str = "",
                    overlap: str = "skip", buffer_limit: int = 100, catchup_window: object = None,
                    paused: bool = False, pause_note: str = "", owner_ref: str = "",
                    target_kind: str | None = None, start_at: datetime | None = None, end_at: datetime | None = None,
                    remaining_actions: int | None = None, skip: list[str] | None = None,
                    jitter: str | None = None, calendar: str | None = None,
                    closed_days: str | None = None) -> Schedule:
    """A schedule on a clock domain; its first fire is the spec's first instant after the domain's now (and
    not before ``start_at``)."""
    ev = _clean(spec, zone, overlap, buffer_limit)
    jitter_span = check_jitter(jitter)
    closed_days = check_closed_days(closed_days)
    if calendar:
        calendar_of(brand.id, calendar)
    remaining_actions = check_remaining(remaining_actions)
    skip = check_skip(skip)
    name = name[:200] if owner_ref else check_schedule_name(name)
    window = parse_window(catchup_window)
    if not isinstance(target, dict):
        raise ScheduleError('target is an object: {"url": …} or {"service": …, "subject": …}', code="invalid_target")
    kind = target_kind or ("http" if "url" in target else "service" if "service" in target else "")
    target_of = known_target(kind)
    if target_of is None:
        raise ScheduleError('target is {"url": "https://…", "timeout": 10, "retries": 3} or '
                            '{"service": "…", "subject": "sbj_…"}', code="invalid_target")
    cleaned = target_of.clean(target, brand, domain)
    now = _writable_now(domain)
    if not owner_ref:  # asked for (the API, the CLI), not a Service's own
        quotas.period_within(_period(ev, now))
    n = Schedule.objects.filter(domain=domain).count()
    try:
        with transaction.atomic():  # the name's uniqueness is the constraint's to keep, not a check before
            if not owner_ref:
                live = is_live(domain)
                quotas.count_within(brand_id=brand.pk, livemode=live, quota="schedules", what="schedules",
                                    count=lambda: _asked_for(brand, live).count())
            sch = Schedule.objects.create(
                id=seeded("sch", domain, "schedule", owner_ref or name, now.isoformat(), str(n)), brand=brand,
                domain=domain, name=name, spec=spec, zone=zone, target_kind=kind, target=cleaned,
                secret=f"whsec_{secrets.token_urlsafe(24)}" if kind == "http" else "", overlap=overlap,
                buffer_limit=buffer_limit, catchup_window=window, owner_ref=owner_ref, created_at=now,
                start_at=start_at, end_at=end_at, remaining_actions=remaining_actions, skip=skip,
                jitter=jitter_span, calendar=calendar or "", closed_days=closed_days)
    except IntegrityError:
        if not name or not Schedule.objects.filter(brand=brand, domain=domain, name=name, owner_ref="",
                                                   deleted_at__isnull=True).exists():
            raise
        raise ScheduleError(f"a schedule named {name!r} is already on this clock; pick another name",
                            code="schedule_name_taken", status=409) from None
    bounds = Bounds.of(sch)
    ev = bounds.ruled(ev)  # a repeated hour by the schedule's calendar
    first = None if remaining_actions == 0 else bounds.first_from(ev, now)
    if first is not None:
        direct_arm(sch)(fire_key(sch.id, first), owed_at=bounds.owed(ev, first), handler=FIRE,
                        data={"at": iso_z(first)}, opened_at=now)
    data: dict[str, Any] = {"spec": spec, "zone": zone, "target": kind, "overlap": overlap, "next": iso_z(first)}
    data.update(_bounds_json(sch, only_set=True))
    Event.objects.create(domain=domain, brand=brand, type="schedule.created", subject=sch.id, owed_at=now,
                         fired_at=now, data=data)
    if paused:
        schedule_pause(schedule=sch, note=pause_note)
    return sch


def _period(ev: specs.Evaluator, now: datetime) -> timedelta | None:
    """How often a spec fires at its most often: an interval's own, a cron's shortest gap ahead; a calendar
    period (a day and up) is none of a quota's business."""
    if isinstance(ev, specs.Every):
        return ev.every
    if isinstance(ev, specs.Cron):
        return quotas.shortest_gap(ev.after, now)
    return None


def _asked_for(brand: Brand, live: bool) -> Any:
    """The brand's schedules of one mode that the API or the CLI made (a deleted test clock's are gone)."""
    mine = Schedule.objects.filter(brand=brand, owner_ref="", deleted_at__isnull=True)
    if live:
        return mine.filter(domain__startswith=LIVE_PREFIX)
    clocks = TestClock.objects.filter(brand=brand).exclude(status__in=TestClock.GONE).values("id")
    return mine.filter(domain__in=clocks)


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
    return None if timer is None else instant(timer.data["at"])


def _managed(sch: Schedule, what: str) -> None:
    if sch.target_kind == Schedule.Target.SUBSCRIPTION:
        raise KeepingTimeError(f"{sch.id} is {sch.owner_ref.split(':')[0]}'s schedule; {what} the subscription "
                               "(POST /subscriptions/<id>/pause, …/resume)", code="schedule_of_subscription",
                               status=409)
    if sch.deleted_at is not None:
        raise KeepingTimeError(f"{sch.id} was deleted at {iso_z(sch.deleted_at)}; it can be read, not changed",
                               code="schedule_deleted", status=409)


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
        timer_resume(timer=timer, now=now, cap=instant(timer.data["at"]))
    assert sch.paused_at is not None  # a paused schedule says since when
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


def _bounds_json(sch: Schedule, *, only_set: bool = False) -> dict[str, Any]:
    out = {"start_at": iso_z(sch.start_at), "end_at": iso_z(sch.end_at),
           "remaining_actions": sch.remaining_actions, "skip": list(sch.skip or []),
           "jitter": int(sch.jitter.total_seconds()), "calendar": sch.calendar or None,
           "closed_days": sch.closed_days if sch.calendar else None}
    return {k: v for k, v in out.items() if v not in (None, [], 0)} if only_set else out


def ended(sch: Schedule, nxt: datetime | None) -> str | None:
    """Why a schedule fires no more: deleted, remaining_actions (0 left), end_at (none before it), or None."""
    if sch.deleted_at is not None:
        return "deleted"
    if sch.remaining_actions == 0:
        return "remaining_actions"
    if nxt is None and sch.end_at is not None and not sch.paused:
        return "end_at"
    return None


# -- reading -----------------------------------------------------------------------------------------
def tick_json(t: ScheduleTick | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"id": t.id, "object": "schedule_tick", "state": t.state, "scheduled_at": iso_z(t.intended_at),
            "fired_at": iso_z(t.fired_at), "settled_at": iso_z(t.settled_at), "run": run_json(t.run)}


def run_json(r: ScheduleRun) -> dict[str, Any]:
    return {"id": r.id, "object": "schedule_run", "state": r.state, "scheduled_at": iso_z(r.intended_at),
            "started_at": iso_z(r.started_at), "closed_at": iso_z(r.closed_at), "ref": r.ref or None,
            "outcome": r.outcome or None}


def dead_letter_json(d: DeadLetter) -> dict[str, Any]:
    return {"id": d.id, "object": "dead_letter", "tick": d.tick_id, "at": iso_z(d.at), "status": d.status,
            "error": d.error, "payload": d.payload}


def fired_count(sch: Schedule) -> int:
    """Runs started: counted from the Runs, so a fire writes no counter."""
    return sch.runs.filter(started_at__isnull=False).count()


def schedule_json(sch: Schedule, *, recent: int = 10, upcoming: int = 5) -> dict[str, Any]:
    ticks = list(ScheduleTick.objects.filter(schedule=sch).select_related("run").order_by("-fired_at", "-intended_at")
                 [:recent])
    nxt: list[datetime] = []
    first = None if sch.paused or sch.deleted_at is not None else next_fire_at(sch)
    if first is not None:
        try:
            bounds = Bounds.of(sch)
            nxt = bounds.upcoming(bounds.ruled(specs.parse(sch.spec, sch.zone)), first, upcoming)  # skipped instants left out
        except KeepingTimeError:  # a Service's schedule: its mints follow its clocks
            nxt = [first]
    return {
        "id": sch.id, "object": "schedule", "name": sch.name, "spec": sch.spec, "zone": sch.zone,
        "target": {"kind": sch.target_kind, **sch.target}, "overlap": sch.overlap,
        "buffer_limit": sch.buffer_limit, "catchup_window": int(sch.catchup_window.total_seconds()),
        "paused": sch.paused, "pause_note": sch.pause_note or None, "paused_at": iso_z(sch.paused_at),
        "revision": sch.revision, "test_clock": None if is_live(sch.domain) else sch.domain,
        **_bounds_json(sch), "deleted": sch.deleted_at is not None, "deleted_at": iso_z(sch.deleted_at),
        "ended": ended(sch, first),
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
