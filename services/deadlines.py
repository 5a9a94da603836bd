"""A job's deadline (``price.within``): its keys and times, arming it, the one in force after moves, the
batch's read of the jobs whose deadlines fire, and the deadline that follows a clock when its date moves.

A deadline written before a clock ('5d before file') is at risk at three quarters of the way from the open
to the late point; a move of the clock's date supersedes its armed timers and arms them again at ``@n+1``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from calendars.clock_keys import RUNG_HANDLER
from calendars.closed_days import business_calendar
from calendars.models import ClockItem
from timers import batch as batches
from timers.armer import Armer
from timers.engine import Firing
from timers.rearm import Rearm
from timers.rows import read
from timers.timeutil import iso_z, three_quarters

from . import registry
from .declare import Service
from .kinds import DEADLINE
from .models import Job


def deadline_key(job: Job, point: str, move: int = 0) -> str:
    base = f"{job.id}:deadline:{point}:{job.period}"
    return base if move == 0 else f"{base}@{move}"


def signal_key(job: Job, name: str) -> str:
    return f"{job.id}:deadline:{name}:{job.period}"


def _deadline_times(job: Job, svc: Service, opened: dict[str, list] | None = None) -> tuple[datetime, datetime]:
    """(at_risk, late_at): late at the end of ``price.within`` (from the open, or from a clock's date: the
    earliest of its items), at risk at three quarters of the way there. ``opened``: the items of the clocks
    the job has just opened, by clock name (its own clocks, so no query is needed)."""
    within = svc.within
    if within.anchor == "open":
        late_at = job.opened_at + within.span
    else:
        items = (opened or {}).get(within.anchor) or ClockItem.objects.filter(
            clock__owner_ref=job.id, clock__domain=job.domain, clock__name=within.anchor)
        anchor = min(i.due_date for i in items)
        late_at = business_calendar(job.subject).close_of(within.apply(anchor)) + timedelta(minutes=1)
    at_risk = three_quarters(job.opened_at, late_at)
    return at_risk, late_at


def arm_deadline(armer: Armer, job: Job, svc: Service, *, opened: dict[str, list] | None = None) -> None:
    at_risk, late_at = _deadline_times(job, svc, opened)
    job.late_at = late_at
    batches.save(job, fields=["late_at"])
    for point, owed in (("at_risk", at_risk), ("late", late_at)):
        armer.arm(deadline_key(job, point), owed_at=owed, handler=DEADLINE,
                  data={"job": job.id, "point": point}, opened_at=job.opened_at, version=job.version)


def _last_deadline_move(armer: Armer, job: Job, point: str) -> int | None:
    """The last @n of the deadline's ``point`` timer (a clock move re-arms at @n+1); None if it has none."""
    move = None
    while armer.state(deadline_key(job, point, 0 if move is None else move + 1)) is not None:
        move = 0 if move is None else move + 1
    return move


def current_deadline_key(armer: Armer, job: Job, point: str) -> str | None:
    """The deadline timer of ``point`` now in force."""
    move = _last_deadline_move(armer, job, point)
    return None if move is None else deadline_key(job, point, move)


def _load_jobs(ids: set) -> dict:
    return {j.id: j for j in read(Job.objects.filter(pk__in=ids).order_by(), related=("subscription",))}


def _job_pks(job: Job, table: str) -> tuple:
    return (job.pk,) if table == "services_job" else (job.subscription_id,)


def _rung_job(timer) -> str | None:
    of = (timer.data or {}).get("of", "")
    return of if of.startswith("job_") else None


def batch_job(f: Firing, job_id: str, *, of_clocks: bool = False) -> Job | None:
    """A job with its subscription, from the batch: read ahead for the batch's deadlines, or (``of_clocks``,
    a job asked after for its clock's move) for the jobs whose clocks the batch's rungs ring."""
    ahead, key_of = ((RUNG_HANDLER,), _rung_job) if of_clocks else ((DEADLINE,), lambda t: t.data["job"])
    return batches.row(f, job_id, name="services.deadline_jobs", load=_load_jobs, ahead=ahead, key_of=key_of,
                       tables=("services_job", "services_subscription"), pk=_job_pks, carry=True)


def deadline_follows_clock(armer: Armer, item: ClockItem) -> None:
    """A deadline written before a clock ('5d before file') follows the clock: a move of its date supersedes
    the deadline's armed timers (by clock.moved) and arms them again at @n from the new date. A deadline that
    came already (the job is late) stays where it came."""
    clock = item.clock
    if not clock.owner_ref.startswith("job_"):
        return
    f = armer.firing
    if f is None:
        job = Job.objects.filter(pk=clock.owner_ref, domain=clock.domain, status=Job.Status.OPEN, late=False).first()
    else:
        job = batch_job(f, clock.owner_ref, of_clocks=True)  # a clock's job: read with those of the rungs' clocks
    if job is None or job.domain != clock.domain or job.status != Job.Status.OPEN or job.late:
        return
    svc = registry.get(job.service, job.version)
    if svc.within is None or svc.within.anchor != clock.name:
        return
    at_risk, late_at = _deadline_times(job, svc)
    if late_at == job.late_at:
        return
    # The current timers: the last @n of each point (the tick's view, so this batch's arms count).
    move = _last_deadline_move(armer, job, "late")
    if move is None:
        return
    for point, owed in (("at_risk", at_risk), ("late", late_at)):
        prev = deadline_key(job, point, move)
        state = armer.state(prev)
        if state is None:
            continue
        if state[0] != "armed" and point == "at_risk" and owed <= armer.now:
            continue  # it warned already, and the new warning would be in the past: once is enough
        key = deadline_key(job, point, move + 1)
        armer.arm(key, owed_at=owed, handler=DEADLINE, data={"job": job.id, "point": point, "late_at": iso_z(late_at)},
                  opened_at=job.opened_at, version=job.version)
        if state[0] in ("armed", "held"):
            armer.supersede(prev, by=Rearm.CLOCK_MOVED, successor=key)
        if state[0] == "held" and job.waiting_on:  # still the party's work: the new at-risk waits too
            armer.hold(key, by=Rearm.HOLD, who=job.waiting_on)
    armer.record("job.deadline_moved", subject=job.id, data={"from": iso_z(job.late_at) if job.late_at else None, "to": iso_z(late_at),
                                                             "clock": clock.name, "item": item.item})
    job.late_at = late_at
    batches.save(job, fields=["late_at"])
