"""The customer portal: reached through a portal session link the brand makes (``POST /portal_sessions``), it
signs the customer in for one subject for an hour. "Coming up" lists every date ahead across clocks,
schedules, links and grants, overdue and unsatisfied dates at the top, each with what a miss costs; the acts
are the customer's own: acknowledge, mark done and choose on the clocks they answer for, keep a date with
the steward, cancel a subscription at its cycle's end (and undo it). Each act is a POST with CSRF that calls
the same service function as the API, through the gate; a refusal shows as a message on the page."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from calendars import specs
from calendars.acts import STEWARD, clock_acknowledge, clock_reassign
from calendars.entries import subject_calendar
from calendars.models import ClockItem, Subject
from calendars.services import business_calendar, clock_choose, clock_satisfy
from services import registry
from services.costs import clock_costs, usd
from services.members import brand_people
from services.models import Ask, Grant, Job, Subscription
from services.portal_sessions import portal_session_open
from services.services import subscription_cancel, subscription_uncancel
from timers.models import Timer, brand_domain

from ..acting import act, private

SESSION_KEY = "customer_portal"


def session_open(request: HttpRequest, token: str) -> HttpResponse:
    """The link itself: a valid one signs the customer in for its subject until it expires, then redirects
    to the portal (so the token leaves the address bar); an expired or unknown one is the same page."""
    found = portal_session_open(token=token)
    if found is None:
        return private(render(request, "portals/customer/link_expired.html", status=403), referrer="no-referrer")
    request.session.cycle_key()
    request.session[SESSION_KEY] = {"subject": found.subject_id, "brand": found.brand_id,
                                    "session": found.id}
    request.session.set_expiry(found.expires_at)
    return private(redirect("customer:home"), referrer="no-referrer")


def _subject(request: HttpRequest) -> Subject | None:
    held = request.session.get(SESSION_KEY)
    if not held:
        return None
    return Subject.objects.select_related("calendar", "brand").filter(pk=held["subject"], brand_id=held["brand"]).first()


def _signed_in(view):
    def wrapped(request: HttpRequest, *args, **kwargs):
        subject = _subject(request)
        if subject is None:
            return private(render(request, "portals/customer/link_expired.html", status=403))
        return view(request, subject, *args, **kwargs)
    wrapped.__name__ = view.__name__
    return wrapped


def _local(at: datetime, zone: ZoneInfo) -> dict:
    local = at.astimezone(zone)
    return {"date": local.date(), "weekday": f"{local:%A}", "time": f"{local:%H:%M}"}


@_signed_in
def home(request: HttpRequest, subject: Subject) -> HttpResponse:
    domain = brand_domain(subject.domain, subject.brand_id)
    sc = subject_calendar(subject)
    zone = ZoneInfo(sc.zone)
    cal = business_calendar(subject)
    staff = brand_people(subject.brand_id)
    items = list(ClockItem.objects.filter(clock__subject=subject, clock__domain=domain)
                 .exclude(status=ClockItem.Status.VOIDED).select_related("clock").order_by("due_at", "id"))
    costs = clock_costs({i.clock for i in items})
    by_owner = {i.owner_key: i for i in items}
    asking = _asking(domain, by_owner)

    def item_row(item: ClockItem, status: str) -> dict:
        clock = item.clock
        spec = specs.get(clock.spec)
        own = clock.answers_for not in staff
        title = (clock.title or clock.name).replace("{period}", clock.period)
        return {**_local(item.due_at, zone), "what": f"{title}{' · ' + item.item if item.item else ''}",
                "kind": "hard date" if clock.hard else "date", "who": clock.answers_for or "the brand",
                "status": status, "cost": costs[clock.id].says, "own": own, "clock": clock.id,
                "item": item.item or "-", "options": list(spec.options) if item.status in ("due", "passed") else [],
                "acks": own and item.owner_key in asking,
                "done": own and item.status in ("open", "due"), "steward": own and item.status in ("open", "due"),
                "sort": item.due_at}

    # Overdue and unsatisfied first: a date that came and was not kept is what needs the customer now.
    overdue = [item_row(i, {"due": "came unsatisfied", "passed": "passed unsatisfied"}.get(i.status, "overdue"))
               for i in items if i.status in ("due", "passed") or (i.status == "open" and i.due_date < sc.today)]
    ahead: list[dict] = []
    for e in sc.entries:
        if e.kind in ("hard", "clock"):
            item = by_owner.get(e.on)
            if item is None or item.status != "open" or item.due_date < sc.today:
                continue
            ahead.append(item_row(item, "due today" if item.due_date == sc.today else "ahead"))
        elif e.kind in ("schedule", "cycle") and e.status in ("ahead", "ends"):
            what = e.what.replace(" is minted", ": the work starts")
            ahead.append({**_local(e.at, zone), "what": what, "kind": "renewal" if e.kind == "cycle" else "starts",
                          "who": "the brand" if e.kind == "schedule" else "you", "status":
                          "ends instead (canceled)" if e.status == "ends" else "ahead",
                          "cost": "", "own": False, "sort": e.at})
    jobs = {j.id: j for j in Job.objects.filter(subject=subject, domain=domain, status=Job.Status.OPEN)}
    for ask in Ask.objects.filter(job_id__in=jobs, status=Ask.Status.OPEN).exclude(expires_at=None):
        job = jobs[ask.job_id]
        ahead.append({**_local(ask.expires_at, zone), "what": f"your link for {ask.step or ask.scope} "
                      f"({job.service} {job.period}) expires" + (" — its last chance" if ask.link == 2 else ""),
                      "kind": "link", "who": ask.party, "status": "open", "cost":
                      "the second expiry ends the work, and the hold returns" if ask.link == 2 else
                      "it opens once more, then the work lapses", "own": False, "sort": ask.expires_at})
    for grant in Grant.objects.filter(job_id__in=jobs, status=Grant.Status.ACTIVE):
        ahead.append({**_local(grant.ends_at, zone), "what": f"your {grant.scope} grant ends", "kind": "grant",
                      "who": grant.party, "status": "active", "cost": "a step that needs it waits until you grant "
                      "it again", "own": False, "sort": grant.ends_at})
    ahead.sort(key=lambda r: r["sort"])
    subs = []
    for sub in Subscription.objects.filter(subject=subject, domain=domain).order_by("opened_at"):
        svc = registry.get(sub.service, sub.version)
        subs.append({"id": sub.id, "service": svc.title or sub.service, "status": sub.status,
                     "price": usd(svc.price.cents), "every": svc.price.every or "",
                     "cancel_at_period_end": sub.cancel_at_period_end,
                     "allowances": [{"service": name, "used": int(sub.usage.get(name, 0)), "of": n}
                                    for name, n in svc.price.includes.items()]})
    return private(render(request, "portals/customer/home.html", {
        "subject": subject, "zone": sc.zone, "today": sc.today, "test_clock": sc.test_clock,
        "now_local": f"{sc.now.astimezone(zone):%Y-%m-%d %H:%M}", "overdue": overdue, "ahead": ahead,
        "subscriptions": subs, "closes": f"{cal.closes:%H:%M}" if getattr(cal, "closes", None) else "",
    }))


def _asking(domain: str, owners) -> set[str]:
    """The items whose ack rung still asks (an armed ack timer): one query for the page."""
    return set(Timer.objects.filter(domain=domain, owner__in=list(owners), kind="rung", status="armed",
                                    key__contains=":ack ").values_list("owner", flat=True))


def _act(request: HttpRequest, subject: Subject, fn, done: str) -> HttpResponse:
    act(request, brand_id=subject.brand_id, domain=brand_domain(subject.domain, subject.brand_id), fn=fn, done=done)
    return redirect(reverse("customer:home"))


def _own_item(subject: Subject, clock_id: str, item: str) -> ClockItem | None:
    found = (ClockItem.objects.select_related("clock__subject__calendar")
             .filter(clock_id=clock_id, clock__subject=subject, item="" if item == "-" else item).first())
    if found is None or found.clock.answers_for in brand_people(subject.brand_id):
        return None  # not this subject's, or not the customer's own clock: the same answer
    return found


@require_POST
@_signed_in
def clock_act(request: HttpRequest, subject: Subject, clock_id: str, item: str, act: str) -> HttpResponse:
    it = _own_item(subject, clock_id, item)
    if it is None or act not in ("acknowledge", "done", "choose", "steward"):
        return private(render(request, "portals/customer/not_found.html", status=404))
    who = it.clock.answers_for
    if act == "acknowledge":
        return _act(request, subject, lambda a: clock_acknowledge(armer=a, item=it, by=who), "Acknowledged.")
    if act == "done":
        return _act(request, subject, lambda a: clock_satisfy(armer=a, item=it, by=who), "Marked done.")
    if act == "steward":
        return _act(request, subject, lambda a: clock_reassign(armer=a, clock=it.clock, to=STEWARD, by=who,
                                                              why="kept with the steward"),
                    "The brand's steward keeps this date now.")
    option = request.POST.get("option", "")
    return _act(request, subject, lambda a: clock_choose(armer=a, item=it, option=option, by=who),
                f"Chose {option}.")


@require_POST
@_signed_in
def subscription_act(request: HttpRequest, subject: Subject, subscription_id: str, act: str) -> HttpResponse:
    sub = Subscription.objects.filter(pk=subscription_id, subject=subject).first()
    if sub is None or act not in ("cancel", "undo"):
        return private(render(request, "portals/customer/not_found.html", status=404))
    if act == "cancel":
        return _act(request, subject, lambda a: subscription_cancel(armer=a, sub=sub),
                    "It ends at the end of this cycle; you can undo that until then.")
    return _act(request, subject, lambda a: subscription_uncancel(armer=a, sub=sub), "It renews as before.")
