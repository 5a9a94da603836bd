"""The calendar's kind handlers: rungs and dues (place 6). Registered in CalendarsConfig.ready."""

from __future__ import annotations

from datetime import timedelta

from timers import batch as batches
from timers import handlers
from timers.armer import FiringArmer
from timers.engine import Firing
from timers.timeutil import day_text, iso_z

from . import specs
from .clock_keys import DUE_HANDLER, RUNG_HANDLER, rung_key
from .clock_reads import batch_item
from .clocks import clock_step, clock_told, hears_names
from .closed_days import item_calendar
from .entries import clock_what
from .models import ClockItem

NOTICES_TRANSPORT = "notices"  # configured in KEEPING_TIME["TRANSPORTS"]
GAP = "gap"  # a rung's ``by`` when a later rung owed by now stands for it (timers-and-replay's gap table)


def _item(f: Firing) -> ClockItem | None:
    """The timer's clock item with its clock, subject and calendar (read ahead for the batch's rungs and dues)."""
    return batch_item(f, (f.timer.data["clock"], f.timer.data.get("item", "")))


def fire_rung(f: Firing) -> None:
    item = _item(f)
    if item is None or item.status != ClockItem.Status.OPEN:
        f.what = "skipped: the clock is no longer open"
        return
    clock = item.clock
    spec = specs.get(clock.spec)
    rung = spec.rung(f.timer.data["rung"])
    move = f.timer.data.get("move", 0)
    cal = item_calendar(item)
    base = {"clock": clock.name, "item": item.item, "period": clock.period, "rung": rung.text,
            "due": item.due_date.isoformat(), "due_at": iso_z(item.due_at), "zone": cal.zone_name}
    label = f"{clock.name} {item.item}".strip()
    if rung.kind in ("notice", "escalate"):
        # After a gap only the latest owed notice or escalate is sent; the earlier are recorded superseded
        # (the timer's status, by: 'gap', superseded_by the later rung), never fired.
        later = _later_owed(f, item, spec, rung, move)
        if later:
            f.superseded_instead(by=GAP, successor=later)
            f.what = f"{label} · {rung.text} superseded by {later.split(':')[2]}, owed by now"
            return
        f.record(f"clock.{rung.kind}", subject=item.owner_key, data=base)
        f.send(NOTICES_TRANSPORT, {"to": clock.answers_for, "subject": clock.subject_id, **base})
        f.what = f"{label} · {rung.text} · due {item.due_date} · to {clock.answers_for or 'nobody yet'}"
        days = (item.due_date - cal.today(f.instant)).days
        soon = "today" if days <= 0 else "tomorrow" if days == 1 else f"in {days} days"
        clock_told(armer=FiringArmer(f), item=item, kind=f"clock.{rung.kind}",
                   message=f"{clock_what(item)} is due {day_text(item.due_date)}, {soon}.")
    elif rung.kind == "ack":
        day, days = f.timer.data.get("day", 1), f.timer.data.get("days", 1)
        f.record("clock.ack_requested", subject=item.owner_key, data={**base, "day": day, "of": days})
        f.what = f"{label} · {rung.text} · day {day} of {days}"
        if day < days:
            nxt = rung_key(item, rung, move=move, day=day + 1)
            f.arm(nxt, owed_at=cal.at(rung.day(item.due_date) + timedelta(days=day), spec.at),
                  handler=RUNG_HANDLER, data={**f.timer.data, "day": day + 1}, opened_at=clock.opened_at,
                  what=f"{label} · {rung.text} · day {day + 1} of {days}")
    else:  # run: the step goes through the gate; a hard date past refuses it
        outcome = clock_step(armer=FiringArmer(f), item=item, step=rung.step)
        f.record("clock.rung_ran", subject=item.owner_key, data={**base, "step": rung.step, "outcome": outcome})
        f.what = f"{label} · rung {rung.text} → {rung.step} {outcome}" + _accepted(f, item.item)


def _accepted(f: Firing, leader: str) -> str:
    """What the run's move carried with it, in the order it was accepted: " · US accepted → US-CA accepted,
    US-NY accepted · pay satisfied, with the extension"."""
    followers = [d["item"] for t, _, d, _ in f.events if t == "clock.moved" and d.get("follows") == leader]
    kept = [f"{d['clock']} satisfied, {d['with']}" for t, _, d, _ in f.events if t == "clock.satisfied" and "with" in d]
    text = f" · {leader} accepted → {', '.join(f'{x} accepted' for x in followers)}" if followers else ""
    return text + "".join(f" · {k}" for k in kept)


def _later_owed(f: Firing, item: ClockItem, spec, rung, move: int) -> str | None:
    mine = f.timer.owed_at
    now = max(f.now, f.instant)
    latest = None
    for other in spec.parsed_rungs:
        if other.kind not in ("notice", "escalate") or other.text == rung.text:
            continue
        key = rung_key(item, other, move=move)
        state = f.owed_by_now(key)
        if state and state[0] == "armed" and state[1] is not None and mine < state[1] <= now:
            if latest is None or state[1] > latest[1]:
                latest = (key, state[1])
    return latest[0] if latest else None


def fire_due(f: Firing) -> None:
    item = _item(f)
    if item is None or item.status != ClockItem.Status.OPEN:
        f.what = "skipped: the clock is no longer open"
        return
    clock = item.clock
    # A lapse is never silent: who hears it is on the record, and each of them is notified (the hooks).
    base = {"clock": clock.name, "item": item.item, "period": clock.period, "due": item.due_date.isoformat(),
            "answers_for": clock.answers_for, "hears": hears_names(clock)}
    label = f"{clock.name} {item.item}".strip()
    title = clock_what(item)
    if clock.hard:
        item.status, kind = ClockItem.Status.PASSED, "clock.passed"
        message = (f"{title}: the fixed date {day_text(item.due_date)} passed without being done; it can no "
                   "longer be done on time")
        f.what = f"{label} · hard date passed unsatisfied · the gate now refuses what it bars (date_passed)"
    else:
        item.status, kind = ClockItem.Status.DUE, "clock.due"
        message = (f"{title}: {day_text(item.due_date)} passed without being done; it stays open for "
                   f"{clock.answers_for or 'the brand'} to mark done or choose what happens next")
        f.what = f"{label} · came unsatisfied · waits on {clock.answers_for or 'the brand'}'s choice"
    f.record(kind, subject=item.owner_key, data=base)
    item.changed_at = f.now
    batches.save(item, fields=["status", "changed_at"])
    clock_told(armer=FiringArmer(f), item=item, kind=kind, message=message)


def register() -> None:
    handlers.register(RUNG_HANDLER, fire_rung, atomic=True, replace=True)
    handlers.register(DUE_HANDLER, fire_due, atomic=True, replace=True)
