"""A subject's subscription to a plan: made (its first charge, its renewal and each schedule's first mint
armed), its input updated (the next mints re-armed), paused and resumed (the next mints held and resumed),
canceled at the cycle's end and un-canceled.

Each schedule of the plan is also a Schedule row (``schedules.service_schedule``): one schedule mechanism,
whose mints are Runs and ticks. When a mint comes is ``mints``; the mint and the renewal fire in ``handlers``.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from calendars.models import Subject
from timers.armer import Armer, DirectArmer
from timers.domains import domain_id
from timers.errors import KeepingTimeError
from timers.models import Brand
from timers.rearm import Rearm

from . import registry, tiers
from .declare import check_input
from .kinds import CYCLE, SCHEDULE
from .mints import first_period, mint_at, period_ends, schedule_key
from .models import Subscription
from .money import post_money
from .periods import Period, next_period, previous_period
from .schedules import service_schedule


def _arm_schedule(armer: Armer, sub: Subscription, name: str, period: Period) -> None:
    armer.arm(schedule_key(sub, name, period), owed_at=mint_at(sub=sub, name=name, period=period),
              handler=SCHEDULE, data={"schedule": name, "period": period.name}, opened_at=sub.opened_at,
              version=sub.version)


@transaction.atomic
def subscription_create(*, brand: Brand, domain: str, subject: Subject, service: str, input: dict | None = None,
                        now: datetime | None = None) -> Subscription:
    armer = DirectArmer(brand=brand, domain=domain, now=now)
    # The subscription keeps the plan (and its price) live when it was made, whatever is deployed later.
    version = registry.pin(service, domain=domain, now=armer.now)
    svc = registry.get(service, version)
    check_input(svc.input, input or {})  # before anything is written: a bad input breaks every later mint
    # Live, the brand's plan decides which time runs: the plan's own, and that of each Service it mints.
    for declared in (svc, *(registry.get(s.order) for s in svc.schedule.values()),
                     *(registry.get(order) for order in svc.on.values())):
        tiers.require(tier=brand.tier, domain=domain, svc=declared)
    sub = Subscription.objects.create(
        # What it names: the subject's nth order of the Service, made at this instant.
        id=domain_id("sbn", domain, subject.id, service, armer.now.isoformat(),
                     str(Subscription.objects.filter(subject=subject, service=service).count()), length=10),
        brand=brand, domain=domain, subject=subject, service=service, version=version,
        input=input or {}, cycle=1, cycle_started_at=armer.now, opened_at=armer.now,
    )
    armer.record("subscription.created", subject=sub.id,
                 data={"service": service, "subject": subject.id, "input": sub.input, "price": svc.price.cents})
    if svc.every is not None:
        post_money(armer=armer, brand_id=brand.id, domain=domain, kind="charge", cents=svc.price.cents,
                   memo=f"{service} · cycle 1", owed_at=armer.now, key_owner=sub.id, occurrence="#1",
                   subscription=sub)
        armer.arm(f"{sub.id}:cycle:renew:#2", owed_at=armer.now + svc.every, handler=CYCLE, data={"cycle": 2},
                  opened_at=sub.opened_at, version=sub.version)
    for name in svc.schedule:
        _arm_schedule(armer, sub, name, first_period(sub=sub, name=name, since=armer.now))
        # One schedule mechanism: the Service's schedule is a Schedule row (its mints Runs and ticks).
        service_schedule(sub=sub, name=name, now=armer.now)
    return sub


@transaction.atomic
def subscription_update(*, armer: Armer, sub: Subscription, input: dict) -> Subscription:
    """Re-arms the next mint with the new input; jobs already minted keep theirs. The input is checked against
    the Service's declared input first (InvalidInput, nothing written): the next mint reads it."""
    check_input(registry.get(sub.service, sub.version).input, input, partial=True)
    sub.input = {**sub.input, **input}
    sub.save(update_fields=["input"])
    rearmed = []
    for key, name, period in _schedule_keys(armer, sub, "armed"):
        # Unchanged times stay as they are.
        armer.retime(key, owed_at=mint_at(sub=sub, name=name, period=period), by=Rearm.SUBSCRIPTION_UPDATE)
        rearmed.append(key)
    armer.record("subscription.updated", subject=sub.id, data={"input": input, "rearmed": sorted(rearmed)})
    return sub


def _schedule_keys(armer: Armer, sub: Subscription, status: str) -> list[tuple[str, str, Period]]:
    """The next mint of each schedule, in the given status: (key, schedule, period)."""
    svc = registry.get(sub.service, sub.version)
    ends = period_ends(svc, sub.input)
    found = []
    for name, sch in svc.schedule.items():
        p = first_period(sub=sub, name=name, since=sub.paused_at or armer.now)
        for period in (previous_period(sch.each, p, ends=ends), p, next_period(sch.each, p, ends=ends)):
            key = schedule_key(sub, name, period)
            state = armer.state(key)
            if state is not None and state[0] == status:
                found.append((key, name, period))
    return found


@transaction.atomic
def subscription_pause(*, armer: Armer, sub: Subscription, note: str = "") -> Subscription:
    """Pause the schedules: the next mint of each is held; nothing else about the subscription changes."""
    if sub.status != Subscription.Status.ACTIVE or sub.paused_at is not None:
        raise KeepingTimeError(f"{sub.id} is {'paused' if sub.paused_at else sub.status}; only an active, running "
                               "subscription pauses", code="subscription_not_running", status=409)
    held = _schedule_keys(armer, sub, "armed")
    for key, _, _ in held:
        armer.hold(key, by=Rearm.HOLD, who="subscription.paused")
    sub.paused_at, sub.pause_note = armer.now, note
    sub.save(update_fields=["paused_at", "pause_note"])
    armer.record("subscription.paused", subject=sub.id, data={"note": note, "held": sorted(k for k, _, _ in held)})
    return sub


@transaction.atomic
def subscription_resume(*, armer: Armer, sub: Subscription) -> Subscription:
    """Resume: each held mint comes back at its own time; one whose time passed fires now, and the periods
    missed while paused follow the schedule's catch_up (each one, or only the latest)."""
    if sub.paused_at is None:
        raise KeepingTimeError(f"{sub.id} is not paused", code="subscription_not_paused", status=409)
    resumed = _schedule_keys(armer, sub, "held")
    for key, name, period in resumed:
        armer.resume(key, cap=mint_at(sub=sub, name=name, period=period))
    paused_for = armer.now - sub.paused_at
    sub.paused_at, sub.pause_note = None, ""
    sub.save(update_fields=["paused_at", "pause_note"])
    armer.record("subscription.resumed", subject=sub.id,
                 data={"resumed": sorted(k for k, _, _ in resumed), "paused_for_days": paused_for.days})
    return sub


def subscription_cancel(*, armer: Armer, sub: Subscription) -> Subscription:
    """Cancel at the cycle's end: the next renewal ends it; jobs of the current period go on."""
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription cancels",
                               code="subscription_not_active", status=409)
    sub.cancel_at_period_end = True
    sub.save(update_fields=["cancel_at_period_end"])
    armer.record("subscription.cancel_scheduled", subject=sub.id, data={"cycle": sub.cycle})
    return sub


def subscription_uncancel(*, armer: Armer, sub: Subscription) -> Subscription:
    """Undo a cancel before the cycle's end: the next renewal renews."""
    if sub.status != Subscription.Status.ACTIVE or not sub.cancel_at_period_end:
        raise KeepingTimeError(f"{sub.id} is not set to cancel at the cycle's end", code="subscription_not_canceling",
                               status=409)
    sub.cancel_at_period_end = False
    sub.save(update_fields=["cancel_at_period_end"])
    armer.record("subscription.cancel_undone", subject=sub.id, data={"cycle": sub.cycle})
    return sub
