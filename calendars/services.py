"""Clocks: open, move, satisfy, step through the gate; calendar edits and postponements.

Every write goes through an Armer, which is either the firing in hand (inside the tick, so the gate
commits it) or the domain directly (a call from the API, the console or a command, outside the tick).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from timers import batch as batches
from timers.armer import Armer, DirectArmer
from timers.domains import domain_id
from timers.engine import Firing
from timers.errors import KeepingTimeError, Refused, TestClockDeleted
from timers.models import Brand, Outbox
from timers.rearm import Rearm
from timers.rows import insert, read
from timers.timeutil import iso_z

from . import specs
from .civil import BusinessCalendar, local_instant
from .models import Calendar, Clock, ClockItem, ClosedDay, Subject
from .offsets import Rung
from .specs import ClockSpec, DueInput

RUNG_HANDLER = "calendars.rung"
DUE_HANDLER = "calendars.due"
MOVING_RUNGS = ("notice", "escalate", "ack")


# -- keys --------------------------------------------------------------------------------------------
def rung_key(item: ClockItem, rung: Rung, *, move: int, day: int | None = None) -> str:
    period = item.clock.period
    if rung.kind == "run":
        return f"{item.owner_key}:rung:{rung.text}:{period}"  # no @move: a move never arms a second run
    occurrence = period if day is None else f"{period} day {day}"
    return f"{item.owner_key}:rung:{rung.text}:{occurrence}@{move}"


def due_key(item: ClockItem, *, move: int) -> str:
    return f"{item.owner_key}:due:{item.clock.name}:{item.clock.period}@{move}"


# -- calendars ---------------------------------------------------------------------------------------
_calendars: dict[tuple, BusinessCalendar] = {}


def _closed_days(calendar_id: str) -> tuple:
    b = batches.current()
    if b is None:
        return tuple(sorted(ClosedDay.objects.filter(calendar_id=calendar_id).values_list("date", "why")))
    # Once a batch for each calendar (a closed day added since is a write, which drops the cache).
    cache = b.cache("calendars.closed", tables=("calendars_closedday",))
    found = cache.get(calendar_id)
    if found is None:
        with b.quiet():
            found = cache[calendar_id] = tuple(sorted(
                ClosedDay.objects.filter(calendar_id=calendar_id).values_list("date", "why")))
    return found


def calendars_token(domain: str) -> tuple:
    """The calendars of the brand whose test clock ``domain`` is, as they are now: an advance keeps its clock
    items (with their calendars) from batch to batch only while this holds (timers.batch.on_carry_check). A
    brand's calendar is not the clock's object, so the clock's refusal of outside writes does not cover it."""
    from timers.models import TestClock

    brand = TestClock.objects.filter(pk=domain).values("brand_id")
    return tuple(Calendar.objects.filter(brand_id__in=brand).order_by("id").values_list(
        "id", "zone", "weekends", "closes", "holiday_country", "holiday_subdiv"))


def business_calendar(subject: Subject) -> BusinessCalendar:
    """The subject's calendar, cached by everything that decides it (an edit makes a new entry)."""
    cal = subject.calendar
    if cal is None:
        return subject.business_calendar()
    closed = _closed_days(cal.id)
    sig = (cal.id, cal.zone, tuple(cal.weekends), cal.closes, cal.holiday_country, cal.holiday_subdiv, closed)
    found = _calendars.get(sig)
    if found is None:
        if len(_calendars) > 256:
            _calendars.clear()
        found = _calendars[sig] = cal.civil()
    return found


def _inputs(clock: Clock, item: str, due: date | None = None) -> DueInput:
    return DueInput(input=clock.inputs, keeps=clock.subject.keeps, period=clock.period, item=item, due=due)


# -- clocks ------------------------------------------------------------------------------------------
@dataclass
class Dated:
    civil: date
    due_date: date
    due_at: datetime
    why: str
    reason: str


def _date(cal: BusinessCalendar, civil: date) -> Dated:
    rolled = cal.roll(civil)
    return Dated(civil, rolled.date, cal.close_of(rolled.date), rolled.why, rolled.reason)


# The batch's clock items (timers/batch.py): each with its clock, subject and calendar, by (clock id, item).
ITEMS = "calendars.items"
ITEM_TABLES = ("calendars_clockitem", "calendars_clock", "calendars_subject", "calendars_calendar")
SUBJECT_CLOCKS = "calendars.subject_clocks"  # a subject's clocks that live on it: (spec, version, owner_ref)
ITEM_NAMES = "calendars.item_names"  # a clock's items' names, by clock id
OWNER_CLOCKS = "calendars.owner_clocks"  # an owner's clocks (id, name, period), by owner_ref


def item_pks(item: ClockItem, table: str) -> tuple:
    if table == "calendars_clockitem":
        return (item.pk,)
    if table == "calendars_clock":
        return (item.clock_id,)
    clock = item.clock
    return (clock.subject_id,) if table == "calendars_subject" else (clock.subject.calendar_id,)


def load_items(wanted: set) -> dict:
    # The items asked for (a superset: the clocks' items of the names asked for); a clock asked for by the
    # item "" (no clock's item is named so but a single-item clock's) comes whole, with its items' names.
    clocks = {c for c, _ in wanted}
    whole = {c for c, i in wanted if i == ""}
    rows = ClockItem.objects.filter(clock_id__in=clocks)
    if len(whole) < len(clocks):
        rows = rows.filter(Q(clock_id__in=whole) | Q(item__in={i for _, i in wanted}))
    rows = read(rows.order_by("clock_id", "item"), related=("clock",))
    # Each subject (with its calendar) once, shared by its clocks' items: a handler gets its own copy anyway.
    subjects = {s.pk: s for s in read(Subject.objects.filter(pk__in={r.clock.subject_id for r in rows}),
                                      related=("calendar",))}
    for r in rows:
        r.clock._state.fields_cache["subject"] = subjects[r.clock.subject_id]
    found = {(r.clock_id, r.item): r for r in rows}
    b = batches.current()
    if b is not None:
        # A clock's items are made all at once when it opens (clock_open) and never added to: their names, in
        # the database's order, hold for the batch whatever is written since.
        names = b.cache(ITEM_NAMES, tables=(), carry=True)
        for c in whole:
            names[c] = []
        for c, name in found:
            if c in whole:
                names[c].append(name)
    return found


def _item_of(timer) -> tuple[str, str]:
    return timer.data["clock"], timer.data.get("item", "")


def batch_item(f: Firing, key: tuple[str, str], *, read_ahead: bool = True) -> ClockItem | None:
    """The clock item (clock id, item) with its clock, subject and calendar, from the batch (read ahead for
    the batch's rungs and dues; a sibling of the firing's item, ``read_ahead=False``, is read alone)."""
    return batches.row(f, key, name=ITEMS, load=load_items, ahead=(RUNG_HANDLER, DUE_HANDLER), key_of=_item_of,
                       tables=ITEM_TABLES, pk=item_pks, read_ahead=read_ahead, carry=True)


def _owner_clocks(f: Firing, owner_ref: str) -> list[tuple[str, str, str]]:
    """An owner's clocks (id, name, period) by name, from the batch. A job opens its clocks all at once
    (job_open) and none later, so the list holds for the batch whatever is written since."""
    b = batches.current()
    cache = b.cache(OWNER_CLOCKS, tables=(), carry=True)
    if owner_ref not in cache:
        refs = {owner_ref} | {r for t in f.holding((RUNG_HANDLER,)) if (r := (t.data or {}).get("of"))
                              and r not in cache}
        with b.quiet():
            rows = (Clock.objects.filter(domain=f.domain, owner_ref__in=refs).order_by("name")
                    .values_list("owner_ref", "id", "name", "period"))
            for r in refs:
                cache[r] = []
            for ref, *clock in rows:
                cache[ref].append(tuple(clock))
            # A move keeps its siblings' items (_keep_with): those of these owners' clocks, read with them.
            items = b.cache(ITEMS, tables=ITEM_TABLES, pk=item_pks, carry=True)
            clocks = {(cid, "") for r in refs for cid, _, _ in cache[r]}
            items.fill(set(), lambda _: load_items(clocks) if clocks else {})
    return cache[owner_ref]


def subject_clocks(*, domain: str, subject_id: str, ahead: Callable[[], set[str]]) -> list[tuple] | None:
    """The clocks that live on a subject (spec, version, owner_ref), in a batch that keeps writes: read once
    for the subject and those ``ahead`` names, and kept current by clock_open; None outside one."""
    b = batches.current()
    if b is None or not b.keep_writes:
        return None
    cache = b.cache(SUBJECT_CLOCKS, tables=("calendars_clock",), carry=True)  # any other write to clocks drops it
    if subject_id not in cache:
        subjects = {subject_id} if cache.loaded else {subject_id} | ahead()
        cache.loaded = True
        with b.quiet():
            rows = Clock.objects.filter(domain=domain, lives_on=Clock.LivesOn.SUBJECT, subject_id__in=subjects)
            found = list(rows.values_list("subject_id", "spec", "version", "owner_ref"))
        for s in subjects:
            cache[s] = []
        for s, *clock in found:
            cache[s].append(tuple(clock))
    return cache[subject_id]


def _opened_in_batch(clock: Clock, items: list[ClockItem]) -> None:
    # What a batch's later reads would ask the database for, they find: the new items, and the subject's clocks.
    b = batches.current()
    if b is None or not b.keep_writes:
        return
    cache = b.cache(ITEMS, tables=ITEM_TABLES, pk=item_pks, carry=True)
    for item in items:
        copy = cache[(clock.id, item.item)] = batches.clone(item)
        copy._state.adding = copy.clock._state.adding = False  # rows now (the clock's is kept): saved by update
    owners = b.caches.get(OWNER_CLOCKS)
    if owners is not None:
        owners.pop(clock.owner_ref, None)  # read again, with this clock, if asked
    lives = b.caches.get(SUBJECT_CLOCKS)
    if lives is not None and clock.lives_on == Clock.LivesOn.SUBJECT and clock.subject_id in lives:
        lives[clock.subject_id].append((clock.spec, clock.version, clock.owner_ref))


def clock_open(*, armer: Armer, brand: Brand | str, domain: str, subject: Subject, spec_name: str,
               owner_ref: str, period: str, inputs: dict | None = None, title: str = "", version: str = "",
               answers_for: str | None = None, opened_at: datetime | None = None,
               clock_id: str | None = None) -> Clock | None:
    """Open a clock: each item's date from its due function, rolled, and its rungs and due timer armed.

    Inside the tick pass a ``clock_id`` derived from what the clock is, so a replay makes the same ids. A
    clock whose items function names no item this time (a carryforward the period did not make) opens
    nothing: None.
    """
    spec = specs.get(spec_name)
    clock = Clock(
        # Derived from the domain's seed and what the clock is, so the same scenario makes the same ids.
        id=clock_id or domain_id("clk", domain, owner_ref, spec_name, period, length=8),
        brand_id=brand if isinstance(brand, str) else brand.id, domain=domain, subject=subject, spec=spec_name,
        name=spec.name, title=title or spec.title or spec.name, lives_on=spec.lives_on, owner_ref=owner_ref,
        period=period, hard=spec.hard, answers_for=answers_for or spec.answers_for, guarantee=spec.guarantee,
        version=version, inputs=inputs or {}, opened_at=opened_at or armer.now,
    )
    names = spec.items_for(_inputs(clock, ""))
    if not names:
        return None
    batches.create(clock, kept_by=(SUBJECT_CLOCKS,))  # its id is new: the job that opens it is
    cal = business_calendar(subject)
    items = []
    for name in names:
        d = _date(cal, spec.due(_inputs(clock, name)))
        items.append(ClockItem(clock=clock, item=name, civil=d.civil, due_date=d.due_date, due_at=d.due_at,
                               rolled_why=d.why, changed_at=armer.now))
        if d.due_date != d.civil:
            armer.record("clock.rolled", subject=f"{clock.id}#{name}" if name else clock.id,
                         data={"clock": clock.name, "item": name, "from": d.civil.isoformat(),
                               "to": d.due_date.isoformat(), "why": d.reason, "skipped": d.why})
    keys = batches.new_keys(ClockItem, len(items))
    if keys is None:
        with batches.fresh(ITEMS):  # a new clock's items: no key the batch asked for is among them
            insert(items)
    else:  # numbered now, and kept with the clock
        for item, key in zip(items, keys, strict=True):
            item.pk = key
            batches.create(item, kept_by=(ITEMS,))
    for item in items:
        item.clock = clock
        armer.made(item.owner_key)  # a new clock's: its timers are all armed here
        _arm_item(armer, item, spec, cal, move=0)
    _opened_in_batch(clock, items)
    clock.opened_items = items  # what its opener may read without asking the database again (job_open)
    return clock


def _arm_item(armer: Armer, item: ClockItem, spec: ClockSpec, cal: BusinessCalendar, *, move: int,
              supersede_prev: bool = False, include_run: bool = True, by: Rearm = Rearm.CLOCK_MOVED,
              prev_due: date | None = None) -> None:
    """Arm an item's rungs and due timer at ``move``; after a move (``supersede_prev``), the previous move's
    are superseded and the run rung retimed, each naming ``by``, the cause of the move."""
    opened, version = item.clock.opened_at, item.clock.version
    data = {"clock": item.clock_id, "item": item.item, "move": move, "of": item.clock.owner_ref}
    follows = spec.leader(_inputs(item.clock, item.item))
    for rung in spec.parsed_rungs:
        if rung.kind == "run":
            if follows:
                continue  # it moves when its leader's run moves it, never on its own
            key = rung_key(item, rung, move=move)
            owed = cal.at(rung.day(item.due_date), spec.at)
            if include_run:
                armer.arm(key, owed_at=owed, handler=RUNG_HANDLER, data={**data, "rung": rung.text}, opened_at=opened,
                          version=version)
            else:
                armer.retime(key, owed_at=owed, by=by)
            continue
        if rung.kind == "ack":
            first = rung.day(item.due_date)
            key = rung_key(item, rung, move=move, day=1)
            armer.arm(key, owed_at=cal.at(first, spec.at), handler=RUNG_HANDLER,
                      data={**data, "rung": rung.text, "day": 1, "days": (item.due_date - first).days},
                      opened_at=opened, version=version)
            if supersede_prev:
                # The old chain's days are counted back from the date it ran to, before the move.
                _supersede_acks(armer, item, rung, move - 1, key, by=by, due=prev_due or item.due_date)
            continue
        key = rung_key(item, rung, move=move)
        owed = cal.at(rung.day(item.due_date), spec.at)
        if supersede_prev:
            prev = rung_key(item, rung, move=move - 1)
            if owed <= armer.now and not _still_ahead(armer, prev):
                # It rang for the old date (or was passed over) and its time for the new one is past too:
                # arming it again would send the same notice late. Only what is still ahead moves.
                continue
        armer.arm(key, owed_at=owed, handler=RUNG_HANDLER, data={**data, "rung": rung.text}, opened_at=opened,
                  version=version)
        if supersede_prev:
            armer.supersede(prev, by=by, successor=key)
    key = due_key(item, move=move)
    armer.arm(key, owed_at=item.due_at + timedelta(minutes=1), handler=DUE_HANDLER, data=data, opened_at=opened,
              version=version)
    if supersede_prev:
        armer.supersede(due_key(item, move=move - 1), by=by, successor=key)


def _still_ahead(armer: Armer, key: str) -> bool:
    state = armer.state(key)
    return state is not None and state[0] in ("armed", "held")


def _ack_keys(item: ClockItem, rung: Rung, move: int, *, due: date) -> list[str]:
    """Every day's key of an ``ack daily`` rung whose chain ran up to ``due`` (the chain arms them one day
    at a time): as many days as lie between its first day and the date, so ``ack daily 1mo`` has 28 to 31."""
    days = (due - rung.day(due)).days
    return [rung_key(item, rung, move=move, day=day) for day in range(1, max(1, days) + 1)]


def _supersede_acks(armer: Armer, item: ClockItem, rung: Rung, move: int, successor: str, *, by: Rearm,
                    due: date) -> None:
    for key in _ack_keys(item, rung, move, due=due):
        armer.supersede(key, by=by, successor=successor)


def clock_move(*, armer: Armer, item: ClockItem, civil: date, by: str, cause: dict | None = None,
               rearm: Rearm = Rearm.CLOCK_MOVED) -> ClockItem:
    """Move one item's date: each notice/escalate/ack/due timer still ahead is superseded and its successor
    armed at @n+1; the run rung keeps its key (retimed if it has not rung)."""
    clock = item.clock
    spec = specs.get(clock.spec)
    cal = business_calendar(clock.subject)
    d = _date(cal, civil)
    before = (item.due_date, item.moves)
    if d.due_date == item.due_date and d.civil == item.civil:
        return item
    item.civil, item.due_date, item.due_at, item.rolled_why = d.civil, d.due_date, d.due_at, d.why
    item.moves += 1
    item.changed_at = armer.now
    if item.status in (ClockItem.Status.DUE, ClockItem.Status.PASSED) and d.due_at > armer.now:
        item.status = ClockItem.Status.OPEN
    batches.save(item, fields=["civil", "due_date", "due_at", "rolled_why", "moves", "changed_at", "status"])
    subject = item.owner_key
    data = {"clock": clock.name, "item": item.item, "by": by, "from": before[0].isoformat(),
            "to": d.due_date.isoformat(), "move": item.moves, **(cause or {})}
    if d.due_date != d.civil:
        data["rolled_from"] = d.civil.isoformat()
        data["why"] = d.reason
    armer.record("clock.moved", subject=subject, data=data)
    if d.due_date != d.civil:
        armer.record("clock.rolled", subject=subject, data={"clock": clock.name, "item": item.item,
                                                           "from": d.civil.isoformat(), "to": d.due_date.isoformat(),
                                                           "why": d.reason, "skipped": d.why})
    if item.status == ClockItem.Status.OPEN:
        _arm_item(armer, item, spec, cal, move=item.moves, supersede_prev=True, include_run=False, by=rearm,
                  prev_due=before[0])
    for hook in _moved_hooks:  # what follows the date (a job deadline written '5d before file') moves with it
        hook(armer, item)
    return item


# Called after a clock item's date moved, with the armer of the move (domain apps register: calendars
# knows nothing of jobs).
_moved_hooks: list[Callable[[Armer, ClockItem], None]] = []


def on_clock_moved(fn: Callable[[Armer, ClockItem], None]) -> None:
    if fn not in _moved_hooks:
        _moved_hooks.append(fn)


# Called when a clock's date lapses (clock.due: it came unsatisfied; clock.passed: a hard date passed) with
# the armer of the lapse, the item, the kind, who hears it and what they are told. Inside the tick the
# armer is the firing's, so what a hook writes is part of its proposal (domain apps register: calendars
# knows nothing of notifications).
_lapse_hooks: list[Callable[[Armer, ClockItem, str, list[str], str], None]] = []


def on_clock_lapsed(fn: Callable[[Armer, ClockItem, str, list[str], str], None]) -> None:
    if fn not in _lapse_hooks:
        _lapse_hooks.append(fn)


def lapse_hears(clock: Clock) -> list[str]:
    """Who hears a clock's lapse: who answers for it, then the brand's owner (the owner console)."""
    return list(dict.fromkeys(name for name in (clock.answers_for, "owner") if name))


def clock_lapsed(*, armer: Armer, item: ClockItem, kind: str, hears: list[str], message: str) -> None:
    for hook in _lapse_hooks:
        hook(armer, item, kind, hears, message)


def clock_satisfy(*, armer: Armer, item: ClockItem, by: str = "", kept_with: str = "",
                  judged_at: datetime | None = None, judged_by: str = "") -> ClockItem:
    """Mark the date kept: a satisfied clock arms nothing further, and what it had armed is superseded.
    On time is judged at ``judged_at`` (an outside receipt's time, ``judged_by`` says which), else now."""
    if item.status == ClockItem.Status.SATISFIED:
        return item
    if item.status == ClockItem.Status.VOIDED:
        raise KeepingTimeError(f"{item.owner_key} was voided with its job", code="clock_item_voided", status=409)
    clock = item.clock
    spec = specs.get(clock.spec)
    item.status, item.satisfied_at, item.changed_at = ClockItem.Status.SATISFIED, armer.now, armer.now
    batches.save(item, fields=["status", "satisfied_at", "changed_at"])
    armer.supersede_all(_item_keys(item, spec), by="clock.satisfied")
    on_time = business_calendar(clock.subject).on_time(judged_at or armer.now, item.due_date)
    judged = {"judged_by": judged_by, "judged_at": iso_z(judged_at)} if judged_at else {}
    armer.record("clock.satisfied", subject=item.owner_key,
                 data={"clock": clock.name, "item": item.item, "due": item.due_date.isoformat(),
                       "on_time": on_time, "by": by, **({"with": kept_with} if kept_with else {}), **judged})
    return item


def _item_keys(item: ClockItem, spec: ClockSpec) -> list[str]:
    keys = [due_key(item, move=item.moves)]
    for rung in spec.parsed_rungs:
        if rung.kind == "ack":
            keys += _ack_keys(item, rung, item.moves, due=item.due_date)
        else:
            keys.append(rung_key(item, rung, move=item.moves))
    return keys


def clock_step(*, armer: Armer, item: ClockItem, step: str, proposed_at: datetime | None = None) -> str:
    """A step a clock bars or moves, through the gate: refused date_passed once a hard date has passed."""
    clock = item.clock
    spec = specs.get(clock.spec)
    cal = business_calendar(clock.subject)
    # One already in the gate is judged by when it was proposed; one waiting on a person, when it commits.
    when = proposed_at or armer.now
    if clock.hard and not cal.on_time(when, item.due_date):
        raise Refused("date_passed", f"{clock.name} {item.item or ''} passed on {item.due_date}".strip(),
                      {"clock": clock.name, "item": item.item, "due": item.due_date.isoformat()})
    if item.status == ClockItem.Status.SATISFIED:
        raise Refused("clock_satisfied", f"{clock.name} {item.item} is already satisfied")
    if step in spec.submits:
        return _submit(armer, item, step, spec.submits[step], cal)
    move = spec.move_for(step)
    if move is not None:
        civil = spec.moves[move](_inputs(clock, item.item, due=item.civil))
        clock_move(armer=armer, item=item, civil=civil, by=move, cause={"step": step})
        # The items that follow this one are accepted after it, in item order (US → US-CA, US-NY).
        for follower in _followers(armer, item, spec):
            civil = spec.moves[move](_inputs(clock, follower.item, due=follower.civil))
            clock_move(armer=armer, item=follower, civil=civil, by=move, cause={"step": step, "follows": item.item})
        _keep_with(armer, item, move, proposed_at=when)
        return "moved"
    armer.record("clock.step", subject=item.owner_key, data={"clock": clock.name, "item": item.item, "step": step})
    return "committed"


# -- whose time decides: a submit step's outside receipt -------------------------------------------------------
def _submit(armer: Armer, item: ClockItem, step: str, transport: str, cal: BusinessCalendar) -> str:
    """A submit step commits and sends its submission; the date is kept when the outside system's receipt
    comes back (``clock_receipt``), judged by the receipt's time."""
    clock = item.clock
    payload = {"clock": clock.id, "item": item.item, "step": step, "subject": clock.subject_id,
               "due": item.due_date.isoformat(), "zone": cal.zone_name, "sent_at": iso_z(armer.now)}
    submission = armer.send(transport, payload, key=f"{item.owner_key}:submit:{step}")
    armer.record("clock.submitted", subject=item.owner_key,
                 data={"clock": clock.name, "item": item.item, "step": step, "transport": transport,
                       "submission": submission})
    return "submitted"


def receipt_time(receipt: dict | None, cal: BusinessCalendar) -> tuple[datetime, str] | None:
    """Whose time decides, from an outside system's receipt: an e-filed return's ``postmark``, read in the
    filer's own zone (the subject calendar's) when it carries no offset; else the system's ``received_at``.
    None when the receipt carries neither (then the commit's time decides)."""
    for name in ("postmark", "received_at"):
        raw = (receipt or {}).get(name)
        if not raw:
            continue
        try:
            when = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
        except ValueError:
            continue  # a receipt that cannot be read does not decide
        if when.tzinfo is None:
            when = local_instant(when.date(), when.time(), cal.zone)
        return when.astimezone(UTC), name
    return None


def clock_receipt(*, armer: Armer, item: ClockItem, step: str, receipt: dict | None) -> ClockItem:
    """The outside system answered a submit step: the date is kept, on time or not by the receipt's time
    (the postmark of an e-filed return, in the filer's zone; else when the system received it)."""
    judged = receipt_time(receipt, business_calendar(item.clock.subject))
    if judged is None:
        return clock_satisfy(armer=armer, item=item, by=step)
    return clock_satisfy(armer=armer, item=item, by=step, judged_at=judged[0], judged_by=judged[1])


def submissions_settled(results: list[tuple[str, bool, object]]) -> None:
    """The outbox's hook for a submit transport: each receipt keeps its clock's date (outside the tick)."""
    rows = {r.id: r for r in Outbox.objects.filter(pk__in=[sid for sid, ok, _ in results if ok])}
    for sid, ok, receipt in results:
        row = rows.get(sid)
        if not ok or row is None or "clock" not in (row.payload or {}):
            continue
        item = (ClockItem.objects.select_related("clock__subject__calendar")
                .filter(clock_id=row.payload["clock"], item=row.payload.get("item", "")).first())
        if item is None or item.status in (ClockItem.Status.SATISFIED, ClockItem.Status.VOIDED):
            continue
        # One transaction a receipt: the clock's row is read FOR SHARE in it (domain_writable), so the receipt
        # lands whole between an advance's batches, never inside one.
        with transaction.atomic():
            try:
                armer = DirectArmer(brand=row.brand_id, domain=row.domain, runtime=True)
            except TestClockDeleted:
                continue  # its clock was deleted since the send: the receipt changes nothing
            clock_receipt(armer=armer, item=item, step=row.payload.get("step", ""),
                          receipt=receipt if isinstance(receipt, dict) else None)


def hear_submissions(spec: ClockSpec) -> None:
    """Each transport a spec's submit steps send through has its settled receipts heard."""
    from timers import outbox

    for transport in spec.submits.values():
        outbox.on_settled(transport, submissions_settled)


def _followers(armer: Armer, leader: ClockItem, spec: ClockSpec) -> list[ClockItem]:
    if spec.follows is None:
        return []
    f = armer.firing
    b = batches.current()
    names = None
    if f is not None and b is not None:
        names = b.caches.get(ITEM_NAMES, {}).get(leader.clock_id)
        if names is None:  # the clock whole, in one read, and its items' names with it
            batch_item(f, (leader.clock_id, ""), read_ahead=False)
            names = b.caches.get(ITEM_NAMES, {}).get(leader.clock_id)
    if names is None:
        items = (ClockItem.objects.filter(clock=leader.clock, status=ClockItem.Status.OPEN).exclude(pk=leader.pk)
                 .select_related("clock__subject__calendar").order_by("item"))
    else:  # the batch's: the clock's items by name, each as the batch has it now
        items = [i for i in (batch_item(f, (leader.clock_id, n), read_ahead=False) for n in names if n != leader.item)
                 if i is not None and i.status == ClockItem.Status.OPEN]
    return [i for i in items if spec.leader(_inputs(leader.clock, i.item)) == leader.item]


def _keep_with(armer: Armer, moved: ClockItem, move: str, *, proposed_at: datetime) -> None:
    """A move that keeps a sibling clock (its spec's ``kept_with``): the sibling's step commits with it and its
    date is kept (the extension pays: "clock pay · satisfied · pay committed")."""
    clock = moved.clock
    f = armer.firing
    if f is None or batches.current() is None:
        siblings = (ClockItem.objects.filter(clock__domain=clock.domain, clock__owner_ref=clock.owner_ref,
                                             clock__period=clock.period, item=moved.item, status=ClockItem.Status.OPEN)
                    .exclude(clock=clock).select_related("clock__subject__calendar").order_by("clock__name"))
    else:  # the batch's: the owner's clocks by name, each one's item as the batch has it now
        names = batches.current().caches.get(ITEM_NAMES) or {}  # a clock known not to have the item is skipped
        siblings = [i for i in (batch_item(f, (cid, moved.item), read_ahead=False)
                                for cid, _, period in _owner_clocks(f, clock.owner_ref)
                                if period == clock.period and cid != clock.id
                                and moved.item in names.get(cid, (moved.item,)))
                    if i is not None and i.status == ClockItem.Status.OPEN]
    for item in siblings:
        phrase = specs.get(item.clock.spec).kept_with.get(move)
        if not phrase:
            continue
        step = item.clock.name
        try:
            clock_step(armer=armer, item=item, step=step, proposed_at=proposed_at)
        except Refused:
            continue  # a hard date already past: the move stands, and this date stays as it is (passed)
        clock_satisfy(armer=armer, item=item, by=step, kept_with=phrase)


def clock_choose(*, armer: Armer, item: ClockItem, option: str, by: str = "") -> str:
    """The owner's choice on a date that came unsatisfied; an option that names a step runs it through the
    gate (a hard date past refuses it with date_passed)."""
    clock = item.clock
    spec = specs.get(clock.spec)
    if item.status not in (ClockItem.Status.DUE, ClockItem.Status.PASSED):
        raise KeepingTimeError(f"{item.owner_key} is {item.status}; a choice is made once its date came unsatisfied",
                               code="clock_not_due", status=409)
    if option not in spec.options:
        raise KeepingTimeError(f"{clock.name} has no option {option!r}; its options: {', '.join(spec.options) or 'none'}",
                               code="unknown_option")
    step = spec.options[option]
    armer.record("clock.chosen", subject=item.owner_key,
                 data={"clock": clock.name, "item": item.item, "option": option, "step": step, "by": by})
    if step is None:
        return "chosen"
    return clock_step(armer=armer, item=item, step=step)


def _nul_at(value, path: str = "inputs") -> str | None:
    """Where a NUL is in a JSON value (a key or a string), which no database column stores; None if nowhere."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = (f"{path} (a key)" if "\x00" in str(k) else None) or _nul_at(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _nul_at(v, f"{path}[{i}]")
            if found:
                return found
    return None


def clock_inputs_changed(*, armer: Armer, clock: Clock, inputs: dict) -> list[ClockItem]:
    """A commit changed what the due function reads: run it again; a new answer is clock.moved {by: 'due'}."""
    where = _nul_at(inputs)
    if where:
        raise KeepingTimeError(f"{where.replace(chr(0), '?')} holds a NUL character, which nothing stores",
                               code="invalid_input")
    clock.inputs = {**clock.inputs, **inputs}
    clock.save(update_fields=["inputs"])
    spec = specs.get(clock.spec)
    moved = []
    for item in clock.items.filter(status__in=[ClockItem.Status.OPEN, ClockItem.Status.DUE]).select_related(
            "clock__subject"):
        if item.moves:
            continue  # a date a step moved keeps its move; the due function answered for @0 only
        civil = spec.due(_inputs(clock, item.item))
        if civil != item.civil and clock.hard:
            # Nothing is saved: the caller's transaction rolls the inputs back with the refusal.
            raise KeepingTimeError(f"{clock.name} is a hard date ({item.due_date}): only a postponement moves it, "
                                   f"not new inputs (its due now reads {civil})", code="hard_date", status=409)
        if civil != item.civil:
            moved.append(clock_move(armer=armer, item=item, civil=civil, by="due", rearm=Rearm.DUE_INPUT))
    return moved


# -- calendar edits ----------------------------------------------------------------------------------
def _open_items(calendar: Calendar):
    return (ClockItem.objects.filter(clock__subject__calendar=calendar, status=ClockItem.Status.OPEN)
            .select_related("clock__subject__calendar"))


def _reroll(calendar: Calendar, why: str) -> int:
    """Every open date on the calendar is rolled again: calendars are never pinned."""
    moved = 0
    armers: dict[str, DirectArmer] = {}
    for item in _open_items(calendar):
        clock = item.clock
        cal = business_calendar(clock.subject)
        rolled = cal.roll(item.civil)
        if rolled.date == item.due_date:
            continue
        armer = armers.get(clock.domain) or armers.setdefault(
            clock.domain, DirectArmer(brand=clock.brand_id, domain=clock.domain))
        # The civil date stays what the due function said; only the roll changed.
        clock_move(armer=armer, item=item, civil=item.civil, by="calendar", cause={"calendar": why},
                   rearm=Rearm.CLOSED_DAYS)
        moved += 1
    return moved


@transaction.atomic
def calendar_close_day(*, calendar: Calendar, day: date, why: str) -> int:
    try:
        with transaction.atomic():
            ClosedDay.objects.create(calendar=calendar, date=day, why=why)
    except IntegrityError:
        ClosedDay.objects.filter(calendar=calendar, date=day).update(why=why)
    return _reroll(calendar, f"closed {day.isoformat()}: {why}")


@transaction.atomic
def calendar_open_day(*, calendar: Calendar, day: date) -> int:
    ClosedDay.objects.filter(calendar=calendar, date=day).delete()
    return _reroll(calendar, f"opened {day.isoformat()}")


POSTPONE_LAST = date(9000, 12, 31)  # the calendar's range: a date and its year of rolling stay far from 9999


@transaction.atomic
def calendar_postpone(*, calendar: Calendar, items: list[ClockItem], to: date, notice: str) -> int:
    """A postponement (a disaster-relief notice): moves each clock it names, hard dates included. It moves a
    date later, within the calendar's range: anything else is ``400 invalid_postpone`` and moves nothing."""
    if to > POSTPONE_LAST:
        raise KeepingTimeError(f"a postponement moves a date to {POSTPONE_LAST} at the latest, not {to}",
                               code="invalid_postpone")
    earlier = [i for i in items if i.status != ClockItem.Status.SATISFIED and to <= i.due_date]
    if earlier:
        raise KeepingTimeError(f"a postponement moves a date later: {earlier[0].owner_key} is due "
                               f"{earlier[0].due_date}, not after {to}", code="invalid_postpone")
    moved = 0
    for item in items:
        if item.clock.subject.calendar_id != calendar.id or item.status == ClockItem.Status.SATISFIED:
            continue
        armer = DirectArmer(brand=item.clock.brand_id, domain=item.clock.domain)
        clock_move(armer=armer, item=item, civil=to, by="calendar", cause={"notice": notice},
                   rearm=Rearm.CALENDAR_POSTPONE)
        moved += 1
    return moved


__all__ = [
    "calendar_close_day",
    "calendar_open_day",
    "calendar_postpone",
    "clock_choose",
    "clock_inputs_changed",
    "clock_move",
    "clock_open",
    "clock_satisfy",
    "clock_step",
]


# -- the subject's calendar feed: a token per subject, stored only as its sha256 ---------------------
def subject_feed_digest(token: str) -> str:
    # A feed token is 256 random bits: a fast hash is right, as for API keys.
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def subject_feed_rotate(*, subject: Subject) -> str:
    """Issue a new feed token and return it (shown once); the old one stops working at once."""
    token = secrets.token_urlsafe(32)
    subject.feed_digest = subject_feed_digest(token)
    Subject.objects.filter(pk=subject.pk).update(feed_digest=subject.feed_digest)
    return token


def subject_feed_revoke(*, subject: Subject) -> None:
    """No token works any more until the next rotate."""
    subject.feed_digest = ""
    Subject.objects.filter(pk=subject.pk).update(feed_digest="")


def subject_by_feed_token(*, subject_id: str, token: str | None) -> Subject | None:
    """The subject whose feed this token opens, or None: an unknown subject, a wrong token and a revoked
    feed look the same (one query by id and digest, the digest never empty). Its calendar and the feed's
    last stamp (``subject.feed_stamp``, when it has one) come with it."""
    digest = feed_token_digest(subject_id=subject_id, token=token)
    if digest is None:
        return None
    return (Subject.objects.select_related("calendar", "brand", "feed_stamp")
            .filter(pk=subject_id, feed_digest=digest).first())


def feed_token_digest(*, subject_id: str, token: str | None) -> str | None:
    """The digest a feed token is stored under, or None when the id or the token cannot open any feed."""
    if not subject_id or not token or len(token) > 256 or "\x00" in subject_id or len(subject_id) > 32:
        return None
    return subject_feed_digest(token)


__all__ += ["feed_token_digest", "subject_by_feed_token", "subject_feed_revoke", "subject_feed_rotate"]
