"""How the runtime's timer lists name a job or subscription, and the timers related to a job."""

from __future__ import annotations

from django.db.models import Q

from timers.models import Version

from .models import Job, Subscription


def related(domain: str, owner: str) -> Q | None:
    """A job's list includes the schedule timer that minted it."""
    if not owner.startswith("job_"):
        return None
    job = Job.objects.filter(pk=owner, domain=domain).exclude(schedule="").first()
    if job is None or job.subscription_id is None:
        return None
    return Q(key=f"{job.subscription_id}:schedule:{job.schedule}:{job.period}")


def version_label(digest: str) -> str:
    """How headers name a version: its name (2027-06) where it has one, else its short hash."""
    name = Version.objects.filter(pk=digest).values_list("name", flat=True).first()
    return name or f"{digest[:15]}…"


def describe(domain: str, owner: str) -> list[str]:
    if owner.startswith("job_"):
        job = Job.objects.filter(pk=owner, domain=domain).first()
        if job is not None:
            return [job.service, f"period {job.period}", f"on {version_label(job.version)}", job.status]
    if owner.startswith("sbn_"):
        sub = Subscription.objects.filter(pk=owner, domain=domain).first()
        if sub is not None:
            return [sub.service, f"cycle {sub.cycle}", f"on {version_label(sub.version)}", sub.status]
    return []
