"""Orders: a one-off job a brand opens for a subject (``POST /jobs``), and a subject's subscription to a plan
(``POST /subscriptions``), each checked before anything is written.

An order within an active subscription's allowance for the Service (the plan's ``includes``) is included: it
costs nothing and is counted in the subscription's usage. Beyond it, or with no plan that includes it, it is
priced as the Service says (``price.usd``): held at the open for a Service that holds (``price.hold``), else
charged on a money line collected by its money timer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from calendars.closed_days import business_calendar
from calendars.models import Subject
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.models import Brand

from . import registry, tiers
from .declare import Service, ServiceError, check_input
from .jobs import job_open
from .models import Job, Subscription
from .money import post_money
from .periods import period_of
from .subscriptions import subscription_create

# A period's name by the kind a Service declares (services/periods.py names them so).
PERIOD_NAMES = {
    "tax_year": (re.compile(r"^(19[0-9]{2}|[2-8][0-9]{3}|9000)$"), "a year, e.g. 2027"),
    "year": (re.compile(r"^(19[0-9]{2}|[2-8][0-9]{3}|9000)$"), "a year, e.g. 2027"),
    "quarter": (re.compile(r"^(19[0-9]{2}|[2-8][0-9]{3}|9000)-Q[1-4]$"), "a quarter, e.g. 2027-Q2"),
    "month": (re.compile(r"^(19[0-9]{2}|[2-8][0-9]{3}|9000)-(0[1-9]|1[0-2])$"), "a month, e.g. 2027-05"),
}


def _bad(message: str, *, param: str, code: str = "invalid_request", status: int = 400) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code, status=status)
    err.param = param
    return err


def is_plan(svc: Service) -> bool:
    """A Service a subject subscribes to: it renews (``price.every``), mints on a schedule, or on events."""
    return bool(svc.price.every or svc.schedule or svc.on)


def plans() -> list[str]:
    return sorted(name for name, svc in registry.all_services().items() if is_plan(svc))


def _service(name: Any, *, param: str) -> Service:
    known = registry.all_services()
    if not isinstance(name, str) or name not in known:
        raise _bad(f"{param}: no Service {name!r}; Services: {', '.join(sorted(known))}", param=param,
                   code="invalid_service")
    return known[name]


def _same_kind(svc: Service, subject: Subject, *, param: str) -> None:
    if svc.subject.kind != subject.kind:
        raise _bad(f"{param}: {svc.name} is for a {svc.subject.kind}; {subject.name} is a {subject.kind}",
                   param=param, code="subject_kind_mismatch")


@transaction.atomic
def subscription_start(*, brand: Brand, subject: Subject, plan: str, input: Mapping[str, Any] | None = None,
                       metadata: Mapping[str, str] | None = None) -> Subscription:
    """Subscribe a subject to a plan on its own clock (a test clock's subject starts at the clock's time): the
    plan's declared input checked (``invalid_input`` naming the field), the live tier checked
    (``plan_<tier>_required``), the first cycle and its schedules armed, all in one transaction."""
    svc = _service(plan, param="plan")
    if not is_plan(svc):
        raise _bad(f"plan: {plan} is ordered one job at a time (POST /jobs), not subscribed to; plans: "
                   f"{', '.join(plans()) or 'none'}", param="plan", code="not_a_plan")
    _same_kind(svc, subject, param="plan")
    try:
        with transaction.atomic():
            sub = subscription_create(brand=brand, domain=subject.domain, subject=subject, service=plan,
                                      input=dict(input or {}))
    except IntegrityError:
        taken = (Subscription.objects.filter(subject=subject, service=plan, status=Subscription.Status.ACTIVE)
                 .values_list("pk", flat=True).first())
        raise _bad(f"plan: {subject.name} is subscribed to {plan} already: {taken}", param="plan",
                   code="subscription_exists", status=409) from None
    if metadata:
        sub.metadata = dict(metadata)
        sub.save(update_fields=["metadata"])
    return sub


def _period(svc: Service, period: Any, *, subject: Subject, input: Mapping[str, Any], now: datetime) -> str:
    """The job's period: as given, in the name its Service's period kind takes; else the one today falls in."""
    kind = svc.subject.period.of if svc.subject.period else None
    if period is None or period == "":
        if kind is None:
            raise _bad(f"period: {svc.name} declares no period; name the job's (e.g. an order number)",
                       param="period")
        ends = svc.subject.period.ends_for(dict(input)) if kind == "tax_year" else "12-31"
        return period_of(kind, business_calendar(subject).today(now), ends=ends).name
    if not isinstance(period, str) or not re.fullmatch(r"[A-Za-z0-9_.#-]{1,32}", period):
        raise _bad("period: 1 to 32 letters, digits or _.#-", param="period")
    if kind in PERIOD_NAMES:
        pattern, says = PERIOD_NAMES[kind]
        if not pattern.match(period):
            raise _bad(f"period: {svc.name}'s periods are {kind.replace('_', ' ')}s: {says}, not {period!r}",
                       param="period")
    return period


@transaction.atomic
def job_order(*, brand: Brand, subject: Subject, service: str, input: Mapping[str, Any] | None = None,
              period: str | None = None, metadata: Mapping[str, str] | None = None) -> Job:
    """A one-off job of ``service`` for ``subject``, on the subject's clock, at its time."""
    svc = _service(service, param="service")
    _same_kind(svc, subject, param="service")
    armer = DirectArmer(brand=brand, domain=subject.domain)
    input = dict(input or {})
    # The subject's plan that includes the Service, locked: two orders at once count one allowance each.
    active = (Subscription.objects.select_for_update().filter(subject=subject, status=Subscription.Status.ACTIVE)
              .order_by("opened_at", "id"))
    plan = next((s for s in active if service in registry.get(s.service, s.version).price.includes), None)
    version = registry.live_version(service, domain=subject.domain, now=armer.now)
    try:
        reads = registry.get(service, version).input
    except ServiceError as exc:  # a stored version that no longer loads: not the caller's input
        raise KeepingTimeError(str(exc), code="service_unavailable", status=409) from None
    # The plan fills what the Service reads (the entity, the states) and the order's own input comes on top;
    # the plan's other fields are the plan's, not this job's (a Service that declares no input reads them all).
    fills = {k: v for k, v in plan.input.items() if not reads or k in reads} if plan else {}
    merged = {**fills, **input}
    check_input(reads, merged)
    tiers.require(tier=brand.tier, domain=subject.domain, svc=svc)
    name = _period(svc, period, subject=subject, input=merged, now=armer.now)
    allowance = registry.get(plan.service, plan.version).price.includes.get(service, 0) if plan else 0
    used = int(plan.usage.get(service, 0)) + 1 if plan else 0
    included = plan is not None and used <= allowance
    cents = 0 if included else registry.get(service, version).price.cents
    try:
        with transaction.atomic():
            job = job_open(armer=armer, brand_id=brand.id, domain=subject.domain, service=service, subject=subject,
                           period=name, input=merged, subscription=plan, schedule="order", price_cents=cents)
    except IntegrityError:  # the period's job is there: ordered, or minted by the plan (its id is the same)
        taken = (Job.objects.filter(subject=subject, service=service, period=name).order_by("opened_at", "id")
                 .values_list("pk", flat=True).first())
        raise _bad(f"period: {subject.name} has ordered {service} for {name} already: {taken}", param="period",
                   code="job_exists", status=409) from None
    if metadata:
        job.metadata = dict(metadata)
        job.save(update_fields=["metadata"])
    if plan is not None:
        plan.usage = {**plan.usage, service: used}
        plan.save(update_fields=["usage"])
    if cents and not svc.price.hold:  # a holding Service held it at the open instead
        post_money(armer=armer, brand_id=brand.id, domain=subject.domain, kind="charge", cents=cents,
                   memo=f"{service} {name}" + (" beyond the plan" if plan else ""), owed_at=armer.now,
                   key_owner=job.id, occurrence="order", subscription=plan, job=job)
    armer.record("job.ordered", subject=job.id, data={
        "service": service, "period": name, "subject": subject.id, "subscription": plan.id if plan else None,
        "included": included, "charge": cents, "used": used if plan else None, "of": allowance if plan else None})
    return job
