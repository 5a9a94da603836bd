"""Reads the domain's API views, the MCP tools and the apps share: a subscription, a job, a clock and a
clock's item within the caller's brand and its key's mode (another brand's or mode's id is a 404, never a
leak), and the next armed timers of many owners in one query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db.models import Q

from calendars.models import Clock, ClockItem
from timers.errors import NotFound
from timers.models import Brand, Timer
from timers.selectors import get_owned

from .models import Job, Subscription

_ITEM = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
UNNAMED = "-"  # the URL's name for a clock's single unnamed item
TICK_ORDER = ("owed_at", "place", "opened_at", "key")


def armed_timers(domain: str, roots: Iterable[str]) -> list[Timer]:
    """The armed timers of ``roots`` (each exactly, or its occurrences ``root#…``) on one domain, in tick order."""
    roots = sorted(set(roots))
    if not roots:
        return []
    match = Q(owner__in=roots)
    for root in roots:
        match |= Q(owner__startswith=f"{root}#")
    return list(Timer.objects.filter(domain=domain, status=Timer.Status.ARMED).filter(match)
                .only("id", "key", "owner", "kind", "owed_at", "place", "opened_at").order_by(*TICK_ORDER))


def first_by(timers: list[Timer], group) -> dict[str, Timer]:
    """The first timer (they come in tick order) of each group ``group(timer)`` names."""
    first: dict[str, Timer] = {}
    for t in timers:
        g = group(t)
        if g is not None and g not in first:
            first[g] = t
    return first


def owner_root(owner: str) -> str:
    """The owner a timer's owner names: a clock item's ``clk_…#US`` is its clock's ``clk_…``."""
    return owner.split("#", 1)[0]


def get_subscription(brand: Brand, sub_id: str) -> Subscription:
    return get_owned(brand, Subscription.objects.all(), sub_id, "subscription")


def get_job(brand: Brand, job_id: str) -> Job:
    return get_owned(brand, Job.objects.all(), job_id, "job")


def get_clock(brand: Brand, clock_id: str) -> Clock:
    return get_owned(brand, Clock.objects.select_related("subject__calendar"), clock_id, "clock")


def get_item(clock: Clock, item: str) -> ClockItem:
    name = "" if item == UNNAMED else item
    found = clock.items.filter(item=name).first() if (item == UNNAMED or _ITEM.match(item)) else None
    if found is None:
        raise NotFound(f"clock {clock.id} has no item {item!r}"
                       + (f"; its items: {', '.join(i or UNNAMED for i in clock.items.values_list('item', flat=True))}"
                          if clock.items.exists() else ""))
    found.clock = clock
    return found
