"""Acts taken back: a date marked done is open again, an acknowledgement is withdrawn (the date asks again), a
date handed to the brand is the customer's again. Each is allowed until the date passes, and each is its own
event on the record, after the act it takes back (nothing is deleted): ``clock.reopened``,
``clock.unacknowledged``, ``clock.reassigned`` (why: taken back).

Taking back an act brings the date's timers back as they were where their time is still ahead: the item's
move is counted once more (``moves``; ``reopened`` says it was an undo, not a move), and its reminders, the
ask chain's next day and its due timer are armed at that move (``clocks.arm_ahead``). A reminder whose time
passed while the act stood is not sent late.

Keyword-only functions taking an ``armer`` (a DirectArmer from the portals and the API).
"""

from __future__ import annotations

from datetime import datetime

from timers import batch as batches
from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.models import Event
from timers.rearm import Rearm

from . import specs
from .acts import BACK, clock_reassign
from .clock_keys import item_keys
from .clocks import arm_ahead
from .closed_days import item_calendar
from .models import ClockItem
from .words import day


def undo_closes(item: ClockItem) -> str:
    """Why an act on ``item`` can no longer be taken back, as the page says it (blank while it can)."""
    return f"Its date, {day(item.due_date)}, has passed, so this can no longer be undone."


def undoable(item: ClockItem, *, now: datetime) -> bool:
    """An act on the date can be taken back until the date passes (its closing minute)."""
    return item.due_at > now


def acknowledged_of(items: list[ClockItem]) -> set[str]:
    """Of ``items``, the owner keys whose last word on their asking is an acknowledgement: one read for a page."""
    if not items:
        return set()
    last: dict[str, str] = {}
    for subject, type_ in (Event.objects.filter(brand_id__in={i.clock.brand_id for i in items},
                                                type__in=["clock.acknowledged", "clock.unacknowledged"],
                                                domain__in={i.clock.domain for i in items},
                                                subject__in=[i.owner_key for i in items])
                           .order_by("seq").values_list("subject", "type")):
        last[subject] = type_
    return {k for k, t in last.items() if t == "clock.acknowledged"}


def acknowledged(item: ClockItem) -> bool:
    """Whether the date's last word on its asking is an acknowledgement (not yet taken back): one read of
    the record, the item's latest ``clock.acknowledged`` or ``clock.unacknowledged``."""
    # The brand's two types by seq (event_brand_type): both are rare beside the record's fires.
    last = (Event.objects.filter(brand_id=item.clock.brand_id, type__in=["clock.acknowledged", "clock.unacknowledged"],
                                 domain=item.clock.domain, subject=item.owner_key)
            .order_by("-seq").values_list("type", flat=True).first())
    return last == "clock.acknowledged"


def _until_it_passes(armer: Armer, item: ClockItem) -> None:
    if not undoable(item, now=armer.now):
        raise KeepingTimeError(f"{item.owner_key}'s date {item.due_date} has passed; an act on it stands",
                               code="undo_too_late", status=409)


def _reopen_timers(armer: Armer, item: ClockItem) -> int:
    """Count one more move and arm what is ahead at it; whatever is still armed at the old move (an
    acknowledged date's reminders) is superseded, naming its successor where there is one."""
    spec = specs.get(item.clock.spec)
    old = item_keys(item, spec)  # at the old move (and the run's key before this undo)
    item.moves += 1
    item.reopened += 1
    item.changed_at = armer.now
    armed = arm_ahead(armer, item, spec, item_calendar(item))
    new = dict(zip(old, item_keys(item, spec), strict=True))
    for key in old:
        if (armer.state(key) or ("",))[0] in ("armed", "held"):
            successor = new.get(key, "")
            if successor and armer.state(successor) is not None:
                armer.supersede(key, by=Rearm.CLOCK_REOPENED, successor=successor)
            else:
                armer.supersede_all([key], by=Rearm.CLOCK_REOPENED.value)
    return armed


def clock_reopen(*, armer: Armer, item: ClockItem, by: str = "") -> ClockItem:
    """Take back "mark done": the date is open again, its reminders ahead and its due timer armed again, and
    ``clock.reopened`` is recorded (the ``clock.satisfied`` before it stays). Refused ``clock_not_done`` for a
    date that is not done, ``undo_too_late`` once the date has passed."""
    if item.status != ClockItem.Status.SATISFIED:
        raise KeepingTimeError(f"{item.owner_key} is {item.status}, not done", code="clock_not_done", status=409)
    _until_it_passes(armer, item)
    item.status, item.satisfied_at = ClockItem.Status.OPEN, None
    armed = _reopen_timers(armer, item)
    batches.save(item, fields=["status", "satisfied_at", "moves", "reopened", "changed_at"])
    armer.record("clock.reopened", subject=item.owner_key,
                 data={"clock": item.clock.name, "item": item.item, "due": item.due_date.isoformat(), "by": by,
                       "move": item.moves, "armed": armed})
    return item


def clock_unacknowledge(*, armer: Armer, item: ClockItem, by: str = "") -> ClockItem:
    """Take back an acknowledgement: the ack rung asks again from its next day ahead (and the other reminders
    ahead stay armed, at the next move), and ``clock.unacknowledged`` is recorded. Refused
    ``not_acknowledged`` unless the record's last word on it is an acknowledgement, ``clock_not_open`` for a
    settled date, ``undo_too_late`` once it has passed."""
    if item.status != ClockItem.Status.OPEN:
        raise KeepingTimeError(f"{item.owner_key} is {item.status}; only an open date is asked again",
                               code="clock_not_open", status=409)
    if not acknowledged(item):
        raise KeepingTimeError(f"{item.owner_key} is not acknowledged", code="not_acknowledged", status=409)
    _until_it_passes(armer, item)
    armed = _reopen_timers(armer, item)
    batches.save(item, fields=["moves", "reopened", "changed_at"])
    armer.record("clock.unacknowledged", subject=item.owner_key,
                 data={"clock": item.clock.name, "item": item.item, "due": item.due_date.isoformat(), "by": by,
                       "move": item.moves, "armed": armed})
    return item


def clock_take_back(*, armer: Armer, item: ClockItem, by: str) -> ClockItem:
    """Take back "let the brand handle it": the clock answers to whoever its role names again, recorded
    ``clock.reassigned`` (why: the customer took it back). Refused ``not_with_brand`` when the brand does not
    hold it, ``undo_too_late`` once the date (``item``, the one the customer acted on) has passed."""
    clock = item.clock
    if not (clock.assigned and clock.contact_id is None and clock.member_id is None):
        raise KeepingTimeError(f"{clock.name} is not with the brand", code="not_with_brand", status=409)
    _until_it_passes(armer, item)
    clock_reassign(armer=armer, clock=clock, to=BACK, by=by, why="the customer took it back")
    return item
