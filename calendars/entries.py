"""What a subject's calendar lists: every date, kept and ahead, from a small registry of providers.

A provider is ``provider(subject, domain, from_date) -> Iterable[Entry]``: the built-in one lists the
subject's clocks (each item's due date, its rungs listed under it in ``Entry.rungs``: a rung is a date's
reminder or step, not a date of its own); a domain app registers its own for schedule runs,
cycles, links and grants with ``register(provider, inputs=…)`` (in its ``AppConfig.ready``). ``from_date``
is a hint (``None`` asks for everything); ``subject_calendar`` filters and sorts whatever providers yield.

A provider's ``inputs(subject, domain)`` names everything it reads: querysets (their rows, as they are in
the database) and plain values (strings). The feed's change stamp (calendars/feed_stamp.py) digests them,
so a provider's inputs must cover every row and column it reads. A provider registered without inputs
is still listed, but then the feed cannot tell it is unchanged without building it, and builds every time.

Dates are local dates in the subject calendar's zone; instants are UTC. An entry's ``uid`` names what the
date *is* (a clock item and its kind, a rung's key without its ``@move``), never the date, so a moved date
keeps its uid and counts the move in ``sequence``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cache
from urllib.parse import quote

from django.db.models import Case, CharField, F, QuerySet, TextField, Value, When
from django.db.models.functions import Cast, Concat

from timers.domains import domain_now
from timers.keys import format_key
from timers.keys import parse as parse_key
from timers.models import Event, TestClock, Timer, brand_domain, is_live

from . import words
from .civil import split_whose
from .closed_days import business_calendar
from .models import ClockItem, Subject

UID_DOMAIN = "keeping-time"


@dataclass(frozen=True)
class Entry:
    date: date  # the local date, in the subject calendar's zone
    at: datetime  # the instant (UTC): a due's closing minute, a rung's ring time
    what: str
    kind: str  # hard | clock | rung | schedule | cycle …
    answers_for: str
    status: str
    uid: str  # stable: what the date is, never when
    sequence: int = 0  # how many times the date moved
    stamp: datetime | None = None  # the date's last change, in domain time (the feed's DTSTAMP)
    on: str = ""  # its owner: clk_…#US, job_…, sbn_…
    step: str = ""  # a rung's kind: notice | escalate | ack | run
    current: bool = True  # False: a rung that fired before its date moved, kept as history
    rungs: tuple[Entry, ...] = ()  # a date's reminders and steps, in ring order (shown with --rungs)
    rung: str = ""  # a rung's text: notice 90d, ack daily 7d, run tentative 3d
    day: int = 0  # an ack chain's day, of ``days`` (0: not an ack)
    days: int = 0
    plain: str = ""  # what the customer reads (the feed's summary), where ``what`` is the runtime's; "": what
    plain_status: str = ""  # its status as the customer reads it; "": words.status(status)
    moved_why: str = ""  # a date that moved: its last move, from when to when and why (the record's clock.moved)

    def sort_key(self) -> tuple:
        return (self.at, self.kind, self.what, self.uid)  # the uid last: the order never depends on the database


Provider = Callable[[Subject, str, date | None], Iterable[Entry]]
# What a provider reads for a subject on a domain: querysets (digested row by row) and plain values.
Inputs = Callable[[Subject, str], Iterable[QuerySet | str]]
_providers: list[Provider] = []
_inputs: dict[Provider, Inputs] = {}


def register(provider: Provider, *, inputs: Inputs | None = None) -> Provider:
    """Add a provider (idempotent), with what it reads (``inputs``) when the feed's stamp may skip it."""
    if provider not in _providers:
        _providers.append(provider)
    if inputs is not None:
        _inputs[provider] = inputs
    return provider


def unregister(provider: Provider) -> None:
    if provider in _providers:
        _providers.remove(provider)
    _inputs.pop(provider, None)


def providers() -> tuple[Provider, ...]:
    return tuple(_providers)


def provider_inputs(subject: Subject, domain: str) -> list[QuerySet | str] | None:
    """Everything every provider reads for the subject on the domain, or None when a provider did not say
    (then nothing short of building the calendar tells whether it changed)."""
    out: list[QuerySet | str] = []
    for provider in _providers:
        inputs = _inputs.get(provider)
        if inputs is None:
            return None
        out.append(f"provider {provider.__module__}.{provider.__qualname__}")
        out.extend(inputs(subject, domain))
    return out


def uid_for(text: str) -> str:
    """A UID from what a date is (a key without its @move): percent-encoded so it stays one plain token."""
    return f"{quote(text, safe='#:_.-~')}@{UID_DOMAIN}"


@dataclass
class SubjectCalendar:
    subject: Subject
    domain: str
    zone: str
    now: datetime
    today: date
    from_date: date | None
    entries: list[Entry] = field(default_factory=list)

    @property
    def test_clock(self) -> str | None:
        return None if is_live(self.domain) else self.domain


def subject_calendar(subject: Subject, *, domain: str | None = None, from_date: date | None = None,
                     everything: bool = False) -> SubjectCalendar:
    """The subject's dates on a clock domain (default: the subject's own), each dated on or after
    ``from_date`` (default: the domain's today in the calendar's zone; ``everything`` lists all)."""
    domain = domain or brand_domain(subject.domain, subject.brand_id)
    cal = business_calendar(subject)
    now = domain_now(domain=domain)
    today = cal.today(now)
    since = None if everything else (from_date or today)
    found: dict[str, Entry] = {}
    for provider in _providers:
        for entry in provider(subject, domain, since):
            if since is not None and entry.date < since:
                continue
            found.setdefault(entry.uid, entry)  # a uid is listed once, whichever provider names it first
    entries = sorted(found.values(), key=Entry.sort_key)
    return SubjectCalendar(subject=subject, domain=domain, zone=cal.zone_name, now=now, today=today,
                           from_date=since, entries=entries)


# -- the built-in provider: clocks ------------------------------------------------------------------------
def clock_what(item: ClockItem) -> str:
    """What the calendar calls an item: the clock's title with its period, and the item: file the 2027
    return · US-CA."""
    clock = item.clock
    title = (clock.title or clock.name).replace("{period}", clock.period).replace("{item}", item.item)
    return f"{title} · {item.item}" if item.item and "{item}" not in (clock.title or "") else title


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def rolled_text(civil: date, rolled_why: str) -> str:
    """Why a date rolled, as the seed says it, and whose closed day it was: "rolled from Saturday 2028-04-15:
    Emancipation Day (observed) on Monday 04-17, on the US federal calendar" (the closed day that pushed it
    last); a weekend alone: "rolled from Sunday 2028-10-15: a weekend, on the apis.tax calendar"."""
    text = f"rolled from {WEEKDAYS[civil.weekday()]} {civil.isoformat()}"
    last = rolled_why.rsplit("; ", 1)[-1] if rolled_why else ""
    day, _, reason = last.partition(": ")
    if not reason:
        return text
    what, whose = split_whose(reason)
    parts = day.split()
    when = date.fromisoformat(parts[-1]) if parts else civil
    if when == civil or what == "a weekend":
        return f"{text}: {reason}"
    return f"{text}: {what} on {WEEKDAYS[when.weekday()]} {when:%m-%d}{whose}"


def moved_text(data: dict) -> str:
    """Why a date moved, from its clock.moved: "moved from Tue 18 Apr 2028 to Mon 16 Oct 2028: a postponement
    (notice IR-2028-01)", "…: the extension (its tentative step)", "…: the office's closed days changed"."""
    frm, to = data.get("from"), data.get("to")
    span = (f"moved from {words.day(date.fromisoformat(frm))} to {words.day(date.fromisoformat(to))}"
            if frm and to else "moved")
    by = data.get("by", "")
    if data.get("notice"):
        why = f"a postponement (notice {data['notice']})"
    elif by == "calendar":
        why = f"the calendar changed ({data['calendar']})" if data.get("calendar") else "the calendar changed"
    elif by == "due":
        why = "what the date is figured from changed"
    elif data.get("step"):
        why = f"{words.plain(by)} (its {data['step']} step)"
    else:
        why = words.plain(by) if by else ""
    return f"{span}: {why}" if why else span


def _hints(item: ClockItem) -> str:
    hints = []
    if item.moved:
        hints.append(f"moved {item.moved}×")
    if item.due_date != item.civil:
        hints.append(rolled_text(item.civil, item.rolled_why))
    return "".join(f", {h}" for h in hints)


def _due_status(item: ClockItem, cal, today: date, kept_with: str = "") -> str:
    s = ClockItem.Status
    if item.status == s.SATISFIED:
        kept = cal.today(item.satisfied_at) if item.satisfied_at else None
        with_ = f", {kept_with}" if kept_with else ""
        return (f"kept {kept.isoformat()}" if kept else "kept") + with_ + _hints(item)
    if item.status == s.DUE:
        status = "came unsatisfied"
    elif item.status == s.PASSED:
        status = "passed"
    elif item.due_date == today:
        status = "due today"
    elif item.due_date > today:
        status = "ahead"
    else:
        status = "open"  # the date has come and the tick has not yet reached it
    return status + _hints(item)


# What a fired rung did, from what it recorded under its key (first match wins).
_RUNG_OUTCOMES = ("clock.rung_ran", "gate.refused", "clock.notice", "clock.escalate", "clock.ack_requested")


def _fired_status(events: list[tuple[str, dict]]) -> str | None:
    """"sent", "asked", "ran tentative → moved", "refused date_passed"; None when it did nothing (the
    clock was no longer open, or a later notice owed by then was sent instead): such a rung is not listed."""
    by_type = {}
    for type_, data in events:
        by_type.setdefault(type_, data)
    for type_ in _RUNG_OUTCOMES:
        if type_ not in by_type:
            continue
        data = by_type[type_] or {}
        if type_ == "clock.rung_ran":
            step = data.get("step") or "its step"
            return f"ran {step} → {data.get('outcome') or 'committed'}"
        if type_ == "gate.refused":
            return f"refused {data.get('code', '')}".strip()
        if type_ == "clock.ack_requested":
            return "asked"
        return "sent"
    return None


def clock_entries(subject: Subject, domain: str, from_date: date | None) -> Iterable[Entry]:
    """Each clock item's due date (hard or clock), with each of its rungs still armed or already fired
    listed under it (``Entry.rungs``)."""
    items = list(ClockItem.objects.filter(clock__subject=subject, clock__domain=domain)
                 .exclude(status=ClockItem.Status.VOIDED).select_related("clock"))
    if not items:
        return []
    cal = business_calendar(subject)
    today = cal.today(domain_now(domain=domain))
    dates: dict[str, Entry] = {}
    by_owner: dict[str, ClockItem] = {}
    whats: dict[str, str] = {}
    # How a kept date was kept, when a move of a sibling kept it ("with the extension"): on the record.
    kept_with = dict(Event.objects.filter(
        domain=domain, type="clock.satisfied", data__has_key="with",
        subject__in=[i.owner_key for i in items if i.status == ClockItem.Status.SATISFIED],
    ).values_list("subject", "data__with")) if any(i.status == ClockItem.Status.SATISFIED for i in items) else {}
    # Why a moved date moved: its last clock.moved on the record (one read, for the dates that moved).
    moved_why: dict[str, str] = {}
    if any(i.moved for i in items):
        for owner_key, data in (Event.objects.filter(domain=domain, type="clock.moved",
                                                     subject__in=[i.owner_key for i in items if i.moved])
                                .order_by("seq").values_list("subject", "data")):
            moved_why[owner_key] = moved_text(data or {})
    for item in items:
        clock = item.clock
        owner = item.owner_key
        by_owner[owner] = item
        whats[owner] = what = clock_what(item)
        dates[owner] = Entry(
            date=item.due_date, at=item.due_at, what=what, kind="hard" if clock.hard else "clock",
            answers_for=clock.answers_for, status=_due_status(item, cal, today, kept_with.get(owner, "")),
            uid=uid_for(format_key(owner, "due", clock.name, clock.period)), sequence=item.moves,
            stamp=item.changed_at, on=owner, moved_why=moved_why.get(owner, ""),
        )
    rungs: dict[str, list[Entry]] = {}
    for rung in _rung_entries(domain, by_owner, whats, cal):
        rungs.setdefault(rung.on, []).append(rung)
    return [replace(entry, rungs=tuple(sorted(rungs.get(owner, ()), key=Entry.sort_key)))
            for owner, entry in dates.items()]


def _rung_kind(name: str) -> str:
    """notice 90d → notice; ack daily 7d → ack; run tentative 3d → run."""
    return name.split(" ", 1)[0]


def _rung_entries(domain: str, by_owner: dict[str, ClockItem], whats: dict[str, str], cal) -> list[Entry]:
    timers = list(Timer.objects.filter(domain=domain, owner__in=list(by_owner), kind="rung",
                                       status__in=[Timer.Status.ARMED, Timer.Status.FIRED])
                  .only("key", "owner", "status", "owed_at", "armed_at", "fired_at", "data"))
    fired_keys = [t.key for t in timers if t.status == Timer.Status.FIRED]
    events: dict[str, list[tuple[str, dict]]] = {}
    if fired_keys:
        rows = (Event.objects.filter(domain=domain, key__in=fired_keys).order_by("seq")
                .values_list("key", "type", "data"))
        for key, type_, data in rows:
            events.setdefault(key, []).append((type_, data))
    # A rung's group is its key without @move: the newest of the group is the date (its uid is the group),
    # an older one that fired before the date moved is kept as history under its whole key.
    groups: dict[str, list[tuple[Timer, object, str]]] = {}
    for t in timers:
        status = "armed"
        if t.status == Timer.Status.FIRED:
            status = _fired_status(events.get(t.key, []))
            if status is None:
                continue
        k = parse_key(t.key)
        groups.setdefault(format_key(k.owner, k.kind, k.name, k.occurrence), []).append((t, k, status))
    out = []
    for group, members in groups.items():
        members.sort(key=lambda m: -1 if m[1].move is None else m[1].move)
        for i, (t, k, status) in enumerate(members):
            item = by_owner[t.owner]
            newest = i == len(members) - 1
            at = t.owed_at or t.fired_at
            what = k.name
            if "day" in t.data and "days" in t.data:
                what = f"{k.name}, day {t.data['day']} of {t.data['days']}"
            last = t.fired_at if t.status == Timer.Status.FIRED else t.armed_at
            if newest:
                stamp = max(d for d in (item.changed_at, last) if d is not None)
                uid, sequence = uid_for(group), item.moves
            else:
                stamp, uid, sequence = last, uid_for(t.key), k.move or 0
            out.append(Entry(
                date=cal.today(at), at=at, what=f"{what} · {whats[t.owner]}", kind="rung",
                answers_for=item.clock.answers_for, status=status, uid=uid, sequence=sequence, stamp=stamp,
                on=t.owner, step=_rung_kind(k.name), current=newest, rung=k.name,
                day=int(t.data.get("day") or 0), days=int(t.data.get("days") or 0),
            ))
    return out


def item_owner_keys(subject: Subject, domain: str) -> QuerySet:
    """The owner keys of the subject's clock items (``ClockItem.owner_key`` in SQL): what their timers and
    events are filed under."""
    return (ClockItem.objects.filter(clock__subject=subject, clock__domain=domain).order_by()
            .annotate(owner_key=Case(When(item="", then=F("clock_id")),
                                     default=Concat("clock_id", Value("#"), "item"), output_field=CharField()))
            .values("owner_key"))


def clock_inputs(subject: Subject, domain: str) -> list[QuerySet]:
    """What ``clock_entries`` reads, as a superset: every item (voided too) with its clock's columns, every
    timer of every item (any kind, any status), and the record's rows under those timers' keys and the
    items' clock.satisfied and clock.moved rows (how a kept date was kept, why a moved one moved); and what the feed names besides (calendars/feed.py
    ``feed_names``): the brand's name and the test clock's."""
    owners = item_owner_keys(subject, domain)
    timers = Timer.objects.filter(domain=domain, owner__in=owners).order_by()
    return [
        ClockItem.objects.filter(clock__subject=subject, clock__domain=domain).order_by().values_list(
            "id", "clock_id", "item", "civil", "due_date", "due_at", "rolled_why", "moves", "status",
            "satisfied_at", "changed_at", "clock__title", "clock__name", "clock__period", "clock__hard",
            "clock__answers_for"),
        timers.values_list("key", "kind", "status", "owed_at", "armed_at", "fired_at",
                           Cast("data", output_field=TextField())),
        # The record is append-only, yet its rows are digested whole: the stamp does not lean on that.
        Event.objects.filter(domain=domain, key__in=timers.values("key")).order_by()
        .values_list("seq", "type", Cast("data", output_field=TextField())),
        Event.objects.filter(domain=domain, type__in=["clock.satisfied", "clock.moved"], subject__in=owners)
        .order_by().values_list("seq", Cast("data", output_field=TextField())),
        # By the subject's id, not its brand's: the stamp's statement is compiled once per shape (feed_stamp).
        Subject.objects.filter(pk=subject.pk).order_by().values_list("brand__name"),
        TestClock.objects.filter(pk=domain).order_by().values_list("name"),
        words_digest(),
    ]


@cache
def words_digest() -> str:
    """The words module's source: the feed says its words, so new words change the feed's stamp."""
    return "words " + hashlib.sha256(inspect.getsource(words).encode()).hexdigest()


register(clock_entries, inputs=clock_inputs)
