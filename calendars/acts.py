"""What the people who answer for a clock do with it, beside marking it kept and choosing (clocks.py):
acknowledge its ack rung, hand it to the brand's steward, or pass it to a successor when they withdraw.

Keyword-only functions taking an ``armer`` (a DirectArmer from the portals and the API), each on the record.
"""

from __future__ import annotations

from django.db import transaction

from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.models import Membership

from . import answers, specs
from .clock_keys import ack_keys
from .models import Clock, ClockItem, Contact
from .roles import STEWARD, Role

BACK = "role"  # clock_reassign's ``to``: back to whoever the clock's role names (the customer takes it back)


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
def clock_reassign(*, armer: Armer, clock: Clock, to: Membership | Contact | str, by: str, why: str) -> Clock:
    """Who answers for the clock changes, on this clock itself: a member of the brand (the owner's Assign, a
    successor when a member withdraws), a contact of the customer's, the brand (``STEWARD``: a customer hands
    a date over), or ``BACK`` to whoever its role names (the customer takes it back). Its timers do not move:
    only who hears its rungs and lapses. Recorded ``clock.reassigned {from, to, by, why}``."""
    was = clock.answers_for
    if isinstance(to, Membership):
        if to.brand_id != clock.brand_id:
            raise KeepingTimeError("that person isn't one of the brand's people", code="unknown_member", status=404)
        found: Membership | Contact | None = to
        assigned = True
    elif isinstance(to, Contact):
        if to.subject_id != clock.subject_id:
            raise KeepingTimeError("that contact isn't the customer's", code="resource_missing", status=404)
        found, assigned = to, True
    elif to == STEWARD:
        found, assigned = None, True
    elif to == BACK:
        role = answers.role_of(clock)
        found, assigned = answers.resolve(role, subject_id=clock.subject_id, owner_ref=clock.owner_ref), False
    else:
        raise KeepingTimeError("name who answers for it next", code="invalid_input")
    role = answers.role_of(clock) if to == BACK else Role("brand")  # who "nobody" is: the brand, or no one yet
    before = (clock.contact_id, clock.member_id, clock.assigned)
    answers.place(clock, found, role)
    clock.assigned = assigned
    if (clock.contact_id, clock.member_id, clock.assigned) == before and clock.answers_for == was:
        return clock
    clock.save(update_fields=["contact", "member", "assigned", "answers_for"])
    armer.record("clock.reassigned", subject=clock.id, data={"clock": clock.name, "from": was,
                                                             "to": clock.answers_for, "by": by, "why": why})
    return clock
