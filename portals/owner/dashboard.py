"""The console's index: what the owner acts on today.

First the dates still ahead and at risk, the costliest miss first (the late price, a guarantee's penalty cap,
the hold a lapse returns: ``services.costs``), then the soonest; where nothing ahead costs money it says so
once and orders by date. Each row names the customer and the date in words, in the brand's zone with the
zone named, and carries the control that settles it; a date the customer answers for offers only what the
brand may do about it (remind them, assign it to one of the brand's people), never marking it done or
choosing for them. What already passed is its own collapsed section, each row with what happens next. Above
the list, a 90-day chart of the dates by week, coloured by risk, drawn here as SVG. Then what fired late,
the next 30 days, alarms and unread notifications, all in words: no ids, no runtime words.

All of it for one clock domain ("as of" the header's choice) and the request's brands, read with a query per
kind of thing, never one per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.conf import settings
from django.contrib.admin.utils import quote
from django.db.models import Q
from django.urls import reverse

from calendars.entries import clock_what
from calendars.models import Clock, ClockItem
from portals.words import day, local, until
from services import registry
from services.costs import Cost, clock_costs, job_costs
from services.declare import ServiceError
from services.members import STAFF_NAMES, member_says, pool_named
from services.models import Ask, Grant, Job, Notification, Subscription, Task, Window
from services.money import usd
from timers.models import Brand, Event, Membership, Timer, in_domain
from timers.timeutil import duration_text

from .scope import AsOf

SOON = timedelta(days=7)  # an open date this close, not yet kept, is at risk
AHEAD = timedelta(days=30)
CHART_DAYS = 90
LIMIT = 50

# The chart's colours (each with a legend word beside it: the colour is never the only sign).
RISKS = (("at risk", "#ba2121"), ("due soon", "#8a5a00"), ("fine", "#417690"))
DUE_SOON = timedelta(days=30)


@dataclass(frozen=True)
class Control:
    """A button that settles a row: a POST to the console's settle view, which calls the service function."""

    label: str
    kind: str  # item | job | task | ask | notification
    id: str
    act: str  # satisfy | choose | deliver | done | assign | answer | read | reassign | remind
    option: str = ""
    # assign: whom to, a select beside the button: (username sent, the name shown: member_says)
    members: tuple[tuple[str, str], ...] = ()
    step: str = ""


@dataclass
class Risk:
    cost: Cost
    at: datetime  # the instant it is due (or was)
    what: str
    on: str  # the customer (the subject's name)
    why: str
    answers_for: str  # who answers for it, in words
    link: str
    controls: list[Control] = field(default_factory=list)
    ref: str = ""  # the object's id, for tests and anchors (never shown)
    when: str = ""  # 'Tue 18 Apr 2028, 23:59 EDT'
    until: str = ""  # 'in 6 days', '3 days ago'
    past: bool = False
    customers: bool = False  # the customer answers for it: no act of theirs is offered
    next: str = ""  # a past row: what happens next

    @property
    def sort_key(self) -> tuple:
        # The costliest miss first, then the soonest; at one instant a date the world sets before the job it
        # costs (a late job's price is its file date's).
        if self.past:  # what passed: the costliest, then the latest
            return (-self.cost.cents, -self.at.timestamp(), not self.ref.startswith("clk_"), self.ref)
        return (-self.cost.cents, self.at, not self.ref.startswith("clk_"), self.ref)

    @property
    def cost_text(self) -> str:
        return usd(self.cost.cents) if self.cost.cents else "no money"


@dataclass
class Ahead:
    at: datetime
    what: str
    kind: str
    on: str
    link: str
    when: str = ""


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


def job_title(job: Job) -> str:
    """What the brand calls a job: its Service's title with the period ('the 2026 return', 'deal B-2001')."""
    svc = _service(job.service, job.version)
    return ((svc.title if svc is not None and svc.title else "{service} {period}")
            .format(period=job.period, service=job.service))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _days(n: int) -> str:
    return f"{n} day" + ("" if n == 1 else "s")


class _Rosters(dict):
    """Who is in each pool (the brand's data, PoolMember), asked once per brand and pool a page."""

    def of(self, job: Job, pool: str) -> tuple[tuple[str, str], ...]:
        key = (job.brand_id, pool)
        if key not in self:
            self[key] = pool_named(brand_id=job.brand_id, pool=pool)
        return self[key]


class _People:
    """The brands' people (one query): whom a date may be assigned to, and who stands for the brand (as
    ``services.members.brand_people``: "the brand", each member's and owner's name and username)."""

    def __init__(self, brand_ids):
        self.members: dict[str, tuple[tuple[str, str], ...]] = {}
        self.names: dict[str, set[str]] = {}
        self.brands = dict(Brand.objects.filter(pk__in=list(brand_ids)).values_list("id", "name"))
        for m in Membership.objects.filter(brand_id__in=list(brand_ids)).select_related("user").order_by("user__username"):
            username = m.user.get_username()
            self.members[m.brand_id] = (*self.members.get(m.brand_id, ()), (username, member_says(m)))
            self.names.setdefault(m.brand_id, set(STAFF_NAMES)).update(n for n in (m.name, username) if n)

    def customers(self, clock: Clock) -> bool:
        """Whether the customer answers for the clock (anyone but the brand's people; nobody named: the
        brand's)."""
        return bool(clock.answers_for) and clock.answers_for not in self.names.get(clock.brand_id, set(STAFF_NAMES))

    def who(self, clock: Clock) -> str:
        if self.customers(clock):
            return f"{clock.answers_for} (the customer)"
        if not clock.answers_for or clock.answers_for in STAFF_NAMES:
            return self.brands.get(clock.brand_id, "the brand")
        return clock.answers_for


def _options(clock: Clock) -> tuple[str, ...]:
    try:
        from calendars import specs

        return tuple(specs.get(clock.spec).options)
    except Exception:  # a spec no longer registered: the row still shows, with mark done
        return ()


def _item_risk(item: ClockItem, at: AsOf, cost: Cost, people: _People) -> Risk:
    clock = item.clock
    now, tz = at.now, at.tz
    customers = people.customers(clock)
    person = clock.answers_for
    fixed = "a fixed date (it can't be extended)" if clock.hard else "a due date"
    options = _options(clock)
    controls: list[Control] = []
    past = item.due_at < now or item.status in (ClockItem.Status.DUE, ClockItem.Status.PASSED)
    if item.status == ClockItem.Status.PASSED:
        why = f"{_cap(fixed)}, missed on {day(item.due_date)}."
        nxt = "What it guarded can no longer be done on time, and is refused from now on."
    elif item.status == ClockItem.Status.DUE:
        why = f"{_cap(fixed)}, missed on {day(item.due_date)}."
        nxt = (f"It stays open until {person if customers else 'someone'} chooses what happens"
               + (f" ({', '.join(options)})" if options else "") + " or it is marked done.")
    else:
        days = (item.due_at.astimezone(tz).date() - now.astimezone(tz).date()).days
        why = f"{_cap(fixed)}, not yet done: due {'today' if days <= 0 else 'in ' + _days(days)}."
        nxt = "If nobody keeps it, it is missed and who answers for it is told."
    if customers:
        why += f" {person} answers for it, not the brand: remind them, or assign it to one of your people."
        controls.append(Control(f"Remind {person}", "item", str(item.pk), "remind"))
    else:
        if item.status in (ClockItem.Status.DUE, ClockItem.Status.PASSED):
            controls += [Control(f"Choose {o}", "item", str(item.pk), "choose", option=o) for o in options]
        controls.append(Control("Mark done", "item", str(item.pk), "satisfy"))
        if item.status == ClockItem.Status.PASSED:
            nxt += " Mark it done if it was kept another way."
    if people.members.get(clock.brand_id):
        controls.append(Control("Assign", "item", str(item.pk), "reassign", members=people.members[clock.brand_id]))
    return Risk(cost=cost, at=item.due_at, what=clock_what(item), on=clock.subject.name, why=why,
                answers_for=people.who(clock), link=_admin(item), controls=controls, ref=item.owner_key,
                when=local(item.due_at, tz), until=until(item.due_at, now), past=past, customers=customers,
                next=nxt if past else "")


def date_row(item: ClockItem, at: AsOf) -> Risk:
    """One date's row, as the dashboard would show it, for its own page: the controls that settle it."""
    clock = item.clock
    row = _item_risk(item, at, clock_costs([clock])[clock.id], _People({clock.brand_id}))
    if item.status == ClockItem.Status.SATISFIED:
        row.why, row.next, row.controls = f"Done {local(item.satisfied_at, at.tz)}.", "", []
    elif item.status == ClockItem.Status.VOIDED:
        row.why, row.next, row.controls = "No longer needed: its work ended.", "", []
    return row


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
    """Every row at risk: those still ahead first (the costliest miss, then the soonest), then what passed."""
    now, tz = at.now, at.tz
    risks: list[Risk] = []
    rosters = _Rosters()

    # Dates the world sets: missed, or close and not yet kept.
    items = list(ClockItem.objects.filter(clock__in=_in(Clock.objects.all(), at)).filter(
        Q(status__in=[ClockItem.Status.DUE, ClockItem.Status.PASSED])
        | Q(status=ClockItem.Status.OPEN, due_at__lte=now + SOON)).select_related("clock__subject"))
    costs = clock_costs({i.clock_id: i.clock for i in items}.values())
    jobs = list(_in(Job.objects.filter(status=Job.Status.OPEN), at).select_related("subject"))
    people = _People({i.clock.brand_id for i in items} | {j.brand_id for j in jobs})
    risks += [_item_risk(item, at, costs[item.clock_id], people) for item in items]

    # Jobs late or at risk (their at-risk deadline fired): the late price, a hold a lapse returns.
    at_risk = set(_in(Event.objects.filter(type="job.at_risk", subject__in=[j.id for j in jobs]), at)
                  .values_list("subject", flat=True))
    second_links = {a.job_id: a for a in _in(Ask.objects.filter(status=Ask.Status.OPEN, link=2, job__in=jobs), at)}
    risky = [j for j in jobs if j.late or j.id in at_risk or j.id in second_links]
    jcosts = job_costs(risky)
    tasks = {t.job_id: t for t in Task.objects.filter(job__in=risky, status__in=[Task.Status.OPEN, Task.Status.TAKEN])
             .select_related("member").order_by("entry")}
    for job in risky:
        task = tasks.get(job.id)
        ask = second_links.get(job.id)
        step = f" The work is at {task.step if task is not None else job.step}." if (task or job.step) else ""
        if ask is not None:
            when = ask.expires_at or job.late_at or now
            why = (f"{ask.party}'s link for {ask.step or ask.scope} was sent again and ends {local(when, tz)}: "
                   "if it ends unanswered a second time, the work stops.")
            controls = [Control(f"Record {ask.party}'s answer", "job", job.id, "answer", step=ask.step)]
            nxt = "The work stopped: the customer's hold is returned."
        elif job.late:
            when = job.late_at or now
            why = f"Late since {local(when, tz)}." + step
            controls = _job_controls(job, task, rosters)
            nxt = "It stays open, late, until it is delivered."
        else:
            when = job.late_at or now
            why = f"At risk: it is late after {local(when, tz)}." + step
            controls = _job_controls(job, task, rosters)
            nxt = "It is late now: deliver it as soon as the work is done."
        if job.waiting_on:
            why += f" Waiting on {job.waiting_on}."
        holder = task.member.get_username() if task is not None and task.member_id else ""
        risks.append(Risk(cost=jcosts[job.id], at=when, what=_cap(job_title(job)), on=job.subject.name, why=why,
                          answers_for=holder or (f"the {task.pool} pool" if task is not None
                                                 else people.brands.get(job.brand_id, "the brand")),
                          link=_admin(job), controls=controls, ref=job.id, when=local(when, tz),
                          until=until(when, now), past=when < now, next=nxt if when < now else ""))

    # A pool's Task nobody holds, due soon or overdue, on a job not already listed.
    listed = {j.id for j in risky}
    open_tasks = list(_in(Task.objects.filter(status=Task.Status.OPEN, due_at__lte=now + timedelta(days=2)), at)
                      .exclude(job_id__in=listed).select_related("job__subject"))
    tcosts = job_costs({t.job_id: t.job for t in open_tasks}.values())
    for task in open_tasks:
        job = task.job
        when = task.due_at
        why = f"Nobody in the {task.pool} pool has taken it; it is due {local(when, tz)}."
        risks.append(Risk(cost=tcosts[job.id], at=when, what=f"{_cap(task.step)} · {job_title(job)}",
                          on=job.subject.name, why=why, answers_for=f"the {task.pool} pool", link=_admin(task),
                          controls=[Control(f"Assign {task.step}", "task", task.id, "assign",
                                            members=rosters.of(job, task.pool))],
                          ref=task.id, when=local(when, tz), until=until(when, now), past=when < now,
                          next="Assign it to someone in the pool: the work waits on it." if when < now else ""))
    return sorted(risks, key=lambda r: (r.past, r.sort_key))


# -- the chart: 90 days of dates by week, coloured by risk -----------------------------------------------------
@dataclass
class Week:
    start: date
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def label(self) -> str:
        return f"{self.start.day} {self.start:%b}"


def chart_weeks(at: AsOf, risky: set[str]) -> list[Week]:
    """The dates of the next 90 days (open dates, work deadlines, Tasks due) by week from today, in the
    brand's zone: at risk (a row ahead in the list), due soon (within 30 days), or fine."""
    now, tz = at.now, at.tz
    end = now + timedelta(days=CHART_DAYS)
    today = now.astimezone(tz).date()
    weeks = [Week(today + timedelta(days=7 * i), {name: 0 for name, _ in RISKS})
             for i in range((CHART_DAYS + 6) // 7)]
    rows: list[tuple[str, datetime]] = []
    rows += [(f"{c}#{i}" if i else c, t) for c, i, t in ClockItem.objects.filter(
        clock__in=_in(Clock.objects.all(), at), status=ClockItem.Status.OPEN, due_at__gte=now, due_at__lt=end)
        .values_list("clock_id", "item", "due_at")]
    rows += list(_in(Job.objects.filter(status=Job.Status.OPEN, late=False, late_at__gte=now, late_at__lt=end), at)
                 .values_list("id", "late_at"))
    rows += list(_in(Task.objects.filter(status__in=[Task.Status.OPEN, Task.Status.TAKEN], due_at__gte=now,
                                         due_at__lt=end), at).values_list("id", "due_at"))
    for ref, when in rows:
        n = (when.astimezone(tz).date() - today).days // 7
        if not 0 <= n < len(weeks):
            continue
        risk = "at risk" if ref in risky else "due soon" if when - now < DUE_SOON else "fine"
        weeks[n].counts[risk] += 1
    return weeks


def chart_svg(weeks: list[Week]) -> dict:
    """The bars' geometry for the template: one stacked bar a week, its count above, its week below."""
    bar, gap, left, top, height = 26, 6, 8, 18, 120
    peak = max([w.total for w in weeks] + [1])
    bars = []
    for i, w in enumerate(weeks):
        x = left + i * (bar + gap)
        y = top + height
        parts = []
        for name, colour in RISKS:
            n = w.counts[name]
            if not n:
                continue
            h = round(height * n / peak, 1)
            y -= h
            parts.append({"y": round(y, 1), "h": h, "colour": colour, "risk": name, "n": n})
        bars.append({"x": x, "cx": x + bar / 2, "parts": parts, "total": w.total, "label": w.label,
                     "top": round(y - 4, 1), "show_label": i % 2 == 0, "week": w})
    return {"bars": bars, "bar": bar, "width": left * 2 + len(weeks) * (bar + gap) - gap,
            "height": top + height + 22, "base": top + height, "label_y": top + height + 16}


# -- what things are, in words (one query per kind, for the rows shown) ------------------------------------------
class _Names:
    """Names what a key's owner is (a job, a date, a subscription, a customer) in words, from its id."""

    def __init__(self, owners: set[str]):
        clock_ids = {o.split("#", 1)[0] for o in owners if o.startswith("clk_")}
        self.items = {i.owner_key: i for i in ClockItem.objects.filter(clock_id__in=clock_ids)
                      .select_related("clock__subject")} if clock_ids else {}
        job_ids = {o for o in owners if o.startswith("job_")}
        self.jobs = {j.id: j for j in Job.objects.filter(pk__in=job_ids).select_related("subject")} if job_ids else {}
        sub_ids = {o for o in owners if o.startswith("sbn_")}
        self.subs = ({s.id: s for s in Subscription.objects.filter(pk__in=sub_ids).select_related("subject")}
                     if sub_ids else {})
        from calendars.models import Subject

        subject_ids = {o for o in owners if o.startswith("sbj_")}
        self.subjects = (dict(Subject.objects.filter(pk__in=subject_ids).values_list("id", "name"))
                         if subject_ids else {})

    def customer(self, owner: str) -> str:
        if owner in self.items:
            return self.items[owner].clock.subject.name
        if owner in self.jobs:
            return self.jobs[owner].subject.name
        if owner in self.subs:
            return self.subs[owner].subject.name
        return self.subjects.get(owner, "")

    def of(self, owner: str) -> str:
        """'pay · the 2027 return · US for Acme Robotics', 'the 2026 return for Acme Robotics'."""
        if owner in self.items:
            return f"{clock_what(self.items[owner])} for {self.customer(owner)}"
        if owner in self.jobs:
            return f"{job_title(self.jobs[owner])} for {self.customer(owner)}"
        if owner in self.subs:
            sub = self.subs[owner]
            svc = _service(sub.service, sub.version)
            return f"{self.customer(owner)}’s {(svc.title if svc is not None and svc.title else sub.service)}"
        if owner in self.subjects:
            return self.subjects[owner]
        return ""

    def timer(self, t: Timer) -> str:
        """What a timer was for, in words."""
        of = self.of(t.owner)
        data = t.data or {}
        if t.kind == "deadline":
            step = data.get("step", "")
            parts = t.key.split(":")
            point = data.get("point") or (parts[2].split()[-1] if len(parts) > 2 and parts[2] else "")
            what = "the late point" if point == "late" else "the at-risk warning"
            return f"{_cap(what)}{' of ' + step if step else ''} of {of or 'a piece of work'}"
        if t.kind == "due":
            return f"The due date of {of or 'a date'}"
        if t.kind == "rung":
            return f"A reminder of {of or 'a date'}"
        if t.kind == "cycle":
            return f"{of or 'A plan'}’s renewal" if of else "A plan’s renewal"
        if t.kind == "schedule":
            return self.starts(t) or "Work that starts on a schedule"
        if t.kind == "money":
            return f"A charge of {of}" if of else "A charge"
        if t.kind == "task":
            return f"A hold on work for {of}" if of else "A hold on work"
        if t.kind == "window":
            member = data.get("member", "")
            return f"{member + '’s' if member else 'A'} standby for {of or 'a customer'}"
        return _cap(of) or "Something scheduled"

    def starts(self, t: Timer) -> str:
        """A schedule's timer: '<The 2027 return> for <Acme Robotics> starts'."""
        sub = self.subs.get(t.owner)
        if sub is None:
            return ""
        data = t.data or {}
        svc = _service(sub.service, sub.version)
        sched = (getattr(svc, "schedule", None) or {}).get(data.get("schedule", "")) if svc is not None else None
        order = _service(sched.order) if sched is not None else None
        period = data.get("period", "")
        title = ((order.title if order is not None and order.title else "{service} {period}")
                 .format(period=period, service=sched.order if sched is not None else sub.service))
        return f"{_cap(title)} for {sub.subject.name} starts"


def late_timers(at: AsOf) -> tuple[list[dict], int]:
    """What fired more than LATE_AFTER_SECONDS after it was owed, the latest first (every clock domain of the
    brands: only a live clock can fire late), named in words."""
    late = timedelta(seconds=settings.KEEPING_TIME["LATE_AFTER_SECONDS"])
    qs = Timer.objects.filter(late_by__gt=late)
    if at.brand_ids is not None:
        qs = qs.filter(brand_id__in=at.brand_ids)
    timers = list(qs.order_by("-late_by", "id")[:20])
    names = _Names({t.owner for t in timers})
    rows = [{"timer": t, "what": names.timer(t), "on": names.customer(t.owner), "late_by": duration_text(t.late_by),
             "owed": local(t.owed_at, at.tz), "fired": local(t.fired_at, at.tz), "link": _admin(t)}
            for t in timers]
    return rows, qs.count()


HOLD_WORDS = {"hold": "hold ends", "window": "standby closes"}


def _kind(word: str) -> str:
    from keeping_time.glossary import kind

    return HOLD_WORDS.get(word) or kind(word)


def next_30_days(at: AsOf) -> list[Ahead]:
    now, end, tz = at.now, at.now + AHEAD, at.tz
    out: list[Ahead] = []
    for item in ClockItem.objects.filter(clock__in=_in(Clock.objects.all(), at), status=ClockItem.Status.OPEN,
                                         due_at__gte=now, due_at__lt=end).select_related("clock__subject"):
        out.append(Ahead(item.due_at, clock_what(item), _kind("hard" if item.clock.hard else "clock"),
                         item.clock.subject.name, _admin(item)))
    for job in _in(Job.objects.filter(status=Job.Status.OPEN, late=False, late_at__gte=now, late_at__lt=end), at) \
            .select_related("subject"):
        out.append(Ahead(job.late_at, f"{_cap(job_title(job))} is late after this", _kind("deadline"),
                         job.subject.name, _admin(job)))
    for task in _in(Task.objects.filter(status__in=[Task.Status.OPEN, Task.Status.TAKEN]), at).filter(
            Q(due_at__gte=now, due_at__lt=end) | Q(hold_until__gte=now, hold_until__lt=end)).select_related(
            "job__subject", "member"):
        if task.due_at and now <= task.due_at < end:
            out.append(Ahead(task.due_at, f"{_cap(task.step)} due ({job_title(task.job)})", _kind("task"),
                             task.job.subject.name, _admin(task)))
        if task.hold_until and now <= task.hold_until < end:
            out.append(Ahead(task.hold_until, f"{task.member.get_username()}’s hold on {task.step} ends",
                             _kind("hold"), task.job.subject.name, _admin(task)))
    for ask in _in(Ask.objects.filter(status=Ask.Status.OPEN, expires_at__gte=now, expires_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(ask.expires_at, f"{ask.party}’s link for {ask.step or ask.scope} ends", _kind("link"),
                         ask.job.subject.name, _admin(ask.job)))
    for grant in _in(Grant.objects.filter(status=Grant.Status.ACTIVE, ends_at__gte=now, ends_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(grant.ends_at, f"{grant.party}’s access to {grant.scope} ends", _kind("grant"),
                         grant.job.subject.name, _admin(grant.job)))
    for win in _in(Window.objects.filter(status=Window.Status.OPEN, closes_at__gte=now, closes_at__lt=end), at) \
            .select_related("member"):
        out.append(Ahead(win.closes_at, f"{win.member.get_username()}’s standby closes", _kind("window"), "",
                         _admin(win)))
    timers = list(_in(Timer.objects.filter(status=Timer.Status.ARMED, kind__in=["cycle", "schedule"],
                                           owed_at__gte=now, owed_at__lt=end), at))
    names = _Names({t.owner for t in timers})
    for t in timers:
        if t.kind == "cycle":
            what = f"{names.of(t.owner) or 'A plan'} renews"
        else:
            what = names.starts(t) or "Work starts on a schedule"
        out.append(Ahead(t.owed_at, what, _kind(t.kind), names.customer(t.owner), _admin(t)))
    out = sorted(out, key=lambda a: (a.at, a.what))[:100]
    for a in out:
        a.when = local(a.at, tz)
    return out


def alarms(at: AsOf) -> list[dict]:
    qs = Event.objects.filter(type="tick.runaway")
    if at.brand_ids is not None:
        qs = qs.filter(brand_id__in=at.brand_ids)
    events = list(qs.order_by("-seq")[:10])
    names = _Names({e.subject for e in events})
    return [{"what": _cap(names.of(e.subject)) or "Something scheduled", "when": local(e.owed_at, at.tz)}
            for e in events]


NOTICE_WORDS = {
    "clock.due": "A date was missed",
    "clock.passed": "A fixed date was missed",
    "job.lapsed": "Work stopped",
}


def unread(at: AsOf) -> tuple[list[dict], int]:
    qs = _in(Notification.objects.filter(read_at__isnull=True), at)
    notes = list(qs.order_by("-created_at", "id")[:10])
    names = _Names({n.subject for n in notes})
    rows = [{"when": local(n.created_at, at.tz), "what": NOTICE_WORDS.get(n.kind, "A notice"),
             "of": names.of(n.subject), "to": n.recipient} for n in notes]
    return rows, qs.count()


def dashboard(at: AsOf) -> dict:
    risks = dates_at_risk(at)
    ahead = [r for r in risks if not r.past]
    past = [r for r in risks if r.past]
    weeks = chart_weeks(at, {r.ref for r in ahead})
    late, late_count = late_timers(at)
    notes, notes_count = unread(at)
    return {
        "risks": ahead[:LIMIT],
        "risk_count": len(ahead),
        "money": any(r.cost.cents for r in ahead),
        "past": past[:LIMIT],
        "past_count": len(past),
        "past_money": any(r.cost.cents for r in past),
        "weeks": weeks,
        "chart": chart_svg(weeks),
        "chart_total": sum(w.total for w in weeks),
        "chart_from": day(weeks[0].start),
        "late": late,
        "late_count": late_count,
        "late_list": reverse("admin:timers_timer_changelist") + "?late=yes",
        "ahead": next_30_days(at),
        "alarms": alarms(at),
        "unread": notes,
        "unread_count": notes_count,
        "unread_list": reverse("admin:services_notification_changelist") + "?read=no",
    }
