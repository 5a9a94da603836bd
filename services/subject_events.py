"""An event on a subject (a notice received, the books arrived): the jobs it mints, once per event key,
from each active subscription whose Service names it under ``on``, and the waiting jobs it resumes.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from calendars.models import Subject
from timers.armer import Armer

from . import registry
from .declare import check_input
from .jobs import job_open, job_resume_work
from .models import Job, Subscription
from .money import post_money


@transaction.atomic
def subject_event(*, armer: Armer, subject: Subject, type: str, key: str, data: dict) -> list[Job]:
    """An event on the subject (a notice received): each active subscription whose Service names it under
    ``on`` mints a job of that Service, once per event ``key``, with the event's data as its input. The data is
    checked against each minted Service's declared input before anything is recorded (InvalidInput)."""
    minting = []
    for sub in Subscription.objects.filter(subject=subject, domain=subject.domain, status="active"):
        order = registry.get(sub.service, sub.version).on.get(type)
        if order is not None:
            check_input(registry.get(order, registry.live_version(order, domain=subject.domain, now=armer.now)).input,
                        {**sub.input, **data}, where="data", others=True)
            minting.append((sub, order))
    armer.record(f"subject.{type}", subject=subject.id, data={"key": key, **data})
    # The event a waiting job waits for (books.received): the work is the brand's again.
    for job in Job.objects.filter(subject=subject, domain=subject.domain, status=Job.Status.OPEN).exclude(
            waiting_on="").order_by("opened_at", "id"):
        waits = registry.get(job.service, job.version).waits
        if waits is not None and waits.until == type and job.waiting_on == waits.on:
            job_resume_work(armer=armer, job=job)
    jobs = []
    for sub, order in minting:
        svc = registry.get(sub.service, sub.version)
        allowance = svc.price.includes.get(order, 0)
        used = int(sub.usage.get(order, 0)) + 1
        live = registry.live_version(order, domain=subject.domain, now=armer.now)
        cents = 0 if used <= allowance else registry.get(order, live).price.cents
        try:
            with transaction.atomic():
                job = job_open(armer=armer, brand_id=sub.brand_id, domain=sub.domain, service=order, subject=subject,
                               period=key, input={**sub.input, **data}, subscription=sub, schedule=f"on {type}",
                               price_cents=cents)
        except IntegrityError:  # the same event again: its job is already open
            continue
        sub.usage = {**sub.usage, order: used}
        sub.save(update_fields=["usage"])
        if cents and not registry.get(job.service, job.version).price.hold:  # a holding Service holds it instead
            post_money(armer=armer, brand_id=sub.brand_id, domain=sub.domain, kind="charge", cents=cents,
                       memo=f"{order} {key} beyond the plan", owed_at=armer.now, key_owner=job.id, occurrence=key,
                       subscription=sub, job=job)
        armer.record("subject.event_minted", subject=sub.id, data={"event": type, "key": key, "job": job.id,
                                                                   "charge": cents, "used": used, "of": allowance})
        jobs.append(job)
    return jobs
