"""The queue of proposals near a close: whose time decides (seed: keeping-time, "a proposal near the close").

A step proposed on a clock's date enters the gate's queue at the domain's now. The gate takes the queue in the
order proposals came and commits each through ``clock_step``:

- one already in the gate (``queued``) is judged by when it was proposed: proposed at 23:59:58 and reached by
  the gate at 00:00:03, it is on time;
- one waiting on a person (``waiting``, a reviewer's yes) is judged by when it commits: the person who says yes
  at 00:00:03 says it after the close.

A hard date judged late refuses the step (``date_passed``); any other date records ``on_time`` on the proposal.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from timers.armer import Armer
from timers.errors import KeepingTimeError, Refused

from .clocks import clock_step
from .closed_days import item_calendar
from .models import ClockItem, Proposal


def clock_propose(*, armer: Armer, item: ClockItem, step: str, waits_on: str = "") -> Proposal:
    """Queue ``step`` on ``item`` at the domain's now; ``waits_on`` names the person it waits on first."""
    if not isinstance(step, str) or not step or len(step) > 40:
        raise KeepingTimeError("step names one of the clock's steps", code="invalid_request")
    return Proposal.objects.create(domain=armer.domain, item=item, step=step, waits_on=waits_on,
                                   state=Proposal.State.WAITING if waits_on else Proposal.State.QUEUED,
                                   proposed_at=armer.now)


# A proposal's item, clock, subject and calendars come with it in the query that locks the proposal alone.
_WITH_ITEM = ("item__clock__subject__calendar", "item__calendar")


def _commit(armer: Armer, p: Proposal, judged_at: datetime) -> Proposal:
    item = p.item
    p.committed_at, p.judged_at = armer.now, judged_at
    p.on_time = item_calendar(item).on_time(judged_at, item.due_date)
    try:
        with transaction.atomic():  # a refusal rolls back what the step wrote, never the queue's answer
            p.outcome = clock_step(armer=armer, item=item, step=p.step, proposed_at=judged_at)
        p.state = Proposal.State.COMMITTED
    except Refused as exc:
        p.state, p.outcome = Proposal.State.REFUSED, exc.code
    p.save(update_fields=["state", "outcome", "committed_at", "judged_at", "on_time"])
    return p


@transaction.atomic
def proposals_commit(*, armer: Armer) -> list[Proposal]:
    """The gate reaches the queue: every queued proposal of the domain, oldest first, judged at proposed_at.
    Rows another worker holds are left to it (SKIP LOCKED), so two drains never commit one proposal twice."""
    queued = list(Proposal.objects.select_for_update(skip_locked=True, of=("self",)).select_related(*_WITH_ITEM)
                  .filter(domain=armer.domain, state=Proposal.State.QUEUED).order_by("proposed_at", "id"))
    return [_commit(armer, p, p.proposed_at) for p in queued]


@transaction.atomic
def proposal_approve(*, armer: Armer, proposal: Proposal) -> Proposal:
    """The person it waited on says yes: it commits now, and now is what judges it."""
    p = Proposal.objects.select_for_update(of=("self",)).select_related(*_WITH_ITEM).get(pk=proposal.pk)
    if p.state != Proposal.State.WAITING:
        raise KeepingTimeError(f"proposal {p.id} is {p.state}, not waiting on anyone", code="proposal_not_waiting",
                               status=409)
    return _commit(armer, p, armer.now)
