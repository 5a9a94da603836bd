"""What happened, read from the record: the timeline of a customer, a date (a clock's item) or a job.

One read, the same for every face (the API's ``GET …/timeline``, the CLI's ``subjects timeline``, the MCP tool
``subject_timeline``, and the pages): the record's events in record order, each outside call a firing or an act
made (an email, a notice, an e-file submission, a webhook delivery, a schedule's HTTP call) beside the event it
left with, with its status and attempt, then what is still armed ahead, in the order it will happen. Each entry
says itself as a sentence in people's words (``calendars.words``: no id, no word of the runtime's) with its
instant in the viewer's zone, the zone named.

A fixed number of queries, whatever the history's length (tests/services/test_timeline.py holds it to 6 for a
customer, with its lookup): what the owner's rows are (a customer's clock items; its jobs, subscriptions and the
brand's webhook endpoints, one UNION), its events (``event_domain_subject``, an index probe per owner), the sends of those events (the outbox's
unique (domain, key, …) index, the webhook endpoints' deliveries by their record-order key) and the armed timers
(``timer_domain_owner``). Pages are cut in memory from the one read: ``starting_after`` names an entry's id.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Q, Value

from calendars.entries import clock_what
from calendars.models import ClockItem, Subject
from calendars.words import ID_PATTERN, capitalized, day, local, plain
from timers.errors import NotFound
from timers.models import Event, Outbox, Timer, WebhookEndpoint, is_live
from timers.timeutil import iso_z
from timers.webhooks import delivery_key

from .models import Job, Subscription

# An entry's kind: what happened to the thing, as the API names it (a page says it in its sentence).
FIRED, MOVED, REMINDED, ACTED, SENT, ARMED = "fired", "moved", "reminded", "acted", "sent", "armed"
KINDS = (FIRED, MOVED, REMINDED, ACTED, SENT, ARMED)
# A send's status, from its outbox row.
SEND_STATUSES = ("waiting", "sending", "sent", "answered", "in_doubt", "failed", "dead_lettered", "voided")


@dataclass
class Entry:
    """One line of a timeline. ``at`` is UTC; ``when`` the same instant in the viewer's ``zone``."""

    id: str
    kind: str
    type: str
    at: datetime | None
    sentence: str
    zone: ZoneInfo
    status: str | None = None
    attempt: int | None = None
    resend: bool = False  # a send the owner may resend (services.resend): failed, given up or in doubt, its latest try
    order: tuple = field(default=(), repr=False)

    @property
    def when(self) -> str:
        return local(self.at, self.zone) if self.at is not None else ""

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "object": "timeline_entry", "kind": self.kind, "type": self.type, "at": iso_z(self.at),
                "when": self.when, "zone": self.zone.key, "sentence": self.sentence, "status": self.status,
                "attempt": self.attempt}

    def line(self) -> str:
        """The CLI's line: when (zone named) · kind · sentence."""
        status = f" [{self.status}]" if self.status else ""
        return f"{self.when} · {self.kind}{status} · {self.sentence}"


@dataclass
class Timeline:
    """A timeline: its past (``entries`` of kinds fired … sent, in record order) then what is ``ARMED`` ahead."""

    title: str
    zone: ZoneInfo
    entries: list[Entry]

    def page(self, *, limit: int, starting_after: str | None = None) -> tuple[list[Entry], bool]:
        """``limit`` entries after the one ``starting_after`` names (NotFound if none is), and whether more follow."""
        start = 0
        if starting_after:
            ids = [e.id for e in self.entries]
            if starting_after not in ids:
                err = NotFound(f"starting_after: no timeline entry {starting_after!r}")
                err.param = "starting_after"
                raise err
            start = ids.index(starting_after) + 1
        rows = self.entries[start:start + limit + 1]
        return rows[:limit], len(rows) > limit


# -- the one read ------------------------------------------------------------------------------------------
@dataclass
class _Owners:
    """Whose events a timeline reads (event.subject values), with the words for each."""

    domain: str
    brand_id: str
    items: dict[str, ClockItem] = field(default_factory=dict)  # owner key (clk_…#US) → its item
    clocks: dict[str, str] = field(default_factory=dict)  # clock id → what it is called
    jobs: dict[str, str] = field(default_factory=dict)  # job id → what it is called
    plans: dict[str, str] = field(default_factory=dict)  # subscription id → its plan
    others: dict[str, str] = field(default_factory=dict)  # the customer itself
    endpoints: list[str] | None = None  # the brand's webhook endpoints of the domain's mode; None: not read yet

    def keys(self) -> list[str]:
        return sorted({*self.items, *self.clocks, *self.jobs, *self.plans, *self.others})


def _zone(zone: str | ZoneInfo | None, fallback: str) -> ZoneInfo:
    if isinstance(zone, ZoneInfo):
        return zone
    for name in (zone, fallback, "UTC"):
        if name:
            try:
                return ZoneInfo(name)
            except (KeyError, ValueError):
                continue
    return ZoneInfo("UTC")


def _job_words(service: str, period: str) -> str:
    return plain(f"{service.replace('-', ' ')} for {period}" if period else service.replace("-", " "))


def _add_items(owners: _Owners, items: Iterable[ClockItem]) -> None:
    for it in items:
        owners.items[it.owner_key] = it
        owners.clocks.setdefault(it.clock_id, plain((it.clock.title or it.clock.name).replace("{period}", it.clock.period)
                                                    .replace(" · {item}", "").replace("{item}", "")))


def subject_timeline(*, subject: Subject, domain: str, zone: str | ZoneInfo | None = None) -> Timeline:
    """The customer's timeline on ``domain`` (its own clock domain, or the test clock it is read on): every
    event of the customer, its subscriptions, jobs, clocks and dates, their sends, and what is armed ahead.
    ``zone``: the viewer's (an IANA name), else the customer's calendar's. ``subject`` comes with its calendar
    (``select_related``); 5 more queries."""
    owners = _Owners(domain=domain, brand_id=subject.brand_id, others={subject.id: subject.name})
    _add_items(owners, ClockItem.objects.filter(clock__subject=subject, clock__domain=domain).select_related("clock"))
    jobs = Job.objects.filter(subject=subject, domain=domain).values_list("id", "service", "period", Value("job"))
    plans = Subscription.objects.filter(subject=subject, domain=domain).values_list("id", "service", Value(""),
                                                                                     Value("plan"))
    hooks = WebhookEndpoint.objects.filter(brand_id=subject.brand_id, livemode=is_live(domain)).values_list(
        "id", Value(""), Value(""), Value("hook"))
    owners.endpoints = []
    for oid, service, period, what in jobs.union(plans, hooks, all=True):
        if what == "hook":
            owners.endpoints.append(oid)
        elif what == "job":
            owners.jobs[oid] = _job_words(service, period)
        else:
            name = service.replace("-", " ")
            owners.plans[oid] = plain(f"the {name}" if name.endswith("plan") else f"the {name} plan")
    cal_zone = subject.calendar.zone if subject.calendar_id else ""
    return _read(owners, title=subject.name, zone=_zone(zone, cal_zone))


def item_timeline(*, item: ClockItem, zone: str | ZoneInfo | None = None) -> Timeline:
    """One date's timeline: its own events and its clock's (who answers for it, a repin), their sends and what
    is armed ahead for it. ``item.clock`` comes with its subject's calendar; 4 queries."""
    clock = item.clock
    owners = _Owners(domain=clock.domain, brand_id=clock.brand_id)
    _add_items(owners, [item])
    cal_zone = clock.subject.calendar.zone if clock.subject.calendar_id else ""
    return _read(owners, title=clock_what(item), zone=_zone(zone, cal_zone))


def job_timeline(*, job: Job, zone: str | ZoneInfo | None = None) -> Timeline:
    """A job's timeline: its events (steps, Tasks, asks, grants, its deadline), its clocks' and dates', their
    sends and what is armed ahead. ``job`` comes with its subject's calendar; 5 queries."""
    owners = _Owners(domain=job.domain, brand_id=job.brand_id, jobs={job.id: _job_words(job.service, job.period)})
    _add_items(owners, ClockItem.objects.filter(clock__owner_ref=job.id, clock__domain=job.domain)
               .select_related("clock"))
    cal_zone = job.subject.calendar.zone if job.subject.calendar_id else ""
    return _read(owners, title=owners.jobs[job.id], zone=_zone(zone, cal_zone))


def _read(owners: _Owners, *, title: str, zone: ZoneInfo) -> Timeline:
    keys = owners.keys()
    if owners.endpoints is None:
        owners.endpoints = list(WebhookEndpoint.objects.filter(brand_id=owners.brand_id,
                                                               livemode=is_live(owners.domain)).values_list("id", flat=True))
    # In record order, sorted here: an ORDER BY seq would tempt the planner to walk the domain's whole record in
    # seq order (event_domain_seq) when it believes the domain small; event_domain_subject probes each owner's.
    # Named rows, not models: a long history is thousands of them, and a model's construction is most of the cost.
    events: list[Any] = sorted(Event.objects.filter(domain=owners.domain, subject__in=keys).values_list(
        "seq", "id", "type", "subject", "owed_at", "fired_at", "key", "data", named=True), key=lambda e: e.seq)
    entries: list[Entry] = []
    by_key: dict[str, Entry] = {}
    by_delivery: dict[str, Entry] = {}
    by_act: dict[tuple[str, str], Entry] = {}
    for e in events:
        at = e.fired_at or e.owed_at
        kind, sentence = event_words(e.type, e.subject, e.data or {}, owners, zone)
        entry = Entry(id=e.id, kind=kind, type=e.type, at=at, sentence=sentence, zone=zone, order=(e.seq, 0, ""))
        entries.append(entry)
        if e.key:
            by_key.setdefault(e.key, entry)
        elif at is not None:
            by_act.setdefault((e.subject, f"{at.astimezone(UTC):%Y-%m-%dT%H:%M}"), entry)
        by_delivery[delivery_key(e.seq, e.id)] = entry
    entries += _sends(owners, events, by_key, by_delivery, by_act, zone)
    entries.sort(key=lambda x: x.order)
    entries += _armed(owners, zone)
    return Timeline(title=title, zone=zone, entries=entries)


def _sends(owners: _Owners, events: list[Any], by_key: dict[str, Entry], by_delivery: dict[str, Entry],
           by_act: dict[tuple[str, str], Entry], zone: ZoneInfo) -> list[Entry]:
    """The outside calls of the timeline's events: the firing's sends (the event's key), an act's sends
    (``<owner>|…``: a reminder's email) and each webhook endpoint's deliveries of the events (by the delivery's
    key, which names the event). One query."""
    # A firing's sends carry its timer's key, <owner>:<kind>:…, and an act's <owner>|…: one range of the key's
    # index per owner, [<owner>:, <owner>}), which holds both (':' < '|' < '}'); an event whose firing was another
    # owner's (a roll recorded by the plan's schedule) names its key. Few parameters, whatever the history.
    keys = owners.keys()
    mine = set(keys)
    keyed = Q(key__in=sorted(k for k in by_key if _owner_of(k) not in mine))
    for owner in keys:
        keyed |= Q(key__gte=f"{owner}:", key__lt=f"{owner}}}")
    fields = ("id", "domain", "key", "attempt", "seq", "transport", "payload", "status", "receipt", "error", "tries",
              "created_at")
    rows = Outbox.objects.filter(keyed, domain=owners.domain).values_list(*fields, named=True)
    if owners.endpoints and by_delivery:  # each endpoint's deliveries of these events (its domain is its id)
        rows = rows.union(Outbox.objects.filter(domain__in=owners.endpoints, key__in=sorted(by_delivery))
                          .values_list(*fields, named=True), all=True)
    out = []
    rows = list(rows.order_by("created_at", "id"))
    latest: dict[tuple[str, str, int], int] = {}
    for row in rows:
        latest[(row.domain, row.key, row.seq)] = max(row.attempt, latest.get((row.domain, row.key, row.seq), 0))
    places = sorted((e.fired_at or e.owed_at, e.seq) for e in events if (e.fired_at or e.owed_at) is not None)
    for row in rows:
        if row.transport != "webhook" and row.key not in by_key and _owner_of(row.key) not in mine:
            continue  # in an owner's range, not of it (job_ab's range holds job_abc's keys)
        anchor = by_delivery.get(row.key) if row.transport == "webhook" else by_key.get(row.key)
        if anchor is None:
            anchor = _act_anchor(row.key, by_act)
        at = anchor.at if anchor is not None else row.created_at
        status = send_status(row)
        order = (anchor.order[0] if anchor is not None else _place(places, at), 1,
                 f"{row.attempt:06d}{row.seq:04d}{row.id}")
        out.append(Entry(id=row.id, kind=SENT, type=row.transport, at=at, zone=zone, status=status,
                         attempt=row.attempt, sentence=send_words(row, status), order=order,
                         resend=status in RESENDABLE and latest[(row.domain, row.key, row.seq)] == row.attempt))
    return out


def _owner_of(key: str) -> str:
    """The owner a send's key names: clk_…#US of clk_…#US:rung:notice 30d:2027@0 and of clk_…#US|remind:…."""
    return key.split(":", 1)[0].split("|", 1)[0]


def _act_anchor(key: str, by_act: dict[tuple[str, str], Entry]) -> Entry | None:
    """An act's send (a reminder's email: ``clk_…#US|remind:2028-04-12T14:00|notify:ntf_…``) belongs to the act
    recorded at that minute on that owner: the record keeps no key for an act, so its minute finds it."""
    owner, _, rest = key.partition("|")
    for part in rest.split("|"):
        _, _, minute = part.partition(":")
        if (owner, minute) in by_act:
            return by_act[(owner, minute)]
    return None


def _place(places: list[tuple[datetime, int]], at: datetime | None) -> int:
    """A send no event anchors goes after the last event at or before its instant, in record order."""
    if at is None or not places:
        return 0
    i = bisect_right([p[0] for p in places], at)
    return max((seq for _, seq in places[:i]), default=0)


def _armed(owners: _Owners, zone: ZoneInfo) -> list[Entry]:
    keys = owners.keys()
    if not keys:
        return []
    match = Q(owner__in=keys)
    # Held timers too (an at-risk point paused while the work waits on the customer): they come back. Asking for
    # both states keeps the planner off the armed-only tick-order index, whose walk would read the domain's every
    # armed timer; timer_domain_owner probes each owner's. Sorted here, in tick order, the held last.
    timers = (Timer.objects.filter(domain=owners.domain, status__in=[Timer.Status.ARMED, Timer.Status.HELD])
              .filter(match).only("id", "key", "owner", "kind", "status", "owed_at", "place", "opened_at", "data"))
    far = datetime.max.replace(tzinfo=UTC)
    ordered = sorted(timers, key=lambda t: (t.owed_at is None, t.owed_at or far, t.place, t.opened_at, t.key))
    return [Entry(id=t.id, kind=ARMED, type=t.kind, at=t.owed_at, zone=zone,
                  sentence=armed_words(t, owners) if t.status == Timer.Status.ARMED else
                  f"{armed_words(t, owners)[:-1]}, once the work goes on (on hold while it waits).")
            for t in ordered]


# -- words ------------------------------------------------------------------------------------------------
def _day(text: Any) -> str:
    try:
        return day(date.fromisoformat(str(text)[:10]))
    except ValueError:
        return str(text or "")


def _instant(text: Any, zone: ZoneInfo | None = None) -> str:
    try:
        at = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return ""
    return local(at if at.tzinfo else at.replace(tzinfo=UTC), zone or ZoneInfo("UTC"))


def _who(by: Any) -> str:
    """Who acted, as people say it: a person's name, "the brand", an agent's key (never its id)."""
    text = str(by or "").strip()
    if not text:
        return "someone"
    if text.startswith(("rk_", "sk_", "key_")):
        return "an agent's key"
    return plain(ID_PATTERN.sub("", text)) or "someone"


def _what(subject: str, data: dict[str, Any], owners: _Owners) -> str:
    """What an event is about: a date ('file · the 2027 return · US'), a clock, a job, a plan, the customer."""
    if subject in owners.items:
        return plain(clock_what(owners.items[subject]))
    if subject in owners.clocks:
        return owners.clocks[subject]
    if subject in owners.jobs:
        return owners.jobs[subject]
    if subject in owners.plans:
        return owners.plans[subject]
    if subject in owners.others:
        return plain(owners.others[subject])
    clock, item = data.get("clock"), data.get("item")
    return plain(" · ".join(str(x) for x in (clock, item) if x)) or "it"


# Why a date moved, by what moved it (clock.moved's ``by``).
MOVED_BY = {"extend": "an extension", "due": "its due date changed", "calendar": "a change to the calendar",
            "postpone": "a postponement", "repin": "the Service's newer rules", "notice": "a notice from the agency"}
# A reminder's kind (clock.<rung kind>), as the customer hears it.
REMINDER = {"clock.notice": "A reminder went out", "clock.escalate": "A warning went out"}


def event_words(type: str, subject: str, data: dict[str, Any], owners: _Owners, zone: ZoneInfo) -> tuple[str, str]:
    """An event as (kind, sentence) in people's words."""
    what = _what(subject, data, owners)
    head = type.split(".", 1)[0]
    said = _SAYS.get(head, _other_words)(type, what, data, zone)
    if said is not None:
        return said
    return FIRED, f"{capitalized(plain(type.replace('.', ' ').replace('_', ' ')))}: {what}."


Said = tuple[str, str] | None


def _clock_words(type: str, what: str, data: dict[str, Any], zone: ZoneInfo) -> Said:
    by = data.get("by")
    if type in REMINDER:
        return REMINDED, f"{REMINDER[type]}: {what} is due {_day(data.get('due'))}."
    if type == "clock.ack_requested":
        return REMINDED, (f"Asked to confirm {what}, due {_day(data.get('due'))} "
                          f"(day {data.get('day')} of {data.get('of')}).")
    if type == "clock.reminded":
        channel = "by email" if data.get("channel") == "email" else "in the console"
        return REMINDED, f"{_who(by)} reminded {_who(data.get('to'))} of {what}, {channel}."
    if type == "clock.moved":
        why = MOVED_BY.get(str(by), plain(str(by or "a change")))
        return MOVED, f"{capitalized(what)} moved from {_day(data.get('from'))} to {_day(data.get('to'))}: {why}."
    if type == "clock.rolled":
        return MOVED, (f"{capitalized(what)} rolled from {_day(data.get('from'))} to {_day(data.get('to'))}: "
                       f"{plain(str(data.get('why') or 'a closed day'))}.")
    if type == "clock.repinned":
        return MOVED, f"{capitalized(what)} now follows the Service's newer rules (a repin)."
    if type == "clock.assigned":
        return ACTED, f"{capitalized(what)} is now {_who(data.get('to'))}'s to answer for ({plain(str(data.get('why') or ''))})."
    if type == "clock.reassigned":
        return ACTED, (f"{_who(by)} handed {what} to {_who(data.get('to'))}"
                       f"{': ' + plain(str(data['why'])) if data.get('why') else ''}.")
    if type == "clock.acknowledged":
        return ACTED, f"{_who(by)} confirmed {what}."
    if type == "clock.unacknowledged":
        return ACTED, f"{_who(by)} took back their confirmation of {what}: its reminders ahead go out again."
    if type == "clock.reopened":
        return ACTED, f"{_who(by)} took back marking {what} done: it is open again, with its reminders ahead."
    if type == "clock.satisfied":
        how = f" ({plain(str(data['with']))})" if data.get("with") else ""
        late = "" if data.get("on_time", True) else ", late"
        if data.get("who"):  # a person marked it done (a receipt's or a step's ``by`` names no one)
            return ACTED, f"{_who(data['who'])} marked {what} done{how}{late}."
        return ACTED, f"{capitalized(what)} was done{how}{late}."
    if type == "clock.submitted":
        return ACTED, f"{capitalized(what)} was submitted."
    if type == "clock.chosen":
        return ACTED, f"{_who(by)} chose {plain(str(data.get('option') or 'an option'))} for {what}."
    if type == "clock.due":
        return FIRED, f"{capitalized(what)} was missed: it was due {_day(data.get('due'))}."
    if type == "clock.passed":
        return FIRED, f"{capitalized(what)}, a fixed date, passed undone on {_day(data.get('due'))}."
    if type == "clock.rung_ran":
        return FIRED, f"The {plain(str(data.get('step') or 'next'))} step of {what} ran."
    if type == "clock.step":
        return FIRED, f"The {plain(str(data.get('step') or 'next'))} step of {what} was taken."
    if type == "clock.penalty":
        return FIRED, f"A penalty is owed for {what}."
    return None


def _job_event_words(type: str, what: str, data: dict[str, Any], zone: ZoneInfo) -> Said:
    if type == "job.repinned":
        return MOVED, f"{capitalized(what)} now follows the Service's newer rules (a repin)."
    if type == "job.deadline_moved":
        return MOVED, f"The delivery date of {what} moved to {_instant(data.get('to'), zone)}."
    if type == "job.opened":
        return FIRED, f"Work on {what} started."
    if type == "job.ordered":
        return ACTED, f"{what[:1].upper()}{what[1:]} was ordered."
    if type == "job.at_risk":
        return FIRED, f"{capitalized(what)} is at risk: it is late after {_instant(data.get('late_at'), zone)}."
    if type == "job.late":
        return FIRED, f"{capitalized(what)} is late."
    if type == "job.waiting":
        return FIRED, f"{capitalized(what)} waits on {plain(str(data.get('on') or 'the customer'))}."
    if type == "job.resumed":
        return FIRED, f"{capitalized(what)} goes on: {plain(str(data.get('from') or 'what it waited on'))} arrived."
    if type == "job.activity":
        return ACTED, f"{capitalized(what)}: {plain(str(data.get('what') or 'some work'))}."
    if type == "job.delivered":
        return ACTED, f"{capitalized(what)} was delivered."
    if type.startswith("job."):
        reason = f": {plain(str(data['reason']))}" if data.get("reason") else ""
        return ACTED, f"{capitalized(what)} was {type[4:].replace('_', ' ')}{reason}."
    return None


def _people_words(type: str, what: str, data: dict[str, Any], zone: ZoneInfo) -> Said:
    by = data.get("by")
    if type == "step.done":
        return ACTED, f"{_who(by)} finished the {plain(str(data.get('step')))} step of {what}."
    if type == "step.entered":
        return FIRED, f"{capitalized(what)} reached its {plain(str(data.get('step')))} step."
    if type.startswith("step."):
        return FIRED, f"The {plain(str(data.get('step')))} step of {what} is {type[5:].replace('_', ' ')}."
    if type == "task.taken":
        return ACTED, f"{_who(data.get('member'))} took the {plain(str(data.get('step') or ''))} work on {what}."
    if type == "task.hold_extended":
        return ACTED, f"{_who(data.get('member'))} extended their hold on {what} (a hold extends once per Task)."
    if type == "task.reopened":
        return ACTED, f"The work on {what} is open to the team again: {plain(str(data.get('why') or ''))}."
    if type == "task.handed_over":
        return ACTED, f"The work on {what} was handed to {_who(data.get('to'))}."
    if type == "task.hold_warning":
        return REMINDED, f"{_who(data.get('member'))} was told their hold on {what} is ending."
    if type in ("ask.sent", "ask.reopened"):
        return REMINDED, f"A link was sent to {plain(str(data.get('party') or 'the customer'))} for {what}."
    if type == "ask.reminded":
        return REMINDED, f"{capitalized(plain(str(data.get('party') or 'the customer')))} was reminded of the link for {what}."
    if type == "ask.expired":
        return FIRED, f"The link for {what} expired."
    if type == "grant.given":
        return ACTED, f"{capitalized(plain(str(data.get('party') or 'the customer')))} gave access for {what}."
    if type == "grant.ended":
        return FIRED, f"Access for {what} ended."
    return None


def _other_words(type: str, what: str, data: dict[str, Any], zone: ZoneInfo) -> Said:
    if type == "subscription.created":
        return ACTED, f"{capitalized(what)} started."
    if type == "subscription.renewed":
        return FIRED, f"{capitalized(what)} renewed."
    if type.startswith("subscription."):
        return ACTED, f"{capitalized(what)}: {type.split('.', 1)[1].replace('_', ' ')}."
    if type == "schedule.minted":
        return FIRED, f"The {plain(str(data.get('schedule') or ''))} work for {data.get('period')} started."
    if type.startswith("schedule."):
        return FIRED, (f"The {plain(str(data.get('schedule') or ''))} work for {data.get('period') or ''}: "
                       f"{plain(type.split('.', 1)[1].replace('_', ' '))}.")
    if type == "money.collected":
        amount = data.get("amount")
        money = f"{int(amount) / 100:,.2f} {str(data.get('currency') or '').upper()}" if amount is not None else ""
        return FIRED, f"Collected {money} for {plain(str(data.get('memo') or what))}."
    if type.startswith("subject."):
        return ACTED, f"{capitalized(plain(type.split('.', 1)[1].replace('.', ' ').replace('_', ' ')))} for {what}."
    return None


_SAYS = {"clock": _clock_words, "job": _job_event_words, "step": _people_words, "task": _people_words,
         "ask": _people_words, "grant": _people_words}


def send_status(row: Any) -> str:
    """A send's status: waiting to leave, being sent, sent, answered (the far end said so), in doubt (a try
    raised: the far end is asked before it is sent again), failed (refused), dead-lettered (given up after
    retries), voided (its test clock was deleted first)."""
    if row.status == Outbox.Status.SENT:
        receipt = row.receipt or {}
        return "answered" if isinstance(receipt, dict) and ("status" in receipt or "received" in receipt) else "sent"
    if row.status == Outbox.Status.FAILED:
        return "dead_lettered" if row.tries > 1 else "failed"
    if row.status == Outbox.Status.VOIDED:
        return "voided"
    if row.status == Outbox.Status.SENDING:
        return "in_doubt" if row.tries or row.error else "sending"
    return "waiting"


RESENDABLE = ("failed", "dead_lettered", "in_doubt")  # a send's statuses the owner may resend (services.resend)
STATUS_WORDS = {"waiting": "waiting to leave", "sending": "leaving now", "sent": "sent", "answered": "received",
                "in_doubt": "in doubt: the far end is asked before it is sent again", "failed": "failed",
                "dead_lettered": "given up after {tries} tries", "voided": "not sent: the test run was deleted"}


def send_words(row: Any, status: str) -> str:
    payload = row.payload if isinstance(row.payload, dict) else {}
    if row.transport == "email":
        to = sorted({a for m in payload.get("messages", []) for a in m.get("to", [])})
        what = f"Emailed {', '.join(to) or 'nobody'}"
    elif row.transport == "notices":
        what = f"A notice for {_who(payload.get('to'))} was sent"
    elif row.transport == "webhook":
        kind = str(payload.get("type") or "").replace(".", " ").replace("_", " ")
        what = f"The brand's webhook endpoint was sent the {plain(kind)} event"
    elif row.transport == "http":
        what = "The schedule's address was called"
    else:
        what = f"Sent to {plain(row.transport.replace('_', ' '))}"
    said = STATUS_WORDS.get(status, status).format(tries=row.tries)
    tried = f" (try {row.attempt})" if row.attempt > 1 else ""
    why = f": {plain(ID_PATTERN.sub('', row.error))[:120]}" if status in ("failed", "dead_lettered", "in_doubt") and row.error else ""
    return f"{what}{tried}: {said}{why}."


RUNG_WORDS = {"notice": "A reminder goes out", "escalate": "A warning goes out", "ack": "A request to confirm goes out",
              "run": "The next step starts"}


def armed_words(t: Timer, owners: _Owners) -> str:
    """What is armed ahead, in people's words."""
    data = t.data or {}
    what = _what(t.owner, data, owners)
    if t.kind == "rung":
        word = str(data.get("rung") or "").split(" ")[0]
        item = owners.items.get(t.owner)
        due = f", due {day(item.due_date)}" if item is not None else ""
        return f"{RUNG_WORDS.get(word, 'A reminder goes out')} for {what}{due}."
    if t.kind == "due":
        return f"{capitalized(what)} is due."
    if t.kind == "deadline":
        point = t.key.split(":")[2] if t.key.count(":") >= 2 else ""
        return f"{capitalized(what)} becomes at risk." if point == "at_risk" else f"{capitalized(what)} becomes late."
    if t.kind == "schedule":
        return f"The {plain(str(data.get('schedule') or 'next'))} work for {data.get('period') or 'the next period'} starts."
    if t.kind == "cycle":
        return f"{capitalized(what)} renews."
    if t.kind == "money":
        return f"A payment for {what} is collected."
    if t.kind == "task":
        if data.get("point") == "warn":  # three quarters into the hold (services/tasks.py)
            return f"A warning goes out that the hold on the work on {what} is ending."
        return f"A hold on the work on {what} ends."
    if t.kind == "ask":
        return f"The link for {what} expires."
    if t.kind == "window":
        return f"A window on {what} closes."
    return f"Something is set for {what}."
