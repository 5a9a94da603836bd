"""The console's index: what the owner acts on today.

First the rows at risk (``portals.owner.risks``: the dates still ahead and at risk, the costliest miss
first, then the soonest; where nothing ahead costs money it says so once and orders by date; what already
passed is its own collapsed section, each row with what happens next). Above the list, a 90-day chart of the
dates by week, coloured by risk, drawn here as SVG. Then what fired late, the next 30 days, alarms and unread
notifications, all in words: no ids, no runtime words.

All of it for one clock domain ("as of" the header's choice) and the request's brands, read with a query per
kind of thing, never one per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.urls import reverse

from calendars.entries import clock_what
from calendars.models import Clock, ClockItem, Subject
from calendars.words import capitalized, day, failure, kind, local
from services.mints import will_mint
from services.models import Ask, Grant, Job, Notification, Subscription, Task, Window
from timers.models import Event, Timer
from timers.timeutil import duration_text

from .risks import dates_at_risk
from .scope import AsOf
from .selectors import admin_link, in_as_of, job_title, service_of

AHEAD = timedelta(days=30)
CHART_DAYS = 90
LIMIT = 50

# The chart's colours (each with a legend word beside it: the colour is never the only sign).
RISKS = (("at risk", "#ba2121"), ("due soon", "#8a5a00"), ("fine", "#417690"))
DUE_SOON = timedelta(days=30)


@dataclass
class Ahead:
    at: datetime
    what: str
    kind: str
    on: str
    link: str
    when: str = ""


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
        clock__in=in_as_of(Clock.objects.all(), at), status=ClockItem.Status.OPEN, due_at__gte=now, due_at__lt=end)
        .values_list("clock_id", "item", "due_at")]
    rows += list(in_as_of(Job.objects.filter(status=Job.Status.OPEN, late=False, late_at__gte=now, late_at__lt=end), at)
                 .values_list("id", "late_at"))
    rows += list(in_as_of(Task.objects.filter(status__in=[Task.Status.OPEN, Task.Status.TAKEN], due_at__gte=now,
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
            svc = service_of(sub.service, sub.version)
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
            return f"{capitalized(what)}{' of ' + step if step else ''} of {of or 'a piece of work'}"
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
        return capitalized(of) or "Something scheduled"

    def will_start(self, t: Timer) -> bool:
        """A schedule's timer opens work when it fires (its ``when``, if any, reads the plan's input true)."""
        sub = self.subs.get(t.owner)
        svc = service_of(sub.service, sub.version) if sub is not None else None
        return sub is None or svc is None or will_mint(svc, (t.data or {}).get("schedule", ""), sub.input)

    def starts(self, t: Timer) -> str:
        """A schedule's timer: '<The 2027 return> for <Acme Robotics> starts'."""
        sub = self.subs.get(t.owner)
        if sub is None:
            return ""
        data = t.data or {}
        svc = service_of(sub.service, sub.version)
        sched = (getattr(svc, "schedule", None) or {}).get(data.get("schedule", "")) if svc is not None else None
        order = service_of(sched.order) if sched is not None else None
        period = data.get("period", "")
        title = ((order.title if order is not None and order.title else "{service} {period}")
                 .format(period=period, service=sched.order if sched is not None else sub.service))
        return f"{capitalized(title)} for {sub.subject.name} starts"


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
             "owed": local(t.owed_at, at.tz), "fired": local(t.fired_at, at.tz), "link": admin_link(t)}
            for t in timers]
    return rows, qs.count()


HOLD_WORDS = {"hold": "hold ends", "window": "standby closes"}


def _kind(word: str) -> str:
    return HOLD_WORDS.get(word) or kind(word)


def next_30_days(at: AsOf) -> list[Ahead]:
    now, end, tz = at.now, at.now + AHEAD, at.tz
    out: list[Ahead] = []
    for item in ClockItem.objects.filter(clock__in=in_as_of(Clock.objects.all(), at), status=ClockItem.Status.OPEN,
                                         due_at__gte=now, due_at__lt=end).select_related("clock__subject"):
        out.append(Ahead(item.due_at, clock_what(item), _kind("hard" if item.clock.hard else "clock"),
                         item.clock.subject.name, admin_link(item)))
    for job in in_as_of(Job.objects.filter(status=Job.Status.OPEN, late=False, late_at__gte=now, late_at__lt=end), at) \
            .select_related("subject"):
        out.append(Ahead(job.late_at, f"{capitalized(job_title(job))} is late after this", _kind("deadline"),
                         job.subject.name, admin_link(job)))
    for task in in_as_of(Task.objects.filter(status__in=[Task.Status.OPEN, Task.Status.TAKEN]), at).filter(
            Q(due_at__gte=now, due_at__lt=end) | Q(hold_until__gte=now, hold_until__lt=end)).select_related(
            "job__subject", "member"):
        if task.due_at and now <= task.due_at < end:
            out.append(Ahead(task.due_at, f"{capitalized(task.step)} due ({job_title(task.job)})", _kind("task"),
                             task.job.subject.name, admin_link(task)))
        if task.hold_until and now <= task.hold_until < end:
            out.append(Ahead(task.hold_until, f"{task.member.get_username()}’s hold on {task.step} ends",
                             _kind("hold"), task.job.subject.name, admin_link(task)))
    for ask in in_as_of(Ask.objects.filter(status=Ask.Status.OPEN, expires_at__gte=now, expires_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(ask.expires_at, f"{ask.party}’s link for {ask.step or ask.scope} ends", _kind("link"),
                         ask.job.subject.name, admin_link(ask.job)))
    for grant in in_as_of(Grant.objects.filter(status=Grant.Status.ACTIVE, ends_at__gte=now, ends_at__lt=end), at) \
            .select_related("job__subject"):
        out.append(Ahead(grant.ends_at, f"{grant.party}’s access to {grant.scope} ends", _kind("grant"),
                         grant.job.subject.name, admin_link(grant.job)))
    for win in in_as_of(Window.objects.filter(status=Window.Status.OPEN, closes_at__gte=now, closes_at__lt=end), at) \
            .select_related("member"):
        out.append(Ahead(win.closes_at, f"{win.member.get_username()}’s standby closes", _kind("window"), "",
                         admin_link(win)))
    timers = list(in_as_of(Timer.objects.filter(status=Timer.Status.ARMED, kind__in=["cycle", "schedule"],
                                           owed_at__gte=now, owed_at__lt=end), at))
    names = _Names({t.owner for t in timers})
    for t in timers:
        if t.kind == "cycle":
            what = f"{names.of(t.owner) or 'A plan'} renews"
        elif not names.will_start(t):
            continue  # its when reads the plan's input false: it will not happen
        else:
            what = names.starts(t) or "Work starts on a schedule"
        out.append(Ahead(t.owed_at, what, _kind(t.kind), names.customer(t.owner), admin_link(t)))
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
    return [{"what": capitalized(names.of(e.subject)) or "Something scheduled", "when": local(e.owed_at, at.tz)}
            for e in events]


def failures(at: AsOf) -> list[dict]:
    """What an error stopped ("failed, held for the owner console"), newest first: what it was for, when, the
    error as a sentence (its ``timer.failed``), and the Retry control that runs it again (timers.arming
    .timer_retry, as ``timers retry`` does)."""
    held = list(in_as_of(Timer.objects.filter(status=Timer.Status.HELD, held_by="error"), at)
                .order_by("-held_since", "id")[:LIMIT])
    errors = {(e.domain, e.key): (e.data or {}).get("error", "") for e in
              Event.objects.filter(type="timer.failed", key__in=[t.key for t in held],
                                   domain__in={t.domain for t in held}).order_by("seq")} if held else {}
    names = _Names({t.owner for t in held})
    return [{"id": t.id, "what": names.timer(t), "on": names.customer(t.owner), "when": local(t.held_since, at.tz),
             "why": failure(errors.get((t.domain, t.key), ""))} for t in held]


NOTICE_WORDS = {
    "clock.due": "A date was missed",
    "clock.passed": "A fixed date was missed",
    "job.lapsed": "Work stopped",
}


def unread(at: AsOf) -> tuple[list[dict], int]:
    qs = in_as_of(Notification.objects.filter(read_at__isnull=True), at)
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
        "failures": failures(at),
        "unread": notes,
        "unread_count": notes_count,
        "unread_list": reverse("admin:services_notification_changelist") + "?read=no",
    }
