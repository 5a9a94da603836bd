"""When a subscription's schedule mints: the period's mint time (its 'at' offset from the period's end or
start, or from a clock of the Service it orders), the first period whose mint comes after an instant, the
mint timer's key, and the mints a batch holds.

Read by the subscription's writes (arming, re-arming, holding and resuming its mints) and by the mint's
handler (arming the next period's), so each finds the same instant.
"""

from __future__ import annotations

from datetime import datetime, time

from calendars.closed_days import business_calendar
from calendars.specs import DueInput
from timers.engine import Firing

from . import registry
from .declare import Service
from .kinds import SCHEDULE
from .models import Subscription
from .periods import Period, next_period, period_of, previous_period

MINT_AT = time(9, 0)  # by default a schedule mints at 09:00 in the subject's zone, as rungs ring


def will_mint(svc: Service, name: str, input: dict) -> bool:
    """The schedule ``name`` opens a job for this input: its ``when`` reads it true, or it has none (the mint
    of one it reads false is skipped, so no face lists that date)."""
    sch = svc.schedule.get(name)
    return sch is not None and (sch.when is None or bool(sch.when(input)))


def period_ends(svc: Service, input: dict) -> str:
    """The last day (MM-DD) of the year the Service's periods count in, for this input."""
    return svc.subject.period.ends_for(input) if svc.subject.period else "12-31"


def mint_at(*, sub: Subscription, name: str, period: Period) -> datetime:
    """When a schedule mints ``period``: its 'at' offset from the period's end or start, or from a clock
    of the Service it orders (the clock's rolled date), at 09:00 in the subject's zone."""
    svc = registry.get(sub.service, sub.version)
    sch, at = svc.schedule[name], svc.at[name]
    cal = business_calendar(sub.subject)
    if at.anchor == "end":
        anchor = period.end
    elif at.anchor == "start":
        anchor = period.start
    else:
        order = registry.get(sch.order)
        spec = order.clocks[at.anchor]
        x = DueInput(input=sub.input, keeps=sub.subject.keeps, period=period.name, item="")
        items = spec.items_for(x)
        anchor = min(cal.roll(spec.due(DueInput(input=sub.input, keeps=sub.subject.keeps, period=period.name,
                                                 item=i))).date for i in items)
    return cal.at(at.apply(anchor), sch.local_time or MINT_AT)


def first_period(*, sub: Subscription, name: str, since: datetime) -> Period:
    """The first period whose mint comes at or after ``since``."""
    svc = registry.get(sub.service, sub.version)
    each, ends = svc.schedule[name].each, period_ends(svc, sub.input)
    p = period_of(each, business_calendar(sub.subject).today(since), ends=ends)
    for _ in range(8):  # a mint comes at most a few periods after its period
        prev = previous_period(each, p, ends=ends)
        if mint_at(sub=sub, name=name, period=prev) < since:
            break
        p = prev
    while mint_at(sub=sub, name=name, period=p) < since:
        p = next_period(each, p, ends=ends)
    return p


def schedule_key(sub: Subscription, name: str, period: Period) -> str:
    return f"{sub.id}:schedule:{name}:{period.name}"


def mints_held(f: Firing) -> list:
    """The mints the batch holds (what a mint reads ahead for)."""
    return f.holding((SCHEDULE,))
