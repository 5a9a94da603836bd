"""The subject calendar's dates of its jobs' people (a calendars.entries provider): each party's link expiry
(Ask.expires_at), each grant's end (Grant.ends_at), each Task's due date and a taken Task's hold end, and each
job's deadline (Job.late_at) with the time it turns at risk (its at_risk timer).

One query per kind, whatever the number of jobs: the jobs, their asks, grants, tasks and deadline timers.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime

from django.db.models import QuerySet

from calendars.closed_days import business_calendar
from calendars.entries import Entry, uid_for
from calendars.models import Subject
from timers.domains import domain_now
from timers.keys import parse as parse_key
from timers.models import Timer

from . import registry
from .models import Ask, Grant, Job, Task

_TIMER_STATES = ("armed", "held", "fired")


def job_title(job: Job) -> str:
    """What a job is called: its Service's title with its period ("the B-2001 deal"), else service and period."""
    try:
        svc = registry.get(job.service, job.version or None)
    except Exception:  # a Service no longer declared: its name still says what the job was
        svc = None
    title = getattr(svc, "title", "") if svc is not None else ""
    if not title:
        return f"{job.service} {job.period}"
    return title.replace("{period}", job.period)


def _when(day: date, today: date) -> str:
    """A date not yet settled: ahead, due today, or open (it came and the tick has not yet reached it)."""
    if day > today:
        return "ahead"
    return "due today" if day == today else "open"


def _last(*instants: datetime | None) -> datetime | None:
    found = [i for i in instants if i is not None]
    return max(found) if found else None


def people_dates(subject: Subject, domain: str, from_date: date | None) -> Iterable[Entry]:
    jobs = {j.id: j for j in Job.objects.filter(subject=subject, domain=domain)
            .exclude(status__in=[Job.Status.VOIDED, Job.Status.CANCELED])
            .only("id", "service", "version", "period", "status", "late", "late_at", "opened_at", "closed_at")}
    if not jobs:
        return []
    cal = business_calendar(subject)
    today = cal.today(domain_now(domain=domain))
    titles = {job_id: job_title(job) for job_id, job in jobs.items()}
    out: list[Entry] = []

    def add(at: datetime, **kw) -> None:
        out.append(Entry(date=cal.today(at), at=at, **kw))

    for ask in (Ask.objects.filter(domain=domain, job_id__in=list(jobs), expires_at__isnull=False,
                                   status__in=[Ask.Status.OPEN, Ask.Status.EXPIRED])):
        title, step = titles[ask.job_id], ask.step or ask.scope
        last = " (its last chance)" if ask.link == 2 else ""
        status = "expired" if ask.status == Ask.Status.EXPIRED else _when(cal.today(ask.expires_at), today)
        add(ask.expires_at, what=f"{ask.party}'s link for {step} expires{last} · {title}", kind="link",
            answers_for=ask.party, status=status, uid=uid_for(f"{ask.id}:expires"), sequence=ask.link - 1,
            stamp=ask.sent_at, on=ask.job_id)
    for grant in Grant.objects.filter(domain=domain, job_id__in=list(jobs)):
        title = titles[grant.job_id]
        status = "ended" if grant.status == Grant.Status.ENDED else _when(cal.today(grant.ends_at), today)
        add(grant.ends_at, what=f"{grant.party}'s {grant.scope} grant ends · {title}", kind="grant",
            answers_for=grant.party, status=status, uid=uid_for(f"{grant.id}:ends"), stamp=grant.granted_at,
            on=grant.job_id, plain=f"{grant.party}'s {grant.scope} access ends · {title}")
    for task in Task.objects.filter(domain=domain, job_id__in=list(jobs)).exclude(status=Task.Status.CANCELED):
        title = titles[task.job_id]
        stamp = _last(task.opened_at, task.taken_at, task.closed_at)
        if task.due_at is not None:
            status = "kept" if task.status == Task.Status.DONE else _when(cal.today(task.due_at), today)
            add(task.due_at, what=f"{task.step} due · {title}", kind="task", answers_for="the brand",
                status=status, uid=uid_for(f"{task.id}:due"), stamp=stamp, on=task.job_id)
        if task.status == Task.Status.TAKEN and task.hold_until is not None:
            add(task.hold_until, what=f"the hold on {task.step} ends · {title}", kind="hold",
                answers_for="the brand", status=_when(cal.today(task.hold_until), today),
                uid=uid_for(f"{task.id}:hold"), sequence=task.takes + task.extensions, stamp=stamp,
                on=task.job_id)
    for job in jobs.values():
        if job.late_at is None:
            continue
        if job.status == Job.Status.DELIVERED:
            status = "kept, late" if job.late else "kept"
        elif job.status == Job.Status.LAPSED or job.late:
            status = "passed"
        else:
            status = _when(cal.today(job.late_at), today)
        add(job.late_at, what=f"deliver {titles[job.id]}", kind="deadline", answers_for="the brand",
            status=status, uid=uid_for(f"{job.id}:deadline:late"), stamp=_last(job.opened_at, job.closed_at),
            on=job.id)
    # The time a job turns at risk: its at_risk timer now in force (the newest move), while one is.
    risks: dict[str, tuple[int, Timer]] = {}
    for t in Timer.objects.filter(domain=domain, owner__in=list(jobs), kind="deadline", status__in=_TIMER_STATES):
        k = parse_key(t.key)
        if k.name != "at_risk":
            continue
        move = k.move or 0
        if t.owner not in risks or move > risks[t.owner][0]:
            risks[t.owner] = (move, t)
    for job_id, (move, t) in risks.items():
        at = t.owed_at or t.fired_at
        if at is None:
            continue
        status = {"fired": "at risk", "held": "paused: waiting on the party"}.get(t.status) or _when(cal.today(at), today)
        add(at, what=f"{titles[job_id]} at risk", kind="at_risk", answers_for="the brand", status=status,
            uid=uid_for(f"{job_id}:deadline:at_risk"), sequence=move, stamp=_last(t.armed_at, t.fired_at),
            on=job_id, plain=f"{titles[job_id]} at risk of running late")
    return out


def people_inputs(subject: Subject, domain: str) -> list[QuerySet | str]:
    """What ``people_dates`` reads: the subject's jobs, their asks, grants and tasks (every row, every column
    read), their deadline timers (any status), and the code of each Service (a job's title)."""
    jobs = Job.objects.filter(subject=subject, domain=domain).order_by()
    ids = jobs.values("id")
    return [
        jobs.values_list("id", "service", "version", "period", "status", "late", "late_at", "opened_at",
                         "closed_at"),
        Ask.objects.filter(domain=domain, job_id__in=ids).order_by().values_list(
            "id", "job_id", "step", "scope", "party", "status", "link", "expires_at", "sent_at"),
        Grant.objects.filter(domain=domain, job_id__in=ids).order_by().values_list(
            "id", "job_id", "scope", "party", "status", "granted_at", "ends_at"),
        Task.objects.filter(domain=domain, job_id__in=ids).order_by().values_list(
            "id", "job_id", "step", "status", "takes", "extensions", "due_at", "hold_until", "opened_at",
            "taken_at", "closed_at"),
        Timer.objects.filter(domain=domain, owner__in=ids, kind="deadline").order_by().values_list(
            "key", "status", "owed_at", "armed_at", "fired_at"),
        "services " + " ".join(f"{name}={registry.bundle(name).digest}" for name in sorted(registry.all_services())),
    ]
