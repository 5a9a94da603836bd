"""What the people who answer for a clock do with it, beside marking it kept and choosing (clocks.py):
acknowledge its ack rung, hand it to the brand's steward, or pass it to a successor when they withdraw.

Keyword-only functions taking an ``armer`` (a DirectArmer from the portals and the API), each on the record.
"""

from __future__ import annotations

from django.db import transaction

from timers.armer import Armer
from timers.errors import KeepingTimeError

from . import specs
from .clock_keys import ack_keys
from .models import Clock, ClockItem

STEWARD = "the brand"  # who keeps a date the customer hands over


def clock_acknowledge(*, armer: Armer, item: ClockItem, by: str = "") -> int:
    """Acknowledge the item's ack rung ("ack daily 7d"): the days still to ask are ended (nothing takes their
    place) and ``clock.acknowledged`` is recorded. Returns how many asks it ended. An item with no ack rung,
    or no longer open, is refused."""
    clock = item.clock
    spec = specs.get(clock.spec)
    acks = [r for r in spec.parsed_rungs if r.kind == "ack"]
    if not acks:
        raise KeepingTimeError(f"{clock.name} asks for no acknowledgement", code="no_ack_rung", status=409)
    if item.status != ClockItem.Status.OPEN:
        raise KeepingTimeError(f"{item.owner_key} is {item.status}; only an open date is acknowledged",
                               code="clock_not_open", status=409)
    keys = [k for rung in acks for k in ack_keys(item, rung, item.moves, due=item.due_date)]
    live = [k for k in keys if (armer.state(k) or ("",))[0] == "armed"]
    if live:
        armer.supersede_all(live, by="clock.acknowledged")
    armer.record("clock.acknowledged", subject=item.owner_key,
                 data={"clock": clock.name, "item": item.item, "by": by, "asks_ended": len(live)})
    return len(live)


@transaction.atomic
def clock_reassign(*, armer: Armer, clock: Clock, to: str, by: str, why: str) -> Clock:
    """Who answers for the clock changes (a member withdraws naming a successor; a customer hands a date to
    the steward). Its timers do not move: only who hears its rungs and lapses."""
    if not to.strip():
        raise KeepingTimeError("name who answers for it next", code="invalid_input")
    was = clock.answers_for
    if was == to:
        return clock
    clock.answers_for = to
    clock.save(update_fields=["answers_for"])
    armer.record("clock.reassigned", subject=clock.id, data={"clock": clock.name, "from": was, "to": to, "by": by,
                                                             "why": why})
    return clock
