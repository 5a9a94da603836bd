"""The domain's objects as the API answers them: subscriptions, jobs and clocks, each with the next timer it
carries (the earliest armed one in the tick's order), many at once with one query per clock domain.

``next_timer`` is the earliest armed timer in the tick's order (owed_at, place, opened_at, key): for a
subscription its own timers; for a clock its items' (``clk_…#US``); for a job its own and its clocks'.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from calendars.models import Clock, ClockItem
from timers.models import Timer, is_live
from timers.timeutil import iso_z

from . import registry
from .declare import Service, ServiceError
from .models import Job, Subscription
from .money import usd
from .selectors import armed_timers, first_by, owner_root


def timer_summary(t: Timer | None) -> dict | None:
    if t is None:
        return None
    return {"id": t.id, "key": t.key, "owed_at": iso_z(t.owed_at), "kind": t.kind, "on": t.owner}


def _service(name: str) -> Service | None:
    try:
        return registry.get(name)
    except ServiceError:  # a Service no longer registered: its objects still read
        return None


def _test_clock(domain: str) -> str | None:
    return None if is_live(domain) else domain


def _price(cents: int, every: str | None = None) -> dict:
    return {"cents": cents, "currency": "usd", "display": usd(cents), "every": every}


def usage_json(sub: Subscription, svc: Service | None) -> dict:
    """Allowances this cycle, as "1 of 1": every Service the plan includes, and any used beyond it."""
    includes = dict(svc.price.includes) if svc else {}
    used = {k: int(v) for k, v in (sub.usage or {}).items()}
    return {name: {"used": used.get(name, 0), "of": includes.get(name, 0)} for name in [*includes, *sorted(
        set(used) - set(includes))]}


def subscription_json(sub: Subscription, nxt: Timer | None) -> dict:
    svc = _service(sub.service)
    return {
        "id": sub.id,
        "object": "subscription",
        "service": sub.service,
        "subject": sub.subject_id,
        "status": sub.status,
        "cancel_at_period_end": sub.cancel_at_period_end,
        "paused_at": iso_z(sub.paused_at),
        "pause_note": sub.pause_note or None,
        "cycle": sub.cycle,
        "cycle_started_at": iso_z(sub.cycle_started_at),
        "opened_at": iso_z(sub.opened_at),
        "usage": usage_json(sub, svc),
        "price": _price(svc.price.cents, svc.price.every) if svc else None,
        "input": sub.input,
        "version": sub.version or None,
        "test_clock": _test_clock(sub.domain),
        "metadata": sub.metadata or {},
        "next_timer": timer_summary(nxt),
    }


def subscriptions_json(subs: list[Subscription]) -> list[dict]:
    """Many subscriptions with their next timers in one query per clock domain."""
    nxt: dict[str, Timer] = {}
    for domain in {s.domain for s in subs}:
        ids = [s.id for s in subs if s.domain == domain]
        nxt.update(first_by(armed_timers(domain, ids), lambda t: owner_root(t.owner)))
    return [subscription_json(s, nxt.get(s.id)) for s in subs]


def job_json(job: Job, clocks: list[str], nxt: Timer | None) -> dict:
    return {
        "id": job.id,
        "object": "job",
        "service": job.service,
        "period": job.period,
        "subject": job.subject_id,
        "subscription": job.subscription_id,
        "schedule": job.schedule or None,
        "status": job.status,
        "late": job.late,
        "late_at": iso_z(job.late_at),
        "waiting_on": job.waiting_on or None,
        "step": job.step or None,
        "opened_at": iso_z(job.opened_at),
        "closed_at": iso_z(job.closed_at),
        "price": _price(job.price_cents),
        "version": job.version or None,
        "test_clock": _test_clock(job.domain),
        "metadata": job.metadata or {},
        "clocks": clocks,
        "next_timer": timer_summary(nxt),
    }


def jobs_json(jobs: list[Job]) -> list[dict]:
    """Many jobs with their clocks and next timers: one query for the clocks, one per clock domain for the
    timers (the jobs' own and their clocks' items'), never one per job or clock."""
    if not jobs:
        return []
    clocks: dict[str, list[str]] = {j.id: [] for j in jobs}
    job_of: dict[str, str] = {j.id: j.id for j in jobs}
    rows = (Clock.objects.filter(brand_id__in={j.brand_id for j in jobs}, owner_ref__in=list(clocks),
                                 lives_on=Clock.LivesOn.JOB)
            .order_by("opened_at", "name", "id").values_list("id", "owner_ref", "domain"))
    domain_of_job = {j.id: j.domain for j in jobs}
    for clock_id, owner, domain in rows:
        if domain_of_job.get(owner) == domain:
            clocks[owner].append(clock_id)
            job_of[clock_id] = owner
    nxt: dict[str, Timer] = {}
    for domain in set(domain_of_job.values()):
        roots = [r for r, j in job_of.items() if domain_of_job[j] == domain]
        nxt.update(first_by(armed_timers(domain, roots), lambda t: job_of.get(owner_root(t.owner))))
    return [job_json(j, clocks[j.id], nxt.get(j.id)) for j in jobs]


def clock_json(clock: Clock) -> dict:
    items = list(clock.items.all().order_by("due_at", "item"))
    timers = armed_timers(clock.domain, [clock.id])
    by_item = first_by(timers, lambda t: t.owner)
    calendar = clock.subject.calendar
    zone = ZoneInfo(calendar.zone if calendar is not None else "UTC")
    return {
        "id": clock.id,
        "object": "clock",
        "name": clock.name,
        "title": clock.title,
        "spec": clock.spec,
        "subject": clock.subject_id,
        "period": clock.period,
        "hard": clock.hard,
        "lives_on": clock.lives_on,
        "owner_ref": clock.owner_ref,
        "answers_for": clock.answers_for or None,
        "version": clock.version or None,
        "opened_at": iso_z(clock.opened_at),
        "zone": zone.key,
        "test_clock": _test_clock(clock.domain),
        "items": [item_json(i, zone, by_item.get(i.owner_key)) for i in items],
        "next_timer": timer_summary(timers[0] if timers else None),
    }


def item_json(item: ClockItem, zone: ZoneInfo, nxt: Timer | None) -> dict:
    return {
        "item": item.item or None,
        "civil": item.civil.isoformat(),
        "due_date": item.due_date.isoformat(),
        "due_at": iso_z(item.due_at),
        "local": item.due_at.astimezone(zone).isoformat(timespec="seconds"),
        "rolled_why": item.rolled_why or None,
        "moves": item.moves,
        "status": item.status,
        "satisfied_at": iso_z(item.satisfied_at),
        "next_timer": timer_summary(nxt),
    }


def render_sub(sub: Subscription) -> dict:
    """One subscription, as a write's answer."""
    return subscriptions_json([sub])[0]


def render_job(job: Job) -> dict:
    """One job, as a write's answer."""
    return jobs_json([job])[0]
