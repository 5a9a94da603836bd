"""The gate's wake path: every wake of a timer, the tick's first or a redelivered one, meets the gate.

The gate commits a key once per clock domain: the commit's unique constraint says so, not a check. A
wake of a timer that already fired claims the timer row and offers its commit again; the constraint
refuses it, and the wake is answered ``replayed: true`` with the first commit (and counted in
``wakes``). Were the constraint gone, the commit would go through and the timer would fire a second
time, on the record for anyone comparing hashes to see.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F

from .engine import TIMER_FIELDS, Item, Run
from .ids import new_id
from .models import Timer
from .sql.gate import commit_once
from .store import get_store


@dataclass(frozen=True)
class Wake:
    timer_id: str
    status: str  # the timer's status when the wake arrived
    replayed: bool  # the gate refused a second commit: the first one stands
    fired_again: bool = False  # the gate let a second commit through (never, while the constraint holds)


def wake(*, domain: str, timer_ids: list[str]) -> list[Wake]:
    """Deliver one wake to each timer, in the order given; one set of statements for the lot."""
    with transaction.atomic():
        rows = (Timer.objects.select_for_update().filter(domain=domain, id__in=timer_ids)
                .values_list(*TIMER_FIELDS))
        items = {r[0]: Item(**dict(zip(TIMER_FIELDS, r, strict=True))) for r in rows}
        fired = [items[i] for i in timer_ids if i in items and items[i].status == "fired"]
        # A fired timer has its fire time (a timer's fired_at is None only before it fires).
        again = commit_once([(new_id("cmt"), domain, t.key, t.id, "committed", "", t.fired_at)  # type: ignore[misc]
                                      for t in fired])
        replayed = [t.id for t in fired if t.key not in again]
        if replayed:
            Timer.objects.filter(pk__in=replayed).update(wakes=F("wakes") + 1)
        if again:
            first: datetime = min(t.fired_at for t in fired if t.key in again)  # type: ignore[type-var,assignment]  # as above
            run = Run(domain=domain, floor=first, to=first, store=get_store())
            run.refire([t for t in fired if t.key in again])
    out = []
    for i in timer_ids:
        t = items.get(i)
        if t is None:
            continue
        out.append(Wake(i, t.status, t.status == "fired" and t.key not in again, t.key in again))
    return out
