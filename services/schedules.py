"""The domain's part of schedules (timers/schedules.py, timers/schedule_fires.py): calendar-period specs and Service targets.

- A spec ``{"each": "month", "at": "1mo after end", "time": "09:00", "ends": "12-31"}`` fires once per
  period (tax_year, year, quarter, month) at the offset from its start or end, at a local time in the
  schedule's zone, by the calendar's DST rule (a skipped minute at the next one that exists).
- A target ``{"service": "t-task", "subject": "sbj_…", "input": {…}}`` opens a job of the Service for
  the subject on each fire (its tick succeeds when the job is minted); the Run is open until the job is
  delivered, canceled or lapses, and ``cancel_other`` cancels it.
- A Service's own ``schedule`` (a job per period for a subscription) is a Schedule row too
  (``target_kind`` subscription, ``owner_ref`` "sbn_…:name"): its mints are Runs, one per (schedule, period's
  instant), and ticks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time
from functools import partial
from zoneinfo import ZoneInfo

from calendars.models import Subject
from calendars.offsets import OffsetError, parse_offset
from timers import batch as batches
from timers import schedule_spec
from timers.armer import FiringArmer
from timers.domains import domain_id
from timers.engine import Firing
from timers.errors import KeepingTimeError, NotFound
from timers.ids import new_id
from timers.models import Brand, Schedule, ScheduleRun, ScheduleTick
from timers.rows import insert_new
from timers.schedule_runs import close_run, dead_letter
from timers.schedule_targets import Started, TargetKind, compact, register_target
from timers.timeutil import local_instant, zone_named

from . import registry
from .declare import Period as DeclaredPeriod
from .declare import ServiceError, check_input
from .jobs import job_end, job_open
from .kinds import SCHEDULE
from .mints import mints_held
from .models import Job, Subscription
from .periods import EACH, Period, next_period, period_of, previous_period

# -- calendar periods --------------------------------------------------------------------------------


AT_PATTERN = r"^[1-9][0-9]?(?:d|w|mo|y) (?:before|after) (?:start|end)$"
TIME_PATTERN = r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"
ENDS_PATTERN = r"^(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))$"
_AT, _TIME, _ENDS = (re.compile(p[1:-1]) for p in (AT_PATTERN, TIME_PATTERN, ENDS_PATTERN))  # fullmatch


@dataclass(frozen=True)
class EachPeriod:
    each: str
    at: object | None  # calendars.offsets.Offset from the period's start or end; None: the start itself
    time: time
    ends: str
    zone: ZoneInfo

    def when(self, p: Period) -> datetime:
        if self.at is None:
            day = p.start
        else:
            day = self.at.apply(p.end if self.at.anchor == "end" else p.start)
        return local_instant(datetime.combine(day, self.time), self.zone)

    def after(self, t: datetime) -> datetime | None:
        p = period_of(self.each, t.astimezone(self.zone).date(), ends=self.ends)
        for _ in range(24 * 100):  # an offset (up to 99y) may put a period's fire many periods from it
            prev = previous_period(self.each, p, ends=self.ends)
            if self.when(prev) <= t:
                break
            p = prev
        for _ in range(24 * 100):
            if self.when(p) > t:
                return self.when(p)
            p = next_period(self.each, p, ends=self.ends)
        return None


def _parse_each(spec: dict, zone: ZoneInfo) -> EachPeriod:
    """{"each": "month", "at": "1mo after end", "time": "09:00", "ends": "12-31"}: at, time and ends optional."""
    bad = schedule_spec.InvalidSpec
    extra = set(spec) - {"each", "at", "time", "ends"}
    if extra:
        raise bad(f"a calendar period spec has each, at, time and ends; not {sorted(extra)}")
    each = spec["each"]
    if each not in EACH:
        raise bad(f"each is one of {', '.join(EACH)}; not {str(each)[:40]!r}")
    text = spec.get("at")
    if text is not None and (not isinstance(text, str) or not _AT.fullmatch(text)):
        raise bad(f"at {str(text)[:40]!r} is an offset from the period's start or end, e.g. '1mo after end' or "
                  "'10d before end' (1 to 99 days, weeks, months or years); the start itself when absent")
    raw = spec.get("time", "09:00")
    if not isinstance(raw, str) or not _TIME.fullmatch(raw):
        raise bad(f"time is a local time HH:MM, e.g. 09:00; not {str(raw)[:20]!r}")
    ends = spec.get("ends", "12-31")
    if not isinstance(ends, str) or not _ENDS.fullmatch(ends):
        raise bad(f"ends is the year's last day MM-DD, e.g. 06-30; not {str(ends)[:20]!r}")
    try:
        at = parse_offset(text, anchors=("end", "start")) if text else None
    except OffsetError as exc:  # pragma: no cover - the pattern admits only what parse_offset reads
        raise bad(f"at: {exc}") from None
    return EachPeriod(each, at, time.fromisoformat(raw), ends, zone)


# -- the Service target ------------------------------------------------------------------------------
def _clean_service(target: dict, brand: Brand, domain: str) -> dict:
    extra = set(target) - {"service", "subject", "input"}
    if extra:
        raise KeepingTimeError(f"a Service target has service, subject and input; not {sorted(extra)}",
                               code="invalid_target")
    name, subject = target.get("service"), target.get("subject")
    try:
        svc = registry.get(name) if isinstance(name, str) else None
    except ServiceError:
        svc = None
    if svc is None:
        raise KeepingTimeError(f"target.service {str(name)[:64]!r} is no Service this brand declares",
                               code="invalid_target")
    if not isinstance(subject, str) or len(subject) > 64:
        raise KeepingTimeError("target.subject is a subject's id (sbj_…)", code="invalid_target")
    if not Subject.objects.filter(pk=subject, brand=brand, domain=domain).exists():
        err = NotFound(f"target.subject: no subject {subject[:40]!r} on this clock")
        err.param = "target.subject"
        raise err
    data = target.get("input") or {}
    if not isinstance(data, dict):
        raise KeepingTimeError("target.input is an object", code="invalid_target")
    # As an event that opens the Service is checked: a bad input is refused now (400 invalid_input), not at
    # every fire as a dead letter.
    check_input(svc.input, data, where="target.input")
    return {"service": name, "subject": subject, "input": data}


def _service_schema() -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["service", "subject"],
            "properties": {"service": {"type": "string", "enum": sorted(registry.all_services()) or [""]},
                           "subject": {"type": "string", "pattern": "^[^\\u0000]+$", "maxLength": 64},
                           "input": {"type": "object", "additionalProperties": {}}}}


def _start_service(f: Firing, sch: Schedule, run: ScheduleRun) -> Started:
    subject = Subject.objects.get(pk=sch.target["subject"])
    service, data = sch.target["service"], dict(sch.target.get("input") or {})
    svc = registry.get(service, registry.live_version(service, domain=sch.domain, now=f.now))
    period = job_period(sch, svc.subject.period, data, run.intended_at)
    plan, slot = _plan_minting(subject, service)
    if plan is None:
        job = job_open(armer=FiringArmer(f), brand_id=sch.brand_id, domain=sch.domain, service=service,
                       subject=subject, period=period, input=data, schedule=sch.id,
                       job_id=domain_id("job", sch.domain, run.id, length=10))
        return Started(ref=job.id, tick="succeeded")
    # The subject's plan mints this Service each period: the period's job is the plan's (its slot and the id
    # its mint or an order would take), opened once, by whichever comes first (period_taken).
    opened = job_open(armer=FiringArmer(f), brand_id=sch.brand_id, domain=sch.domain, service=service,
                      subject=subject, period=period, input=data, subscription=plan, schedule=slot, if_new=True)
    if opened is None:
        f.record("schedule.period_taken", subject=sch.id, data={"service": service, "period": period,
                                                                "subscription": plan.id, "schedule": slot})
        return Started(tick="dead_lettered", error=f"period_taken: {subject.name} has {service} {period} "
                                                   f"already, under {plan.id}")
    return Started(ref=opened.id, tick="succeeded")


def _plan_minting(subject: Subject, service: str) -> tuple[Subscription | None, str]:
    """The subject's active plan whose own schedule mints ``service``, and that schedule's name."""
    for sub in Subscription.objects.filter(subject=subject, status=Subscription.Status.ACTIVE).order_by(
            "opened_at", "id"):
        for name, decl in registry.get(sub.service, sub.version).schedule.items():
            if decl.order == service:
                return sub, name
    return None, ""


def job_period(sch: Schedule, declared: DeclaredPeriod | None, data: dict, intended: datetime) -> str:
    """The period of the job a fire opens: of the kind the Service declares (``SubjectSpec.period``), the one
    whose fire this is for a calendar-period spec of that kind (``each quarter at 15d after end`` opens the
    quarter that ended), else the one the fire's day falls in, in the schedule's zone. A Service that declares
    no period: the fire's instant (20270301T0900Z)."""
    if declared is None:
        return compact(intended)
    each, ends = declared.of, declared.ends_for(data)
    spec = schedule_spec.parse(sch.spec, sch.zone)
    p = period_of(each, intended.astimezone(zone_named(sch.zone)).date(), ends=ends)
    if isinstance(spec, EachPeriod) and spec.each == each:
        # An offset may put a period's fire periods away from it: back while the fires are later, on while
        # they are earlier.
        for step, past in ((previous_period, lambda w: w < intended), (next_period, lambda w: w > intended)):
            q = p
            for _ in range(24 * 100):
                w = spec.when(q)
                if w == intended:
                    return q.name
                if past(w):
                    break
                q = step(each, q, ends=ends)
    return p.name


def _cancel_service(f: Firing, run: ScheduleRun) -> bool:
    job = Job.objects.filter(pk=run.ref, status=Job.Status.OPEN).first()
    if job is None:
        return False
    job_end(armer=FiringArmer(f), job=job, status=Job.Status.CANCELED, reason="overlap cancel_other")
    return True


def _clean_subscription(target: dict, brand: Brand, domain: str) -> dict:
    return {"subscription": target["subscription"], "schedule": target["schedule"]}


def _start_subscription(f: Firing, sch: Schedule, run: ScheduleRun) -> Started:  # pragma: no cover
    raise KeepingTimeError("a Service's schedule mints through its subscription's timer", code="invalid_target")


# -- a Service's own schedule ------------------------------------------------------------------------
def service_schedule(*, sub, name: str, now: datetime) -> Schedule:
    """The Schedule row of a subscription's schedule ``name`` (made once, with the subscription)."""
    ref = f"{sub.id}:{name}"
    sch = Schedule.objects.filter(domain=sub.domain, owner_ref=ref).first()
    if sch is not None:
        return sch
    svc = registry.get(sub.service, sub.version)
    decl = svc.schedule[name]
    return Schedule.objects.create(
        id=domain_id("sch", sub.domain, ref), brand_id=sub.brand_id, domain=sub.domain,
        name=f"{sub.service} · {name}", spec={"each": decl.each, "at": decl.at, "time": decl.time,
                                             "service": sub.service},
        zone=sub.subject.calendar.zone if sub.subject.calendar_id else "UTC",
        target_kind=Schedule.Target.SUBSCRIPTION, target={"subscription": sub.id, "schedule": name},
        overlap=Schedule.Overlap.ALLOW, owner_ref=ref, created_at=now)


def service_fire(f: Firing, *, sub, name: str, intended: datetime) -> tuple[Schedule, ScheduleRun] | None:
    """A subscription's mint is due for ``intended``: the Run of (schedule, intended), once; None when that
    instant's Run started already (a wake that arrived twice). The Service's ``catch_up`` (each missed period,
    or only the latest) decides what a gap mints, before this: its mints are not held to a window."""
    sch = batches.row(f, f"{sub.id}:{name}", name="services.schedules", load=partial(_load_schedules, sub.domain),
                      ahead=(SCHEDULE,), key_of=lambda t: f"{t.owner}:{t.data['schedule']}",
                      tables=("timers_schedule",), pk=lambda v, _: (v.pk,))
    if sch is None:  # a subscription made before schedules were rows
        sch = service_schedule(sub=sub, name=name, now=sub.opened_at)
    now = max(f.now, f.instant)
    run = ScheduleRun(id=domain_id("run", sub.domain, f.timer.key), schedule=sch,
                      intended_at=intended, state=ScheduleRun.State.OPEN, started_at=now)
    started = _runs_started(f, sch)
    if started is None:
        if not insert_new([run]):  # (schedule, intended) is taken: this instant's Run started already
            return None
    else:  # asked of the batch (one query for its mints), and kept
        if (sch.id, intended) in started:
            return None
        started.add((sch.id, intended))
        batches.create(run, kept_by=(RUNS_STARTED,))
    return sch, run


RUNS_STARTED = "services.runs_started"


def _runs_started(f: Firing, sch: Schedule) -> set | None:
    """(schedule, intended) of the Runs started, for the schedules whose mints the batch holds
    (``schedule_run_once`` backs it); None outside a batch that keeps writes (timers.batch.taken)."""

    def ahead() -> set:
        schedules = batches.current().caches.get("services.schedules") or {}
        return {s.id for t in mints_held(f) if (s := schedules.get(f"{t.owner}:{t.data['schedule']}")) is not None}

    return batches.taken(RUNS_STARTED, tables=("timers_schedulerun",), owner=sch.id, ahead=ahead,
                         load=lambda ids: set(ScheduleRun.objects.filter(schedule_id__in=ids)
                                              .values_list("schedule_id", "intended_at")))


def _load_schedules(domain: str, refs: set) -> dict:
    # Locked for the batch: a pause or an edit of a schedule waits for the mints that read it.
    return {s.owner_ref: s for s in Schedule.objects.select_for_update().filter(domain=domain, owner_ref__in=refs)}


def service_minted(*, sch: Schedule, run: ScheduleRun, job: Job | None, now: datetime, error: str = "") -> None:
    """The mint's tick: succeeded with its job (the Run open until the job ends), or dead-lettered."""
    tick = ScheduleTick(id=new_id("tck", seed=f"{run.id}|tick"), schedule=sch, run=run,
                        intended_at=run.intended_at, fired_at=now,
                        state=ScheduleTick.State.SUCCEEDED if job else ScheduleTick.State.OPEN,
                        settled_at=now if job else None)
    if job is not None:  # a new run's first tick: its key cannot be taken
        batches.create(tick)
        run.ref = job.id
        batches.save(run, fields=["ref"])
        return
    tick.save(force_insert=True)
    dead_letter(sch, tick, now, error=error or "not minted", status=None, payload={"period": run.intended_at.isoformat()})
    close_run(run, now, f"refused · {error}"[:200])


def register() -> None:
    schedule_spec.register_kind("each", _parse_each, schema={
        "type": "object", "additionalProperties": False, "required": ["each"],
        "properties": {"each": {"type": "string", "enum": list(EACH)},
                       "at": {"type": "string", "pattern": AT_PATTERN},
                       "time": {"type": "string", "pattern": TIME_PATTERN},
                       "ends": {"type": "string", "pattern": ENDS_PATTERN}}})
    register_target("service", TargetKind(clean=_clean_service, start=_start_service, cancel=_cancel_service,
                                          schema=_service_schema))
    register_target("subscription", TargetKind(clean=_clean_subscription, start=_start_subscription))

