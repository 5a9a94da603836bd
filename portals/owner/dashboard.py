"""The console's index: dates at risk sorted by what a miss costs (each with why, and the control that settles
it), timers that fired late, the next 30 days, runaway alarms and unread notifications.

All of it for one clock domain ("as of" the header's choice) and the request's brands, read with a query per
kind of thing, never one per row. What a miss costs is ``services.costs``' (the late price, a guarantee's
penalty cap, a lapse's returned hold), as the portals say it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.admin.utils import quote
from django.db.models import Q
from django.urls import reverse

from calendars.entries import clock_what
from calendars.models import Clock, ClockItem
from services import registry
from services.costs import Cost, clock_costs, job_costs, usd
from services.declare import ServiceError
from services.members import pool_usernames
from services.models import Ask, Grant, Job, Notification, Task, Window
from timers.models import Event, Membership, Timer, in_domain
from timers.timeutil import duration_text

from .scope import AsOf

SOON = timedelta(days=7)  # an open date this close, not yet kept, is at risk
AHEAD = timedelta(days=30)
LIMIT = 50


@dataclass(frozen=True)
class Control:
    """A button that settles a row: a POST to the console's settle view, which calls the service function."""

    label: str
    kind: str  # item | job | task | ask | notification
    id: str
    act: str  # satisfy | choose | deliver | done | assign | answer | read
    option: str = ""
    members: tuple[str, ...] = ()  # assign: the pool's members, a select beside the button
    step: str = ""


@dataclass
class Risk:
    cost: Cost
    at: datetime  # the instant it is due (or was)
    what: str
    on: str  # the subject's name
    why: str
    answers_for: str
    link: str
    controls: list[Control] = field(default_factory=list)
    ref: str = ""  # the object's id, for tests and anchors

    @property
    def sort_key(self) -> tuple:
        # At one cost, a date the world sets before the job it costs (a late job's price is its file date's).
        return (-self.cost.cents, not self.ref.startswith("clk_"), self.at, self.ref)

    @property
    def cost_text(self) -> str:
        return usd(self.cost.cents) if self.cost.cents else "—"


@dataclass
class Ahead:
    at: datetime
    what: str
    kind: str
    on: str
    link: str


def _admin(obj, pk=None) -> str:
    # quote(): an id holding "_3A" or "_5F" written raw is read back as ":" or "_", and the page not found.
    opts = obj._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change",
                   args=[quote(pk if pk is not None else obj.pk)])


def _in(qs, at: AsOf):
    qs = qs.filter(in_domain(at.domain))
    return qs if at.brand_ids is None else qs.filter(brand_id__in=at.brand_ids)


def _service(name: str, version: str = ""):
    try:
        return registry.get(name, version) if version else registry.get(name)
    except (ServiceError, Exception):  # a Service no longer registered: its objects still show
        return None


class _Rosters(dict):
    """Who is in each pool (the brand's data, PoolMember), asked once per brand and pool a page."""

    def of(self, job: Job, pool: str) -> tuple[str, ...]:
        key = (job.brand_id, pool)
        if key not in self:
            self[key] = pool_usernames(brand_id=job.brand_id, pool=pool)
        return self[key]


def _local(at: AsOf, when: datetime | None) -> str:
    return f"{when.astimezone(at.tz):%Y-%m-%d %H:%M}" if when else ""


def _job_controls(job: Job, task: Task | None, rosters: _Rosters) -> list[Control]:
    """What settles a job: its current Task assigned or done, else the job delivered."""
    if task is not None and task.status == Task.Status.OPEN:
        return [Control(f"Assign {task.step}", "task", task.id, "assign", members=rosters.of(job, task.pool))]
    if task is not None and task.status == Task.Status.TAKEN:
        return [Control(f"Mark {task.step} done", "job", job.id, "done", step=task.step)]
    if job.step:
        return []  # waiting on a party's link or a grant: the row's why says so
    return [Control("Deliver", "job", job.id, "deliver")]


def dates_at_risk(at: AsOf) -> list[Risk]:
    now = at.now
    risks: list[Risk] = []
    rosters = _Rosters()

    # Dates the world sets: came unsatisfied, passed, or close and not yet kept.
    items = list(ClockItem.objects.filter(clock__in=_in(Clock.objects.all(), at)).filter(
        Q(status__in=[ClockItem.Status.DUE, ClockItem.Status.PASSED])
        | Q(status=ClockItem.Status.OPEN, due_at__lte=now + SOON)).select_related("clock__subject"))
    costs = clock_costs({i.clock_id: i.clock for i in items}.values())
    members: dict[str, tuple[str, ...]] = {}  # who an owner can assign a date to: the brand's people
    for brand_id, username in (Membership.objects.filter(brand_id__in={i.clock.brand_id for i in items})
                               .order_by("user__username").values_list("brand_id", "user__username")):
        members[brand_id] = (*members.get(brand_id, ()), username)
    for item in items:
        clock = item.clock
        if item.status == ClockItem.Status.DUE:
            why = f"came unsatisfied on {item.due_date}: it waits on {clock.answers_for or 'its owner'}'s choice"
        elif item.status == ClockItem.Status.PASSED:
            why = f"a hard date, passed unsatisfied on {item.due_date}: the gate refuses what it bars (date_passed)"
        else:
            days = (item.due_at - now).days
            why = (f"due {item.due_date} ({'today' if days <= 0 else f'in {days} day' + ('s' if days > 1 else '')})"
                   ", not yet kept")
        spec_options = ()
        try:
            from calendars import specs

            spec_options = tuple(specs.get(clock.spec).options)
        except Exception:  # a spec no longer registered: the row still shows, with mark done
            spec_options = ()
        controls = []
        if item.status in (ClockItem.Status.DUE, ClockItem.Status.PASSED):
            controls += [Control(f"Choose {o}", "item", str(item.pk), "choose", option=o) for o in spec_options]
        controls.append(Control("Mark done", "item", str(item.pk), "satisfy"))
        if members.get(clock.brand_id):
            controls.append(Control("Assign", "item", str(item.pk), "reassign", members=members[clock.brand_id]))
        risks.append(Risk(cost=costs[clock.id], at=item.due_at, what=clock_what(item), on=clock.subject.name,
                          why=why, answers_for=clock.answers_for, link=_admin(item), controls=controls,
                          ref=item.owner_key))

    # Jobs late or at risk (their at-risk deadline fired): the late price, a hold a lapse returns.
    jobs = list(_in(Job.objects.filter(status=Job.Status.OPEN), at).select_related("subject"))
    at_risk = set(_in(Event.objects.filter(type="job.at_risk", subject__in=[j.id for j in jobs]), at)
                  .values_list("subject", flat=True))
    second_links = {a.job_id: a for a in _in(Ask.objects.filter(status=Ask.Status.OPEN, link=2, job__in=jobs), at)}
    risky = [j for j in jobs if j.late or j.id in at_risk or j.id in second_links]
    jcosts = job_costs(risky)
    tasks = {t.job_id: t for t in Task.objects.filter(job__in=risky, status__in=[Task.Status.OPEN, Task.Status.TAKEN])
             .order_by("entry")}
    for job in risky:
        svc = _service(job.service, job.version)
        title = ((svc.title if svc is not None and svc.title else "{service} {period}")
                 .format(period=job.period, service=job.service))
        task = tasks.get(job.id)
        ask = second_links.get(job.id)
        if ask is not None:
            why = (f"{ask.party}'s link for {ask.step or ask.scope} is open once more and expires "
                   f"{_local(at, ask.expires_at)}: a second expiry ends the job lapsed")
            controls = [Control(f"Record {ask.party}'s answer", "job", job.id, "answer", step=ask.step)]
            when = ask.expires_at or job.late_at or now
        elif job.late:
            why = f"late since {_local(at, job.late_at)}" + (f", at {job.step}" if job.step else "")
            controls, when = _job_controls(job, task, rosters), job.late_at or now
        else:
            why = f"at risk: late at {_local(at, job.late_at)}" + (f", at {job.step}" if job.step else "")
            controls, when = _job_controls(job, task, rosters), job.late_at or now
        if job.waiting_on:
            why += f"; waiting on {job.waiting_on}"
        who = task.member.get_username() if task is not None and task.member_id else ""
        risks.append(Risk(cost=jcosts[job.id], at=when, what=title, on=job.subject.name, why=why,
                          answers_for=who or (f"pool {task.pool}" if task is not None else "the brand"),
                          link=_admin(job), controls=controls, ref=job.id))

    # A pool's Task nobody holds, due soon or overdue, on a job not already listed.
    listed = {j.id for j in risky}
    open_tasks = list(_in(Task.objects.filter(status=Task.Status.OPEN, due_at__lte=now + timedelta(days=2)), at)
                      .exclude(job_id__in=listed).select_related("job__subject"))
    tcosts = job_costs({t.job_id: t.job for t in open_tasks}.values())
    for task in open_tasks:
        job = task.job
        when = task.due_at
        why = (f"nobody in {task.pool} holds it; its step is due {_local(at, when)}" if when > now
               else f"nobody in {task.pool} holds it; its step was due {_local(at, when)}")
        risks.append(Risk(cost=tcosts[job.id], at=when, what=f"{task.step} · {job.service} {job.period}",
                          on=job.subject.name, why=why, answers_for=f"pool {task.pool}", link=_admin(task),
                          controls=[Control(f"Assign {task.step}", "task", task.id, "assign",
                                            members=rosters.of(job, task.pool))], ref=task.id))
    return sorted(risks, key=lambda r: r.sort_key)


def late_timers(at: AsOf) -> tuple[list[dict], int]:
    """Timers fired more than LATE_AFTER_SECONDS after they were owed, the latest first (every clock domain
    of the brands: only a live clock can fire late)."""
    late = timedelta(seconds=settings.KEEPING_TIME["LATE_AFTER_SECONDS"])
    qs = Timer.objects.filter(late_by__gt=late)
    if at.brand_ids is not None:
        qs = qs.filter(brand_id__in=at.brand_ids)
    rows = [{"timer": t, "late_by": duration_text(t.late_by), "owed": _local(at, t.owed_at),
             "fired": _local(at, t.fired_at), "link": _admin(t)}
            for t in qs.order_by("-late_by", "id")[:20]]
    return rows, qs.count()


def next_30_days(at: AsOf) -> list[Ahead]:
    now, end = at.now, at.now + AHEAD
    out: list[Ahead] = []
    for item in ClockItem.objects.filter(clock__in=_in(Clock.objects.all(), at), status=ClockItem.Status.OPEN,
                                         due_at__gte=now, due_at__lt=end).select_related("clock__subject"):
        out.append(Ahead(item.due_at, clock_what(item), "hard date" if item.clock.hard else "date",
                         item.clock.subject.name, _admin(item)))
    for job in _in(Job.objects.filter(status=Job.Status.OPEN, late=False, late_at__gte=now, late_at__lt=end), at) \
            .select_related("subject"):
        out.append(Ahead(job.late_at, f"{job.service} {job.period} is late after this", "deadline",
                         job.subject.name, _admin(job)))
    for task in _in(Task.objects.filter(status__in=[Task.Status.OPEN, Task.Status.TAKEN]), at).filter(
            Q(due_at__gte=now, due_at__lt=end) | Q(hold_until__gte=now, hold_until__lt=end)).select_related(
            "job__subject", "member"):
        if task.due_at and now <= task.due_at < end:
            out.append(Ahead(task.due_at, f"{task.step} due ({task.job.service} {task.job.period})", "task",
                             task.job.subject.name, _admin(task)))
        if task.hold_until and now <= task.hold_until < end:
            out.append(Ahead(task.hold_until, f"{task.member.get_username()}'s hold on {task.step} ends", "hold",
                             task.job.subject.name, _admin(task)))
    for ask in _in(Ask.objects.filter(status=Ask.Status.OPEN, expires_at__gte=now, expires_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(ask.expires_at, f"{ask.party}'s link ({ask.step or ask.scope}) expires", "link",
                         ask.job.subject.name, _admin(ask.job)))
    for grant in _in(Grant.objects.filter(status=Grant.Status.ACTIVE, ends_at__gte=now, ends_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(grant.ends_at, f"{grant.party}'s grant of {grant.scope} ends", "grant",
                         grant.job.subject.name, _admin(grant.job)))
    for win in _in(Window.objects.filter(status=Window.Status.OPEN, closes_at__gte=now, closes_at__lt=end), at) \
            .select_related("member"):
        out.append(Ahead(win.closes_at, f"{win.member.get_username()}'s standby window closes", "window", "",
                         _admin(win)))
    for t in _in(Timer.objects.filter(status=Timer.Status.ARMED, kind__in=["cycle", "schedule"],
                                      owed_at__gte=now, owed_at__lt=end), at):
        what = ("renews" if t.kind == "cycle" else f"mints {t.data.get('schedule', '')} {t.data.get('period', '')}")
        out.append(Ahead(t.owed_at, f"{t.owner} {what}".strip(), t.kind, "", _admin(t)))
    return sorted(out, key=lambda a: (a.at, a.what))[:100]


def alarms(at: AsOf) -> list[Event]:
    qs = Event.objects.filter(type="tick.runaway")
    if at.brand_ids is not None:
        qs = qs.filter(brand_id__in=at.brand_ids)
    return list(qs.order_by("-seq")[:10])


def unread(at: AsOf) -> tuple[list[Notification], int]:
    qs = _in(Notification.objects.filter(read_at__isnull=True), at)
    return list(qs.order_by("-created_at", "id")[:10]), qs.count()


def dashboard(at: AsOf) -> dict:
    risks = dates_at_risk(at)
    late, late_count = late_timers(at)
    notes, notes_count = unread(at)
    return {
        "risks": risks[:LIMIT],
        "risk_count": len(risks),
        "late": late,
        "late_count": late_count,
        "late_list": reverse("admin:timers_timer_changelist") + "?late=yes",
        "ahead": next_30_days(at),
        "alarms": alarms(at),
        "unread": notes,
        "unread_count": notes_count,
        "unread_list": reverse("admin:services_notification_changelist") + "?read=no",
    }
