"""The console's rows at risk: what a date or a job costs if it is missed, why, and the control that settles it.

The dashboard lists them (``dates_at_risk``: the costliest miss first, then the soonest; what passed apart),
and a date's own page shows its one row (``date_row``). A date the customer answers for offers only what the
brand may do about it (remind them, assign it to one of the brand's people), never marking it done or
choosing for them. Each row names the customer and the date in words, in the brand's zone; all of it read with
a query per kind of thing, never one per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q

from calendars import specs
from calendars.answers import customers_clock
from calendars.entries import clock_what
from calendars.models import Clock, ClockItem
from calendars.words import capitalized, day, local, until
from services.costs import Cost, clock_costs, job_costs
from services.members import member_says, pool_named
from services.models import Ask, Job, Task
from services.money import usd
from timers.models import Brand, Event, Membership

from .scope import AsOf
from .selectors import admin_link, in_as_of, job_title

SOON = timedelta(days=7)  # an open date this close, not yet kept, is at risk


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
    """The brands' people (one query): whom a date may be assigned to, and the brands' names."""

    def __init__(self, brand_ids):
        self.members: dict[str, tuple[tuple[str, str], ...]] = {}
        self.brands = dict(Brand.objects.filter(pk__in=list(brand_ids)).values_list("id", "name"))
        for m in Membership.objects.filter(brand_id__in=list(brand_ids)).select_related("user").order_by("user__username"):
            self.members[m.brand_id] = (*self.members.get(m.brand_id, ()), (m.user.get_username(), member_says(m)))

    @staticmethod
    def customers(clock: Clock) -> bool:
        """Whether the customer answers for the clock: its role is theirs and nobody took it over."""
        return customers_clock(clock)

    def who(self, clock: Clock) -> str:
        if self.customers(clock):
            return f"{clock.answers_for} (the customer)" if clock.answers_for else "the customer: nobody named yet"
        if clock.member_id is not None:
            return clock.answers_for
        if clock.role.startswith("member:") and not clock.assigned:
            return f"nobody yet (the {clock.role.split(':', 1)[1]})"
        return self.brands.get(clock.brand_id, "the brand")


def _options(clock: Clock) -> tuple[str, ...]:
    try:
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
        why = f"{capitalized(fixed)}, missed on {day(item.due_date)}."
        nxt = "What it guarded can no longer be done on time, and is refused from now on."
    elif item.status == ClockItem.Status.DUE:
        why = f"{capitalized(fixed)}, missed on {day(item.due_date)}."
        nxt = (f"It stays open until {person if customers and person else 'someone'} chooses what happens"
               + (f" ({', '.join(options)})" if options else "") + " or it is marked done.")
    else:
        days = (item.due_at.astimezone(tz).date() - now.astimezone(tz).date()).days
        why = f"{capitalized(fixed)}, not yet done: due {'today' if days <= 0 else 'in ' + _days(days)}."
        nxt = "If nobody keeps it, it is missed and who answers for it is told."
    if customers and person:
        why += f" {person} answers for it, not the brand: remind them, or assign it to one of your people."
        controls.append(Control(f"Remind {person}", "item", str(item.pk), "remind"))
    elif customers:
        why += (f" The customer answers for it, and {clock.subject.name} has nobody to remind: add a contact on "
                "their page, or assign it to one of your people.")
    else:
        if item.status in (ClockItem.Status.DUE, ClockItem.Status.PASSED):
            controls += [Control(f"Choose {o}", "item", str(item.pk), "choose", option=o) for o in options]
        controls.append(Control("Mark done", "item", str(item.pk), "satisfy"))
        if item.status == ClockItem.Status.PASSED:
            nxt += " Mark it done if it was kept another way."
    if people.members.get(clock.brand_id):
        controls.append(Control("Assign", "item", str(item.pk), "reassign", members=people.members[clock.brand_id]))
    return Risk(cost=cost, at=item.due_at, what=clock_what(item), on=clock.subject.name, why=why,
                answers_for=people.who(clock), link=admin_link(item), controls=controls, ref=item.owner_key,
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
    items = list(ClockItem.objects.filter(clock__in=in_as_of(Clock.objects.all(), at)).filter(
        Q(status__in=[ClockItem.Status.DUE, ClockItem.Status.PASSED])
        | Q(status=ClockItem.Status.OPEN, due_at__lte=now + SOON)).select_related("clock__subject"))
    costs = clock_costs({i.clock_id: i.clock for i in items}.values())
    jobs = list(in_as_of(Job.objects.filter(status=Job.Status.OPEN), at).select_related("subject"))
    people = _People({i.clock.brand_id for i in items} | {j.brand_id for j in jobs})
    risks += [_item_risk(item, at, costs[item.clock_id], people) for item in items]

    # Jobs late or at risk (their at-risk deadline fired): the late price, a hold a lapse returns.
    at_risk = set(in_as_of(Event.objects.filter(type="job.at_risk", subject__in=[j.id for j in jobs]), at)
                  .values_list("subject", flat=True))
    second_links = {a.job_id: a for a in in_as_of(Ask.objects.filter(status=Ask.Status.OPEN, link=2, job__in=jobs), at)}
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
        risks.append(Risk(cost=jcosts[job.id], at=when, what=capitalized(job_title(job)), on=job.subject.name, why=why,
                          answers_for=holder or (f"the {task.pool} pool" if task is not None
                                                 else people.brands.get(job.brand_id, "the brand")),
                          link=admin_link(job), controls=controls, ref=job.id, when=local(when, tz),
                          until=until(when, now), past=when < now, next=nxt if when < now else ""))

    # A pool's Task nobody holds, due soon or overdue, on a job not already listed.
    listed = {j.id for j in risky}
    open_tasks = list(in_as_of(Task.objects.filter(status=Task.Status.OPEN, due_at__lte=now + timedelta(days=2)), at)
                      .exclude(job_id__in=listed).select_related("job__subject"))
    tcosts = job_costs({t.job_id: t.job for t in open_tasks}.values())
    for task in open_tasks:
        job = task.job
        when = task.due_at
        why = f"Nobody in the {task.pool} pool has taken it; it is due {local(when, tz)}."
        risks.append(Risk(cost=tcosts[job.id], at=when, what=f"{capitalized(task.step)} · {job_title(job)}",
                          on=job.subject.name, why=why, answers_for=f"the {task.pool} pool", link=admin_link(task),
                          controls=[Control(f"Assign {task.step}", "task", task.id, "assign",
                                            members=rosters.of(job, task.pool))],
                          ref=task.id, when=local(when, tz), until=until(when, now), past=when < now,
                          next="Assign it to someone in the pool: the work waits on it." if when < now else ""))
    return sorted(risks, key=lambda r: (r.past, r.sort_key))
