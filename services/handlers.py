"""The domain's kind handlers: cycles (1), schedules (2), deadlines (5), money (8). Registered in ready()."""

from __future__ import annotations

from calendars.models import Subject
from timers import batch as batches
from timers import handlers
from timers.armer import FiringArmer
from timers.engine import Firing
from timers.rows import read
from timers.timeutil import iso_z, trace_z

from . import registry, schedules
from .deadlines import batch_job, signal_key
from .jobs import job_open
from .kinds import CYCLE, DEADLINE, MONEY, SCHEDULE, SIGNAL, SUBJECT_EVENT, UPDATE
from .mints import mint_at, period_ends, will_mint
from .models import Job, MoneyLine, Subscription
from .money import post_money, usd
from .periods import next_period, period_named
from .policies import signal_span
from .steps import step_goto
from .subject_events import subject_event
from .subscriptions import subscription_update


def _load_subs(ids: set) -> dict:
    return {s.id: s for s in Subscription.objects.select_related("subject__calendar").filter(pk__in=ids).order_by()}


def _sub_pks(sub: Subscription, table: str) -> tuple:
    return {"services_subscription": (sub.pk,), "calendars_subject": (sub.subject_id,),
            "calendars_calendar": (sub.subject.calendar_id,)}[table]


def _sub(f: Firing) -> Subscription:
    """The timer's subscription with its subject and calendar (read ahead for the batch's cycles and mints)."""
    sub = batches.row(f, f.key.owner, name="services.subscriptions", load=_load_subs, ahead=(CYCLE, SCHEDULE),
                      key_of=lambda t: t.owner, tables=("services_subscription", "calendars_subject",
                                                         "calendars_calendar"), pk=_sub_pks, carry=True)
    if sub is None:
        raise Subscription.DoesNotExist(f"no subscription {f.key.owner}")
    return sub


def fire_cycle(f: Firing) -> None:
    """Renew: post the charge as owed, reset allowances, arm the next cycle. Or end, if canceled."""
    sub = _sub(f)
    svc = registry.get(sub.service, sub.version)
    n = int(f.timer.data["cycle"])
    if sub.status != Subscription.Status.ACTIVE:
        f.what = f"skipped · subscription {sub.status}"
        return
    if sub.cancel_at_period_end:
        sub.status = Subscription.Status.ENDED
        sub.save(update_fields=["status"])
        f.record("subscription.ended", subject=sub.id, data={"cycle": n - 1, "reason": "canceled at the cycle's end"})
        f.what = f"ended · canceled at the end of cycle {n - 1}"
        return
    armer = FiringArmer(f)
    sub.cycle, sub.cycle_started_at, sub.usage = n, f.instant, {}
    batches.save(sub, fields=["cycle", "cycle_started_at", "usage"])
    post_money(armer=armer, brand_id=sub.brand_id, domain=sub.domain, kind="charge", cents=svc.price.cents,
               memo=f"{sub.service} · cycle {n}", owed_at=f.instant, key_owner=sub.id, occurrence=f"#{n}",
               subscription=sub)
    f.arm(f"{sub.id}:cycle:renew:#{n + 1}", owed_at=f.timer.owed_at + svc.every, handler=CYCLE,
          data={"cycle": n + 1}, opened_at=sub.opened_at, version=sub.version, what=f"renew · cycle {n + 1}, the next")
    total = sum(svc.price.includes.values())
    f.record("subscription.renewed", subject=sub.id,
             data={"cycle": n, "charge": svc.price.cents, "allowances": dict(svc.price.includes)})
    f.what = f"renewed · cycle {n} · {usd(svc.price.cents)} posted as owed · allowances reset, 0 of {total}"


def fire_schedule(f: Firing) -> None:
    """Mint the period's job (once: period_taken), then arm the next occurrence."""
    sub = _sub(f)
    svc = registry.get(sub.service, sub.version)
    name, period_name = f.timer.data["schedule"], f.timer.data["period"]
    sch = svc.schedule[name]
    ends = period_ends(svc, sub.input)
    period = period_named(sch.each, period_name, ends=ends)
    if sub.status != Subscription.Status.ACTIVE:
        f.record("schedule.skipped", subject=sub.id, data={"schedule": name, "period": period_name,
                                                           "reason": f"subscription {sub.status}"})
        f.what = f"{name} · period {period_name} · skipped, subscription {sub.status}"
        return
    nxt = next_period(sch.each, period, ends=ends)
    next_at = mint_at(sub=sub, name=name, period=nxt)
    f.arm(f"{sub.id}:schedule:{name}:{nxt.name}", owed_at=next_at, handler=SCHEDULE,
          data={"schedule": name, "period": nxt.name}, opened_at=sub.opened_at, version=sub.version,
          what=f"{name} · period {nxt.name}, the next")
    if sch.catch_up == "latest" and next_at <= max(f.now, f.instant):
        f.record("schedule.skipped", subject=sub.id, data={"schedule": name, "period": period_name,
                                                           "reason": "catch_up latest"})
        f.what = f"{name} · period {period_name} · skipped, a later period is owed (catch_up: latest)"
        return
    if not will_mint(svc, name, sub.input):
        f.record("schedule.skipped", subject=sub.id, data={"schedule": name, "period": period_name,
                                                           "reason": "when"})
        f.what = f"{name} · period {period_name} · skipped, when is false"
        return
    # The mint is a Run of the Service's Schedule: one per (schedule, intended instant), with its tick.
    started = schedules.service_fire(f, sub=sub, name=name, intended=f.timer.owed_at)
    if started is None:  # schedule_run_once: this instant's mint started already
        f.record("schedule.period_taken", subject=sub.id, data={"schedule": name, "period": period_name})
        f.what = f"{name} · period {period_name} · already minted"
        return
    allowance = svc.price.includes.get(sch.order, 0)
    used = int(sub.usage.get(sch.order, 0)) + 1
    order = registry.get(sch.order, registry.live_version(sch.order, domain=sub.domain, now=f.now))
    cents = 0 if used <= allowance else order.price.cents
    job = job_open(armer=FiringArmer(f), brand_id=sub.brand_id, domain=sub.domain, service=sch.order,
                   subject=sub.subject, period=period_name, input=dict(sub.input), subscription=sub, schedule=name,
                   price_cents=cents, if_new=True)
    if job is None:  # period_taken: this period was minted already
        schedules.service_minted(sch=started[0], run=started[1], job=None, now=max(f.now, f.instant),
                                   error="period_taken")
        f.record("schedule.period_taken", subject=sub.id, data={"schedule": name, "period": period_name})
        f.what = f"{name} · period {period_name} · already minted"
        return
    schedules.service_minted(sch=started[0], run=started[1], job=job, now=max(f.now, f.instant))
    sub.usage = {**sub.usage, sch.order: used}
    batches.save(sub, fields=["usage"])
    if cents and not registry.get(job.service, job.version).price.hold:  # a holding Service holds it instead
        post_money(armer=FiringArmer(f), brand_id=sub.brand_id, domain=sub.domain, kind="charge", cents=cents,
                   memo=f"{sch.order} {period_name} beyond the plan", owed_at=f.instant, key_owner=job.id,
                   occurrence=period_name, subscription=sub, job=job)
    f.record("schedule.minted", subject=sub.id, data={"schedule": name, "period": period_name, "job": job.id,
                                                      "charge": cents, "used": used, "of": allowance})
    f.what = f"{name} → {job.id} · period {period_name} · {usd(cents)} · {used} of {allowance}"


def _deadline_job(f: Firing) -> Job:
    """The deadline's job with its subscription (read ahead for the batch's deadlines)."""
    job = batch_job(f, f.timer.data["job"])
    if job is None:
        raise Job.DoesNotExist(f"no job {f.timer.data['job']}")
    return job


def _load_lines(ids: set) -> dict:
    return {line.id: line for line in read(MoneyLine.objects.filter(pk__in=ids).order_by())}


def fire_deadline(f: Firing) -> None:
    job = _deadline_job(f)
    point = f.timer.data["point"]
    if job.status != Job.Status.OPEN:
        f.what = f"skipped · job {job.status}"
        return
    if point == "at_risk":
        f.record("job.at_risk", subject=job.id, data={"late_at": f.timer.data.get("late_at") or iso_z(job.late_at)})
        f.what = f"{job.id} · at risk · late at {job.late_at:%Y-%m-%d %H:%MZ}"
        return
    job.late = True
    batches.save(job, fields=["late"])
    svc = registry.get(job.service, job.version)
    credit = svc.price.late_cents(job.price_cents)
    f.record("job.late", subject=job.id, data={"credit": credit})
    f.what = f"{job.id} · late"
    if credit:
        post_money(armer=FiringArmer(f), brand_id=job.brand_id, domain=job.domain, kind="credit", cents=credit,
                   memo=f"price.late · {job.service} {job.period}", owed_at=f.instant, key_owner=job.id,
                   occurrence="late", subscription=job.subscription, job=job)
        f.what += f" · price.late {usd(credit)} comes off the charge"


def fire_signal(f: Firing) -> None:
    """Nothing happened for the signal's span: raise it, and say where its goto moves the job.

    Activity does not move this timer (it is not on the closed re-arm list): the timer reads the job's last
    activity here. If some came within the span, nothing is raised and the next check is armed at
    last activity + span, under the next ``@n`` of the key (a fired key is never armed again)."""
    job = Job.objects.get(pk=f.timer.data["job"])
    name = f.timer.data["signal"]
    if job.status != Job.Status.OPEN:
        f.what = f"skipped · job {job.status}"
        return
    svc = registry.get(job.service, job.version)
    span = signal_span(job, svc, name)
    last = job.last_activity_at
    if last is not None and last + span > f.instant:
        nxt = last + span
        move = (f.key.move or 0) + 1
        f.arm(f"{signal_key(job, name)}@{move}", owed_at=nxt, handler=SIGNAL, opened_at=job.opened_at,
              data={"job": job.id, "signal": name, "since": last.isoformat()}, version=job.version,
              what=f"{name} · the next check, from the last activity")
        f.what = f"{job.id} · {name} · activity at {trace_z(last)} · next check {trace_z(nxt)}"
        return
    sig = svc.signals[name]
    f.record("signal.raised", subject=job.id, data={"signal": name, "goto": sig.goto, "silent": sig.silent,
                                                    "last_activity": iso_z(last) if last else None})
    f.what = f"{job.id} · {name} · silent {sig.silent}" + (f" → {sig.goto}" if sig.goto else "")
    if sig.goto and not step_goto(armer=FiringArmer(f), job=job, step=sig.goto, by=f"signal {name}"):
        f.what += " (already there)" if job.step == sig.goto else ""


def fire_money(f: Firing) -> None:
    line = batches.row(f, f.timer.data["line"], name="services.money_lines", load=_load_lines, ahead=(MONEY,),
                       key_of=lambda t: t.data["line"], tables=("services_moneyline",), pk=lambda v, _: (v.pk,),
                       carry=True)
    if line is None:
        raise MoneyLine.DoesNotExist(f"no money line {f.timer.data['line']}")
    if line.status != MoneyLine.Status.OWED:
        f.what = f"skipped · {line.status}"
        return
    line.status, line.collected_at = MoneyLine.Status.COLLECTED, f.instant
    batches.save(line, fields=["status", "collected_at"])
    f.record("money.collected", subject=line.subscription_id or line.job_id or "",
             data={"line": line.id, "kind": line.kind, "amount": line.amount_cents, "currency": line.currency,
                   "memo": line.memo})
    f.what = f"{line.kind} {usd(line.amount_cents)} · {line.memo}"


def fire_update(f: Firing) -> None:
    """A subscription update scheduled on the clock (the example's 'Acme adds Texas in March')."""
    sub = _sub(f)
    subscription_update(armer=FiringArmer(f), sub=sub, input=f.timer.data["input"])
    f.what = f"subscription updated · {f.timer.data['input']}"


def fire_subject_event(f: Firing) -> None:
    """An event on the subject scheduled on the clock (the example's 'the books arrive')."""
    data = f.timer.data
    subject = Subject.objects.get(pk=data["subject"])
    jobs = subject_event(armer=FiringArmer(f), subject=subject, type=data["type"], key=data["key"],
                         data=data.get("data", {}))
    f.what = f"{data['type']} on {subject.id}" + (f" · minted {', '.join(j.id for j in jobs)}" if jobs else "")


def register() -> None:
    for name, fn in ((CYCLE, fire_cycle), (SCHEDULE, fire_schedule), (DEADLINE, fire_deadline),
                     (MONEY, fire_money), (UPDATE, fire_update), (SIGNAL, fire_signal),
                     (SUBJECT_EVENT, fire_subject_event)):
        handlers.register(name, fn, atomic=True, replace=True)


