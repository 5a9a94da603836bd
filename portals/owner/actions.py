"""What the console's buttons and admin actions do: each calls the same service function the API calls, in
one transaction with a DirectArmer on the object's own clock domain, and answers with a message. A refusal
(the gate's ``Refused``, or a KeepingTimeError such as job_not_open) rolls everything back and is shown with
its code, as the API's 409 is; it is never a 500.

Every lookup is within the request's brands (``portals.owner.scope``): another brand's id is "not found".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from django.db import transaction

from calendars.acts import clock_reassign
from calendars.models import ClockItem
from calendars.services import DirectArmer, calendar_postpone, clock_choose, clock_satisfy
from services.models import Job, Notification, Subscription, Task
from services.people import ask_answer, step_done, task_take
from services.services import (
    job_deliver,
    job_end,
    subscription_cancel,
    subscription_pause,
    subscription_resume,
)
from timers.errors import KeepingTimeError, Refused
from timers.models import Membership
from timers.services import domain_now

from .scope import scope


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    code: str = ""


def attempt(fn: Callable[[], str]) -> Outcome:
    """Run ``fn`` in one transaction: its message, or the refusal's code and message (nothing kept)."""
    try:
        with transaction.atomic():
            return Outcome(True, fn())
    except Refused as exc:
        return Outcome(False, f"Refused ({exc.code}): {exc.message or exc.code}. Nothing was changed.", exc.code)
    except KeepingTimeError as exc:
        return Outcome(False, f"Refused ({exc.code}): {exc}. Nothing was changed.", exc.code)


def who(user, brand_id: str | None = None) -> str:
    """How the record names the owner acting: their membership's name (in the object's brand when given),
    else their username."""
    from timers.models import Membership

    names = Membership.objects.filter(user=user).exclude(name="")
    if brand_id is not None:
        names = names.filter(brand_id=brand_id)
    return names.values_list("name", flat=True).first() or user.get_username()


def _armer(obj) -> DirectArmer:
    return DirectArmer(brand=obj.brand_id, domain=obj.domain)


# -- clock items: mark done, choose, postpone, assign ---------------------------------------------------------
def item_reassign(item: ClockItem, *, to: str, by: str) -> str:
    """Assign who answers for the date's clock (a member of the brand): its rungs and lapses go to them."""
    clock_reassign(armer=_armer(item.clock), clock=item.clock, to=to, by=by, why="assigned in the owner console")
    return f"{item.clock.name} {item.clock.period} now answered for by {to}."


def item_satisfy(item: ClockItem, *, by: str) -> str:
    clock = item.clock
    if item.status == ClockItem.Status.VOIDED:
        raise KeepingTimeError(f"{item.owner_key} is voided; its job ended", code="clock_item_voided", status=409)
    if item.status == ClockItem.Status.SATISFIED:
        return f"{item.owner_key} was already kept."
    clock_satisfy(armer=_armer(clock), item=item, by=by)
    return f"{item.owner_key} ({clock.name} {clock.period} {item.item}) marked done."


def item_choose(item: ClockItem, *, option: str, by: str) -> str:
    result = clock_choose(armer=_armer(item.clock), item=item, option=option, by=by)
    return f"{item.owner_key}: chose {option} ({result})."


def items_postpone(items: list[ClockItem], *, to: date, notice: str) -> str:
    moved = 0
    by_calendar: dict[str, list[ClockItem]] = {}
    for item in items:
        cal = item.clock.subject.calendar
        if cal is None:
            raise KeepingTimeError(f"{item.owner_key}'s subject has no calendar to postpone on",
                                   code="no_calendar", status=409)
        by_calendar.setdefault(cal.id, []).append(item)
    for group in by_calendar.values():
        moved += calendar_postpone(calendar=group[0].clock.subject.calendar, items=group, to=to, notice=notice)
    return f"{moved} date(s) postponed to {to} ({notice})."


# -- jobs ------------------------------------------------------------------------------------------------------
def job_deliver_now(job: Job) -> str:
    job_deliver(armer=_armer(job), job=job, keeps={})
    return f"{job.id} ({job.service} {job.period}) delivered."


def job_cancel_now(job: Job, *, reason: str) -> str:
    job_end(armer=_armer(job), job=job, status=Job.Status.CANCELED, reason=reason)
    return f"{job.id} ({job.service} {job.period}) canceled."


def job_step_done(job: Job, *, step: str, by: str) -> str:
    job = Job.objects.select_for_update().get(pk=job.pk)  # one move of a job's steps at a time (as the API)
    step_done(armer=_armer(job), job=job, step=step, by=by)
    return f"{job.id}: {step} done."


def job_answer(job: Job, *, step: str) -> str:
    job = Job.objects.select_for_update().get(pk=job.pk)
    ask_answer(armer=_armer(job), job=job, step=step)
    return f"{job.id}: the party's answer to {step} recorded."


def task_assign(task: Task, *, member: str) -> str:
    Job.objects.select_for_update().get(pk=task.job_id)
    task_take(armer=_armer(task), task=task, member=member)
    return f"{task.step} on {task.job_id} assigned to {member}."


# -- subscriptions -----------------------------------------------------------------------------------------------
def _active(sub: Subscription) -> None:
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription changes",
                               code="subscription_not_active", status=409)


def sub_pause(sub: Subscription, *, note: str) -> str:
    subscription_pause(armer=_armer(sub), sub=sub, note=note)
    return f"{sub.id} paused: its schedules mint nothing until it resumes."


def sub_resume(sub: Subscription) -> str:
    subscription_resume(armer=_armer(sub), sub=sub)
    return f"{sub.id} resumed."


def sub_cancel(sub: Subscription) -> str:
    _active(sub)
    subscription_cancel(armer=_armer(sub), sub=sub)
    return f"{sub.id} cancels at the end of cycle {sub.cycle}."


# -- notifications ---------------------------------------------------------------------------------------------
def notifications_read(qs) -> str:
    """Mark read at each one's own domain's time."""
    n = 0
    for domain in set(qs.filter(read_at__isnull=True).values_list("domain", flat=True)):
        n += qs.filter(domain=domain, read_at__isnull=True).update(read_at=domain_now(domain=domain))
    return f"{n} notification(s) marked read."


# -- the dashboard's settle form -------------------------------------------------------------------------------------
SETTLE = {
    ("item", "satisfy"), ("item", "choose"), ("item", "reassign"), ("job", "deliver"), ("job", "done"), ("job", "answer"),
    ("task", "assign"), ("notification", "read"),
}


def settle(*, request, brands, kind: str, id: str, act: str, option: str = "", member: str = "",
           step: str = "") -> Outcome:
    """One row's control, by what it names; another brand's object (or none) is not found."""
    if (kind, act) not in SETTLE:
        return Outcome(False, f"Unknown control {kind}/{act}.", "unknown_act")
    if kind == "item":
        item = (scope(ClockItem.objects.select_related("clock__subject__calendar"), brands)
                .filter(pk=int(id) if id.isdigit() else -1).first())
        if item is None:
            return Outcome(False, "That date was not found.", "resource_missing")
        by = who(request.user, item.clock.brand_id)
        if act == "satisfy":
            return attempt(lambda: item_satisfy(item, by=by))
        if act == "reassign":
            name = (Membership.objects.filter(brand_id=item.clock.brand_id, user__username=member)
                    .values_list("name", "user__username").first())
            if name is None:
                return Outcome(False, "Choose a member of the brand to assign.", "invalid_input")
            return attempt(lambda: item_reassign(item, to=name[0] or name[1], by=by))
        return attempt(lambda: item_choose(item, option=option, by=by))
    if kind == "job":
        job = scope(Job.objects.select_related("subscription", "subject"), brands).filter(pk=id).first()
        if job is None:
            return Outcome(False, "That job was not found.", "resource_missing")
        if act == "deliver":
            return attempt(lambda: job_deliver_now(job))
        if act == "answer":
            return attempt(lambda: job_answer(job, step=step or job.step))
        return attempt(lambda: job_step_done(job, step=step or job.step, by=who(request.user, job.brand_id)))
    if kind == "task":
        task = scope(Task.objects.select_related("job"), brands).filter(pk=id).first()
        if task is None:
            return Outcome(False, "That Task was not found.", "resource_missing")
        if not member:
            return Outcome(False, "Choose a member to assign.", "invalid_input")
        return attempt(lambda: task_assign(task, member=member))
    qs = scope(Notification.objects.filter(pk=id), brands)
    if not qs.exists():
        return Outcome(False, "That notification was not found.", "resource_missing")
    return attempt(lambda: notifications_read(qs))
