"""The subject calendar's dates across jobs: schedule mints and cycle renewals (calendars.entries provider)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from calendars.closed_days import business_calendar
from calendars.entries import Entry, uid_for
from calendars.models import Subject
from timers.models import Timer

from . import registry
from .mints import will_mint
from .models import Job, Subscription
from .money import usd
from .people_dates import people_dates, people_inputs  # the people's dates: links, grants, tasks, deadlines

__all__ = ["people_dates", "people_inputs", "schedule_and_cycle_dates", "schedule_and_cycle_inputs"]


def schedule_and_cycle_dates(subject: Subject, domain: str, from_date: date | None) -> Iterable[Entry]:
    subs = {s.id: s for s in Subscription.objects.filter(subject=subject, domain=domain)}
    if not subs:
        return
    cal = business_calendar(subject)
    minted = {(j.subscription_id, j.schedule, j.period): j
              for j in Job.objects.filter(subscription_id__in=subs, domain=domain).exclude(schedule="")}
    timers = Timer.objects.filter(domain=domain, owner__in=subs, kind__in=["schedule", "cycle"],
                                  status__in=["armed", "fired"])
    for t in timers:
        sub = subs[t.owner]
        svc = registry.get(sub.service, sub.version)
        when = t.owed_at or t.fired_at
        if when is None:
            continue
        local = cal.today(when)
        if from_date is not None and local < from_date:
            continue
        base = f"{t.owner}:{t.kind}:{t.key.split(':')[2]}:{t.key.split(':')[3]}"
        if t.kind == "schedule":
            sch = svc.schedule[t.data["schedule"]]
            order = registry.get(sch.order)
            title = (order.title or "{period}").format(period=t.data["period"], service=sch.order)
            job = minted.get((sub.id, t.data["schedule"], t.data["period"]))
            if job is None and not will_mint(svc, t.data["schedule"], sub.input):
                continue  # its when reads the input false: a date that will not happen (schedule.skipped)
            status = f"the brand minted {job.id}" if job else ("skipped" if t.status == "fired" else "ahead")
            plain_status = "started" if job else ("skipped" if t.status == "fired" else "")
            yield Entry(date=local, at=when, what=f"{title} is minted", kind="schedule", answers_for="the brand",
                        status=status, uid=uid_for(base), on=sub.id, stamp=when, plain=f"{title}: work starts",
                        plain_status=plain_status)
        else:
            status = "renewed" if t.status == "fired" else ("ends" if sub.cancel_at_period_end else "ahead")
            yield Entry(date=local, at=when, what=f"{svc.title or svc.name} renews · {usd(svc.price.cents)}",
                        kind="cycle", answers_for="the customer", status=status, uid=uid_for(base), on=sub.id,
                        stamp=when)


def schedule_and_cycle_inputs(subject: Subject, domain: str) -> list[QuerySet | str]:
    """What ``schedule_and_cycle_dates`` reads: the subject's subscriptions (their input too: a schedule's
    ``when`` reads it), their minted jobs, their timers (any kind, any status), and the code of each Service a
    subscription runs unpinned (its working tree's bundle: a stored version never changes)."""
    subs = Subscription.objects.filter(subject=subject, domain=domain).order_by()
    return [
        subs.values_list("id", "service", "version", "cancel_at_period_end",
                         Cast("input", output_field=TextField())),
        Job.objects.filter(subscription__in=subs.values("id"), domain=domain).exclude(schedule="").order_by()
        .values_list("id", "subscription_id", "schedule", "period"),
        Timer.objects.filter(domain=domain, owner__in=subs.values("id")).order_by()
        .values_list("key", "kind", "status", "owed_at", "fired_at", Cast("data", output_field=TextField())),
        "services " + " ".join(f"{name}={registry.bundle(name).digest}" for name in sorted(registry.all_services())),
    ]
