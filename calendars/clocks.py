"""A clock's life: open, move, satisfy, step through the gate, choose, new inputs; the items that follow a
moved one and the sibling dates kept with it; and the hooks other apps hang on a move and a lapse.

Every write goes through an Armer, which is either the firing in hand (inside the tick, so the gate
commits it) or the domain directly (a call from the API, the console or a command, outside the tick).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from timers import batch as batches
from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError, Refused
from timers.models import Brand
from timers.rearm import Rearm
from timers.rows import insert
from timers.timeutil import iso_z

from . import answers, specs
from .civil import BusinessCalendar
from .clock_keys import DUE_HANDLER, RUNG_HANDLER, ack_keys, due_key, item_keys, rung_key
from .clock_reads import ITEM_NAMES, ITEMS, SUBJECT_CLOCKS, batch_item, opened_in_batch, owner_clocks
from .closed_days import binding_calendar, item_calendar
from .models import Clock, ClockItem, Subject
from .offsets import Rung
from .roles import STEWARD, parse_role
from .specs import ClockSpec, DueInput


def _inputs(clock: Clock, item: str, due: date | None = None) -> DueInput:
    return DueInput(input=clock.inputs, keeps=clock.subject.keeps, period=clock.period, item=item, due=due)


@dataclass
class Dated:
    """A civil date as its calendar keeps it: rolled to an open day, closing at its minute, and why it rolled
    (and on whose calendar the day that pushed it last was closed)."""

    civil: date
    due_date: date
    due_at: datetime
    why: str
    reason: str
    whose: str = ""


def _date(cal: BusinessCalendar, civil: date) -> Dated:
    rolled = cal.roll(civil)
    return Dated(civil, rolled.date, cal.close_of(rolled.date), rolled.why, rolled.reason, rolled.whose)


def _rolled(clock: Clock, item: str, d: Dated) -> dict:
    """What clock.rolled says: from, to, why (whose closed day pushed it last), every day it passed over."""
    return {"clock": clock.name, "item": item, "from": d.civil.isoformat(), "to": d.due_date.isoformat(),
            "why": d.reason, "skipped": d.why, "closed_on": d.whose}


def clock_open(*, armer: Armer, brand: Brand | str, domain: str, subject: Subject, spec_name: str,
               owner_ref: str, period: str, inputs: dict | None = None, title: str = "", version: str = "",
               role: str | None = None, opened_at: datetime | None = None,
               clock_id: str | None = None) -> Clock | None:
    """Open a clock: each item's date from its due function, rolled, and its rungs and due timer armed.

    Inside the tick pass a ``clock_id`` derived from what the clock is, so a replay makes the same ids. A
    clock whose items function names no item this time (a carryforward the period did not make) opens
    nothing: None. Who answers is the spec's role (or ``role``), resolved now to a person and recorded
    (``clock.assigned``) unless it is the brand's.
    """
    spec = specs.get(spec_name)
    who = parse_role(role) if role else spec.role
    clock = Clock(
        # Derived from the domain's seed and what the clock is, so the same scenario makes the same ids.
        id=clock_id or domain_id("clk", domain, owner_ref, spec_name, period, length=8),
        brand_id=brand if isinstance(brand, str) else brand.id, domain=domain, subject=subject, spec=spec_name,
        name=spec.name, title=title or spec.title or spec.name, lives_on=spec.lives_on, owner_ref=owner_ref,
        period=period, hard=spec.hard, role=str(who), guarantee=spec.guarantee,
        version=version, inputs=inputs or {}, opened_at=opened_at or armer.now,
    )
    names = spec.items_for(_inputs(clock, ""))
    if not names:
        return None
    # Whose closed days bind each date: the clock's calendar for the item, else its Service's, else the brand's
    # default; kept on the item, so a later change of default never moves it (subject_calendar adds its own).
    bindings = {name: binding_calendar(brand_id=clock.brand_id, ref=spec.calendar_for(_inputs(clock, name)))
                for name in names}
    answers.place(clock, answers.resolve(who, subject_id=subject.id, owner_ref=owner_ref), who)
    if who.kind != "brand":
        answers.record_assigned(armer, clock, why="opened")
    batches.create(clock, kept_by=(SUBJECT_CLOCKS,))  # its id is new: the job that opens it is
    items = []
    cals: dict[str, BusinessCalendar] = {}
    for name in names:
        item = ClockItem(clock=clock, item=name, calendar=bindings[name], changed_at=armer.now)
        cal = cals[name] = item_calendar(item)
        d = _date(cal, spec.due(_inputs(clock, name)))
        item.civil, item.due_date, item.due_at, item.rolled_why = d.civil, d.due_date, d.due_at, d.why
        items.append(item)
        if d.due_date != d.civil:
            armer.record("clock.rolled", subject=f"{clock.id}#{name}" if name else clock.id,
                         data=_rolled(clock, name, d))
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
        arm_item(armer, item, spec, cals[item.item], move=0)
    opened_in_batch(clock, items)
    clock.opened_items = items  # what its opener may read without asking the database again (job_open)
    return clock


def arm_item(armer: Armer, item: ClockItem, spec: ClockSpec, cal: BusinessCalendar, *, move: int,
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


def arm_ahead(armer: Armer, item: ClockItem, spec: ClockSpec, cal: BusinessCalendar) -> int:
    """Arm again, at the item's current move, what an act taken back had ended and whose time is still ahead:
    each notice and escalate rung owed after now, the ``ack daily`` chain from its next day ahead, and the due
    timer, and the run rung (under its key for this undo: a run's key is its own, never @move). A rung whose
    time passed stays passed (arming it would send an old notice late). Returns how many it armed."""
    opened, version = item.clock.opened_at, item.clock.version
    data = {"clock": item.clock_id, "item": item.item, "move": item.moves, "of": item.clock.owner_ref}
    armed = 0
    follows = spec.leader(_inputs(item.clock, item.item))
    for rung in spec.parsed_rungs:
        if rung.kind == "run" and follows:
            continue  # it moves when its leader's run moves it, never on its own
        if rung.kind == "ack":
            first = rung.day(item.due_date)
            days = (item.due_date - first).days
            for day in range(1, max(1, days) + 1):
                owed = cal.at(first + timedelta(days=day - 1), spec.at)
                if owed > armer.now:  # the chain goes on from its next day, as the handler arms it
                    armer.arm(rung_key(item, rung, move=item.moves, day=day), owed_at=owed, handler=RUNG_HANDLER,
                              data={**data, "rung": rung.text, "day": day, "days": days}, opened_at=opened,
                              version=version)
                    armed += 1
                    break
            continue
        owed = cal.at(rung.day(item.due_date), spec.at)
        if owed > armer.now:
            armer.arm(rung_key(item, rung, move=item.moves), owed_at=owed, handler=RUNG_HANDLER,
                      data={**data, "rung": rung.text}, opened_at=opened, version=version)
            armed += 1
    armer.arm(due_key(item, move=item.moves), owed_at=item.due_at + timedelta(minutes=1), handler=DUE_HANDLER,
              data=data, opened_at=opened, version=version)
    return armed + 1


def _still_ahead(armer: Armer, key: str) -> bool:
    state = armer.state(key)
    return state is not None and state[0] in ("armed", "held")


def _supersede_acks(armer: Armer, item: ClockItem, rung: Rung, move: int, successor: str, *, by: Rearm,
                    due: date) -> None:
    for key in ack_keys(item, rung, move, due=due):
        armer.supersede(key, by=by, successor=successor)


def clock_move(*, armer: Armer, item: ClockItem, civil: date, by: str, cause: dict | None = None,
               rearm: Rearm = Rearm.CLOCK_MOVED) -> ClockItem:
    """Move one item's date: each notice/escalate/ack/due timer still ahead is superseded and its successor
    armed at @n+1; the run rung keeps its key (retimed if it has not rung)."""
    clock = item.clock
    spec = specs.get(clock.spec)
    cal = item_calendar(item)
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
        data["closed_on"] = d.whose
    armer.record("clock.moved", subject=subject, data=data)
    if d.due_date != d.civil:
        armer.record("clock.rolled", subject=subject, data=_rolled(clock, item.item, d))
    if item.status == ClockItem.Status.OPEN:
        arm_item(armer, item, spec, cal, move=item.moves, supersede_prev=True, include_run=False, by=rearm,
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


# Called when a clock's notice rings or its date lapses (clock.notice, clock.escalate; clock.due: it came
# unsatisfied; clock.passed: a hard date passed) with the armer, the item, the kind, who hears it (``hears``) and
# what they are told. Inside the tick the armer is the firing's, so what a hook writes is part of its proposal
# (domain apps register: calendars knows nothing of notifications).
_told_hooks: list[Callable[[Armer, ClockItem, str, list[answers.Person | str], str], None]] = []


def on_clock_told(fn: Callable[[Armer, ClockItem, str, list[answers.Person | str], str], None]) -> None:
    if fn not in _told_hooks:
        _told_hooks.append(fn)


def hears(clock: Clock) -> list[answers.Person | str]:
    """Who hears of a clock's date: who answers for it (a person; none for the brand or nobody yet), then
    "owner", the brand's owners."""
    person = answers.clock_person(clock)
    return [person, "owner"] if person is not None else ["owner"]


def hears_names(clock: Clock) -> list[str]:
    """Who hears, as the record says it: the person who answers by name, then "owner"."""
    person = clock.answers_for if clock.answers_for != STEWARD else ""
    return list(dict.fromkeys(name for name in (person, "owner") if name))


def clock_told(*, armer: Armer, item: ClockItem, kind: str, message: str) -> None:
    who = hears(item.clock)
    for hook in _told_hooks:
        hook(armer, item, kind, who, message)


def clock_satisfy(*, armer: Armer, item: ClockItem, by: str = "", kept_with: str = "",
                  judged_at: datetime | None = None, judged_by: str = "", who: str = "") -> ClockItem:
    """Mark the date kept: a satisfied clock arms nothing further, and what it had armed is superseded.
    On time is judged at ``judged_at`` (an outside receipt's time, ``judged_by`` says which), else now.
    ``who``: the person who marked it done, by name (the record's ``who``), where a person did; ``by`` is the
    step that kept it when a receipt or a sibling's step did, so a timeline names only ``who``."""
    if item.status == ClockItem.Status.SATISFIED:
        return item
    if item.status == ClockItem.Status.VOIDED:
        raise KeepingTimeError(f"{item.owner_key} was voided with its job", code="clock_item_voided", status=409)
    clock = item.clock
    spec = specs.get(clock.spec)
    item.status, item.satisfied_at, item.changed_at = ClockItem.Status.SATISFIED, armer.now, armer.now
    batches.save(item, fields=["status", "satisfied_at", "changed_at"])
    armer.supersede_all(item_keys(item, spec), by="clock.satisfied")
    on_time = item_calendar(item).on_time(judged_at or armer.now, item.due_date)
    judged = {"judged_by": judged_by, "judged_at": iso_z(judged_at)} if judged_at else {}
    armer.record("clock.satisfied", subject=item.owner_key,
                 data={"clock": clock.name, "item": item.item, "due": item.due_date.isoformat(),
                       "on_time": on_time, "by": by, **({"with": kept_with} if kept_with else {}),
                       **({"who": who} if who else {}), **judged})
    return item


def clock_step(*, armer: Armer, item: ClockItem, step: str, proposed_at: datetime | None = None) -> str:
    """A step a clock bars or moves, through the gate: refused date_passed once a hard date has passed."""
    clock = item.clock
    spec = specs.get(clock.spec)
    cal = item_calendar(item)
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
                 .select_related("clock__subject__calendar", "calendar").order_by("item"))
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
                    .exclude(clock=clock).select_related("clock__subject__calendar", "calendar").order_by("clock__name"))
    else:  # the batch's: the owner's clocks by name, each one's item as the batch has it now
        names = batches.current().caches.get(ITEM_NAMES) or {}  # a clock known not to have the item is skipped
        siblings = [i for i in (batch_item(f, (cid, moved.item), read_ahead=False)
                                for cid, _, period in owner_clocks(f, clock.owner_ref)
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
            "clock__subject__calendar", "calendar"):
        if item.moved:
            continue  # a date a step moved keeps its move; the due function answered for @0 only
        civil = spec.due(_inputs(clock, item.item))
        if civil != item.civil and clock.hard:
            # Nothing is saved: the caller's transaction rolls the inputs back with the refusal.
            raise KeepingTimeError(f"{clock.name} is a hard date ({item.due_date}): only a postponement moves it, "
                                   f"not new inputs (its due now reads {civil})", code="hard_date", status=409)
        if civil != item.civil:
            moved.append(clock_move(armer=armer, item=item, civil=civil, by="due", rearm=Rearm.DUE_INPUT))
    return moved
