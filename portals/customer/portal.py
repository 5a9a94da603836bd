"""The customer portal: reached through a portal session link the brand makes (``POST /portal_sessions``), it
signs the customer in for one subject for an hour. "Coming up" lists every date ahead across clocks,
schedules, links, grants and deliveries, overdue and unsatisfied dates at the top, each with what a miss costs
(calendars.words.miss for a date that is not a clock's); a link the customer must answer is "to do now"; the acts
are the customer's own: acknowledge, mark done and choose on the clocks they answer for, keep a date with
the steward, cancel a subscription at its cycle's end (and undo it). Each act is a POST with CSRF that calls
the same service function as the API, through the gate; a refusal shows as a message on the page."""

from __future__ import annotations

import calendar as pycal
from datetime import date, datetime, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from calendars import feed, specs, words
from calendars.acts import STEWARD, clock_acknowledge, clock_reassign
from calendars.answers import customers_clock
from calendars.clocks import clock_choose, clock_satisfy
from calendars.entries import Entry, subject_calendar
from calendars.feed_tokens import subject_feed_rotate
from calendars.models import ClockItem, Contact, Subject
from calendars.undo import clock_reopen, clock_take_back, clock_unacknowledge, undo_closes, undoable
from services import registry
from services.costs import clock_costs, customer_says, job_costs
from services.ledger import subject_statements
from services.models import Job, Subscription
from services.money import usd
from services.portal_sessions import portal_session_open
from services.subscriptions import subscription_cancel, subscription_uncancel
from services.timeline import item_timeline
from timers.api.throttles import sign_in_limited
from timers.domains import domain_now
from timers.models import Timer, brand_domain

from ..acting import act, private
from ..history import for_customer, history

SESSION_KEY = "customer_portal"
UNDO_KEY = "customer_portal_undo"  # the last act that can be undone: a date done, acknowledged, handed over
LINK_KEY = "customer_portal_link"  # a calendar link just made, shown once


def session_open(request: HttpRequest) -> HttpResponse:
    """The link itself (``?token=``), once: a valid one signs the customer in for its subject until it
    expires, then redirects to the portal (so the token leaves the address bar); an expired, used or unknown
    one is the same page. Tries are counted per client address (KT_SIGN_IN_RATE_LIMIT): over the rate, a 429
    page with Retry-After, and the token is not read."""
    limited = sign_in_limited(request)
    if limited is not None:
        return private(limited, referrer="no-referrer")
    found = portal_session_open(token=request.GET.get("token", ""))
    if found is None:
        return private(render(request, "portals/customer/link_expired.html", status=403), referrer="no-referrer")
    request.session.cycle_key()
    request.session[SESSION_KEY] = {"subject": found.subject_id, "brand": found.brand_id,
                                    "session": found.id, "contact": found.contact_id}
    request.session.set_expiry(found.expires_at)
    return private(redirect("customer:home"), referrer="no-referrer")


def _subject(request: HttpRequest) -> Subject | None:
    held = request.session.get(SESSION_KEY)
    if not held:
        return None
    return Subject.objects.select_related("calendar", "brand").filter(pk=held["subject"], brand_id=held["brand"]).first()


def _me(request: HttpRequest, subject: Subject) -> Contact | None:
    """Who the link was for (the page's "you"), while they are still the customer's contact."""
    held = request.session.get(SESSION_KEY) or {}
    return Contact.objects.filter(pk=held.get("contact") or "", subject=subject).first() if held.get("contact") else None


def _by(request: HttpRequest, subject: Subject) -> str:
    """Who the record says acted: the contact the link was for, else the customer."""
    me = _me(request, subject)
    return me.name if me is not None else subject.name


def _signed_in(view):
    def wrapped(request: HttpRequest, *args, **kwargs):
        subject = _subject(request)
        if subject is None:
            return private(render(request, "portals/customer/link_expired.html", status=403))
        return view(request, subject, *args, **kwargs)
    wrapped.__name__ = view.__name__
    return wrapped


DONE_WINDOW = timedelta(days=30)  # a date done stays listed (and says why it can't be undone) this long after
NOW_WINDOW = timedelta(days=45)  # a date of the customer's this close is "to do now"; further off, it is in the year


def _when(at: datetime, d: date, zone: ZoneInfo, now: datetime) -> dict:
    """How a row says its time: the date in words, the time in the calendar's zone, and how far it is."""
    local = at.astimezone(zone)
    return {"date": d, "day": words.day(d), "time": f"{local:%H:%M} {local.tzname()}",
            "until": words.until(at, now), "anchor": "", "sort": at}


def _status(item: ClockItem, today: date) -> str:
    if item.status != "open":
        return item.status
    return "due" if item.due_date < today else "due today" if item.due_date == today else "ahead"


def _who(clock, own: bool, me: Contact | None, brand: str) -> str:
    """Who answers for a date, as the person reading says it: "you (Ada Lovelace)", another of the customer's
    people by name, "you" while the customer has nobody named for it, or the brand's side."""
    if not own:
        return words.who(clock.answers_for, brand=brand)
    if me is not None and clock.contact_id == me.pk:
        return f"you ({me.name})"
    return clock.answers_for or "you"


def _missed_next(item: ClockItem, brand: str, own: bool) -> str:
    """What happens now that a date was missed."""
    if item.clock.hard:
        return (f"It was a fixed date, so it can no longer be done on time. {brand} will tell you what "
                "happens next.")
    if own:
        return f"It is still open: mark it done once it is, or let {brand} handle it."
    return f"{brand} is on it."


@_signed_in
def home(request: HttpRequest, subject: Subject) -> HttpResponse:
    domain = brand_domain(subject.domain, subject.brand_id)
    sc = subject_calendar(subject)
    me = _me(request, subject)
    zone_key = me.zone if me is not None and me.zone else sc.zone  # the reader's own zone, else the calendar's
    zone = ZoneInfo(zone_key)
    now, today = sc.now, sc.today
    brand = subject.brand.name
    items = list(ClockItem.objects.filter(clock__subject=subject, clock__domain=domain)
                 .exclude(status=ClockItem.Status.VOIDED).select_related("clock").order_by("due_at", "id"))
    costs = clock_costs({i.clock for i in items})
    by_owner = {i.owner_key: i for i in items}
    asking = _asking(domain, by_owner)
    open_count: dict[str, list[str]] = {}
    for i in items:
        if i.status in ("open", "due"):
            open_count.setdefault(i.clock_id, []).append(i.item or "")

    def item_row(item: ClockItem) -> dict:
        clock = item.clock
        spec = specs.get(clock.spec)
        own = customers_clock(clock)
        title = words.plain((clock.title or clock.name).replace("{period}", clock.period))
        what = f"{title}{' · ' + item.item if item.item else ''}"
        mine = open_count.get(clock.id, [])
        return {**_when(item.due_at, item.due_date, zone, now), "what": what,
                "kind": words.kind("hard" if clock.hard else "clock"),
                "who": _who(clock, own, me, brand),
                "status": words.status(_status(item, today)),
                "miss": customer_says(costs[clock.id].says, clock.hard, brand), "own": own,
                "clock": clock.id, "item": item.item or "-", "hard": clock.hard,
                "options": list(spec.options) if own and item.status in ("due", "passed") else [],
                "acks": own and item.owner_key in asking, "done": own and item.status in ("open", "due"),
                "steward": own and item.status in ("open", "due"),
                "steward_label": (f"Let {brand} handle it" if len(mine) <= 1 else
                                  f"Let {brand} handle {title} ({len(mine)} dates)"),
                "next": _missed_next(item, brand, own)}

    todo, missed, year, done = [], [], [], []
    for item in items:
        if item.status == ClockItem.Status.SATISFIED:
            # Done: each date the customer kept, while it is near, with its undo until the date passes.
            if customers_clock(item.clock) and item.due_date >= today - DONE_WINDOW:
                done.append({"what": _what(item), "day": words.day(item.due_date), "clock": item.clock_id,
                             "item": item.item or "-", "sort": item.due_at,
                             "undo": undoable(item, now=now), "why_not": undo_closes(item)})
            continue
        row = item_row(item)
        if item.status in ("due", "passed") or (item.status == "open" and item.due_date < today):
            if row["own"] or item.status != "passed":
                missed.append(row)
        elif item.status == "open" and row["own"] and (item.due_at <= now + NOW_WINDOW or row["acks"]):
            todo.append(row)
        elif item.status == "open":
            year.append(row)
    # Not a clock's (listed above) nor at risk (the brand's own early warning); a plan's work and renewal ahead.
    entries = [e for e in sc.entries if e.kind not in ("hard", "clock", "at_risk", "rung")
               and not (e.kind in ("schedule", "cycle") and e.status not in ("ahead", "ends"))]
    for e, miss in zip(entries, _misses(entries, subject, brand), strict=True):
        link = e.kind == "link"  # a link is the customer's to answer: its last expiry ends the work
        row = {**_when(e.at, e.date, zone, now), "what": words.plain(e.what), "kind": words.kind(e.kind),
               "who": "you" if e.answers_for == "the customer" else words.who(e.answers_for, brand=brand),
               "status": words.status(e.status), "miss": miss, "own": link}
        if link and e.status in ("ahead", "due today", "open") and e.at <= now + NOW_WINDOW:
            todo.append(row)
        else:
            year.append(row)
    todo.sort(key=lambda r: r["sort"])
    missed.sort(key=lambda r: r["sort"], reverse=True)
    year.sort(key=lambda r: r["sort"])
    horizon = today + timedelta(days=366)
    later = [r for r in year if r["date"] >= horizon]
    year = [r for r in year if r["date"] < horizon]
    seen: set[date] = set()
    for r in year:  # the month grid links each day to its first row
        if r["date"] not in seen:
            seen.add(r["date"])
            r["anchor"] = f"d-{r['date'].isoformat()}"
    subs = []
    for sub in Subscription.objects.filter(subject=subject, domain=domain).order_by("opened_at"):
        svc = registry.get(sub.service, sub.version)
        subs.append({"id": sub.id, "service": svc.title or sub.service, "status": sub.status,
                     "price": usd(svc.price.cents), "every": svc.price.every or "",
                     "cancel_at_period_end": sub.cancel_at_period_end,
                     "allowances": [{"service": _service_title(name), "used": int(sub.usage.get(name, 0)), "of": n}
                                    for name, n in svc.price.includes.items()]})
    nxt = next((r for r in year if r.get("own")), None) or (later[0] if later else None)
    return private(render(request, "portals/customer/home.html", {
        "subject": subject, "brand": brand, "zone": zone_key, "zone_name": now.astimezone(zone).tzname(), "me": me,
        "today": words.day(today), "test_clock": sc.test_clock,
        "now_local": words.local(now, zone), "todo": todo, "missed": missed, "year": year, "later": later,
        "next": nxt, "months": month_grid(today, year), "subscriptions": subs,
        "calendar_link": request.session.pop(LINK_KEY, None), "undo": _undo_banner(request, subject, now),
        "done": sorted(done, key=lambda r: r["sort"]),
    }))


def _misses(entries: list[Entry], subject: Subject, brand: str) -> list[str]:
    """What a miss costs for each date that is not a clock's, in order: from its job's late price and hold, or
    its plan's price (a query for the jobs, one for their holds, one for the plans; never one a row)."""
    on = {e.on for e in entries}
    jobs = {j.id: j for j in Job.objects.filter(subject=subject, pk__in=[o for o in on if o.startswith("job_")])}
    costs = job_costs(jobs.values())
    plans = {s.id: s for s in Subscription.objects.filter(subject=subject,
                                                          pk__in=[o for o in on if o.startswith("sbn_")])}
    out = []
    for e in entries:
        job, plan, cost = jobs.get(e.on), plans.get(e.on), costs.get(e.on)
        out.append(words.miss(
            e.kind, brand=brand, last_chance=e.kind == "link" and e.sequence > 0,  # the link sent once more
            held=usd(cost.held) if cost and cost.held else "", late=usd(cost.late) if cost and cost.late else "",
            included=job is not None and bool(job.subscription_id) and not job.price_cents,
            price=usd(registry.get(plan.service, plan.version).price.cents) if plan is not None else "",
            ends=e.status == "ends"))
    return out


def _service_title(name: str) -> str:
    try:
        svc = registry.get(name)
    except Exception:  # an allowance for a Service no longer registered: its name is all there is
        return name.replace("-", " ")
    return name.replace("-", " ") if not svc.title or "{" in svc.title else svc.title


def month_grid(today: date, rows: list[dict]) -> list[dict]:
    """The year ahead as months of weeks (Monday first), each day with the dates on it."""
    on: dict[date, list[str]] = {}
    for r in rows:
        on.setdefault(r["date"], []).append(r["what"])
    months, (y, m) = [], (today.year, today.month)
    for _ in range(12):
        weeks = []
        for week in pycal.Calendar(firstweekday=0).monthdatescalendar(y, m):
            weeks.append([{"day": d.day if d.month == m else "", "date": d, "dates": on.get(d, []) if d.month == m
                           else [], "today": d == today, "past": d < today} for d in week])
        months.append({"name": f"{date(y, m, 1):%B %Y}", "weeks": weeks,
                       "count": sum(len(v) for d, v in on.items() if (d.year, d.month) == (y, m))})
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return months


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
    if found is None or not customers_clock(found.clock):
        return None  # not this subject's, or not the customer's own clock: the same answer
    return found


@_signed_in
def date_history(request: HttpRequest, subject: Subject, clock_id: str, item: str) -> HttpResponse:
    """One date's history, in the reader's zone: what happened to it (moved and why, the reminders sent to them,
    what they and the brand did) and what happens next, read from the record (services.timeline)."""
    found = (ClockItem.objects.select_related("clock__subject__calendar")
             .filter(clock_id=clock_id, clock__subject=subject, item="" if item == "-" else item).first())
    if found is None:
        return private(render(request, "portals/customer/not_found.html", status=404))
    me = _me(request, subject)
    cal_zone = subject.calendar.zone if subject.calendar_id else "UTC"
    zone = me.zone if me is not None and me.zone else cal_zone
    shown = history(for_customer(item_timeline(item=found, zone=zone), you=me.name if me is not None else "",
                                 address=me.email if me is not None else ""),
                    now=domain_now(domain=found.clock.domain))
    return private(render(request, "portals/customer/history.html", {
        "subject": subject, "brand": subject.brand.name, "history": shown, "what": _what(found),
        "due": words.day(found.due_date)}))


def _what(item: ClockItem) -> str:
    """The date as the customer's page names it: 'file · the 2027 return · US'."""
    clock = item.clock
    title = words.plain((clock.title or clock.name).replace("{period}", clock.period))
    return f"{title}{' · ' + item.item if item.item else ''}"


def _undo_offer(request: HttpRequest, act: str, item: ClockItem) -> None:
    """The last act, offered back on the page until its date passes."""
    request.session[UNDO_KEY] = {"act": act, "clock": item.clock_id, "item": item.item or "-", "what": _what(item),
                                 "due": words.day(item.due_date)}


UNDONE = {"done": "Open again", "acknowledge": "Asking again", "steward": "Yours again"}
UNDO_BUTTON = {"done": "Undo: not done yet", "acknowledge": "Undo: ask me again", "steward": "Undo: take it back"}


@require_POST
@_signed_in
def clock_act(request: HttpRequest, subject: Subject, clock_id: str, item: str, act: str) -> HttpResponse:
    it = _own_item(subject, clock_id, item)
    if it is None or act not in ("acknowledge", "done", "choose", "steward", "reopen"):
        return private(render(request, "portals/customer/not_found.html", status=404))
    who = _by(request, subject)
    what, due = _what(it), it.due_date
    if act == "acknowledge":
        _undo_offer(request, "acknowledge", it)
        return _act(request, subject, lambda a: clock_acknowledge(armer=a, item=it, by=who),
                    words.acted("Acknowledged", what, due))
    if act == "done":
        _undo_offer(request, "done", it)
        return _act(request, subject, lambda a: clock_satisfy(armer=a, item=it, by=who, who=who),
                    words.acted("Marked done", what, due))
    if act == "reopen":
        request.session.pop(UNDO_KEY, None)
        return _act(request, subject, lambda a: clock_reopen(armer=a, item=it, by=who),
                    words.acted(UNDONE["done"], what, due))
    if act == "steward":
        clock = it.clock
        title = words.plain((clock.title or clock.name).replace("{period}", clock.period))
        n = ClockItem.objects.filter(clock=clock, status__in=["open", "due"]).count()
        brand = subject.brand.name
        _undo_offer(request, "steward", it)
        more = f" and {n - 1} more {'date' if n == 2 else 'dates'} of {title}" if n > 1 else ""
        return _act(request, subject, lambda a: clock_reassign(armer=a, clock=clock, to=STEWARD, by=who,
                                                              why="the customer handed it to the brand"),
                    words.acted(f"{brand} handles it now", what, due) + more + ".")
    option = request.POST.get("option", "")
    return _act(request, subject, lambda a: clock_choose(armer=a, item=it, option=option, by=who),
                words.acted(f"Chose {option}", what, due))


def _undo_item(subject: Subject, held: dict) -> ClockItem | None:
    """The date the last act was on: still the customer's own, or (handed to the brand) one whose clock's role
    is the customer's, which taking it back returns to them."""
    if held.get("act") != "steward":
        return _own_item(subject, held.get("clock", ""), held.get("item", "-"))
    item = held.get("item", "-")
    found = (ClockItem.objects.select_related("clock__subject__calendar")
             .filter(clock_id=held.get("clock", ""), clock__subject=subject, item="" if item == "-" else item).first())
    return found if found is not None and found.clock.role.startswith("customer") else None


def _undo_banner(request: HttpRequest, subject: Subject, now) -> dict | None:
    """The last act, as the banner offers it back: its button while the date is ahead, else why not."""
    held = request.session.get(UNDO_KEY) or {}
    if held.get("act") not in UNDO_BUTTON:
        return None
    it = _undo_item(subject, held)
    if it is None:
        return None
    return {**held, "said": words.acted({"done": "Marked done", "acknowledge": "Acknowledged",
                                         "steward": f"{subject.brand.name} handles it"}[held["act"]],
                                        held["what"], it.due_date),
            "button": UNDO_BUTTON[held["act"]], "why_not": "" if undoable(it, now=now) else undo_closes(it)}


@require_POST
@_signed_in
def undo(request: HttpRequest, subject: Subject) -> HttpResponse:
    """Take back the last act (mark done, I've seen it, let the brand handle it) while its date is ahead."""
    held = request.session.pop(UNDO_KEY, None) or {}
    it = _undo_item(subject, held)
    act_ = held.get("act", "")
    if it is None or act_ not in UNDO_BUTTON:
        return _act(request, subject, lambda a: None, "There is nothing to undo.")
    by, what = _by(request, subject), _what(it)
    fn = {"done": lambda a: clock_reopen(armer=a, item=it, by=by),
          "acknowledge": lambda a: clock_unacknowledge(armer=a, item=it, by=by),
          "steward": lambda a: clock_take_back(armer=a, item=it, by=by)}[act_]
    return _act(request, subject, fn, words.acted(UNDONE[act_], what, it.due_date))


@require_POST
@_signed_in
def calendar_link(request: HttpRequest, subject: Subject) -> HttpResponse:
    """A new calendar subscription link, shown once (only its digest is kept); any earlier link stops."""
    token = subject_feed_rotate(subject=subject)
    host = request.get_host()
    path = f"{feed.feed_path(subject)}?token={quote(token, safe='')}"
    request.session[LINK_KEY] = {"webcal": f"webcal://{host}{path}",
                                 "https": f"{'https' if request.is_secure() else 'http'}://{host}{path}"}
    return redirect(reverse("customer:home") + "#calendar")


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


@_signed_in
def statements(request: HttpRequest, subject: Subject) -> HttpResponse:
    """Their statements: for each cycle of each subscription, what the plan included, what was charged,
    credited back and refunded, and the total; orders outside a plan by month. Amounts in dollars, dates in
    their calendar's zone."""
    zone = subject.business_calendar().zone
    brand = subject.brand.name
    rows = []
    for s in subject_statements(subject=subject):
        if s.subscription is None:
            y, m = s.service.split("-")
            what, when = "Orders", f"{date(int(y), int(m), 1):%B %Y}"
        else:
            what = _service_title(s.service)
            start = words.day(s.starts.astimezone(zone).date())
            when = f"{start} to {words.day(s.ends.astimezone(zone).date())}" if s.ends else f"since {start}"
        rows.append({"what": what, "when": when, "charged": usd(s.charged), "credited": usd(s.credited),
                     "refunded": usd(s.refunded), "total": usd(s.total), "held": usd(s.held) if s.held else "",
                     "included": [f"{_service_title(k)} ({v})" for k, v in sorted(s.included.items())]})
    now = subject_calendar(subject).now
    return private(render(request, "portals/customer/statements.html", {
        "subject": subject, "brand": brand, "rows": rows, "zone": str(zone), "today": words.day(now.astimezone(zone).date()),
    }))
