"""What the console's buttons and admin actions do: each calls the same service function the API calls, in
one transaction with a DirectArmer on the object's own clock domain, and answers with a message in the
owner's words: what it did, to what, for whom (never an id, nor the runtime's words). A refusal (``Refused``
inside the tick's rules, or a KeepingTimeError such as job_not_open) rolls everything back and is said as a
sentence (its code stays on the Outcome, for tests); it is never a 500.

A date the customer answers for (its clock's role is the customer's and nobody took it over:
``calendars.answers.customers_clock``) is theirs to keep or choose on: the console may remind them (an email to
the person, ``services.reminders``) or assign it to one of the brand's people, and refuses marking it done or
choosing for them, whatever a form posts.

Every lookup is within the request's brands (``portals.owner.scope``): another brand's id is "not found".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from django.db import transaction

from calendars.acts import clock_reassign
from calendars.answers import customers_clock, member_of_record_set
from calendars.brand_calendars import calendar_postpone
from calendars.clocks import clock_choose, clock_satisfy
from calendars.entries import clock_what
from calendars.models import ClockItem
from calendars.undo import clock_reopen, undo_closes, undoable
from calendars.words import capitalized, day
from services.acts import ask_answer, step_done
from services.jobs import job_deliver, job_end
from services.members import member_says
from services.models import Job, Notification, Subscription, Task
from services.reminders import clock_remind
from services.subscriptions import subscription_cancel, subscription_pause, subscription_resume
from services.tasks import task_take
from timers.armer import DirectArmer
from timers.arming import timer_retry
from timers.domains import domain_now
from timers.errors import KeepingTimeError, Refused
from timers.models import Membership, Timer

from .scope import scope
from .selectors import job_title, service_of


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    code: str = ""


# A refusal, said: what the code means to the owner (the code itself stays on the Outcome).
REFUSED = {
    "date_passed": "Its date has passed, and a fixed date can't be extended",
    "needs_grant": "It needs the customer's access first",
    "job_not_open": "That work is already closed",
    "job_waiting": "That work is waiting on someone else",
    "clock_item_voided": "That date is no longer needed",
    "clock_not_open": "That date is no longer open",
    "clock_not_due": "That date has not been missed, so there is nothing to choose yet",
    "unknown_option": "That choice isn't one the date offers",
    "step_not_current": "The work is not at that step now",
    "unknown_step": "The work has no such step",
    "task_not_open": "Someone already holds that work",
    "task_not_taken": "Nobody holds that work",
    "not_in_pool": "That person isn't in the pool for this work",
    "unknown_member": "That person isn't one of the brand's people",
    "ask_not_open": "That link is no longer open",
    "not_an_ask": "That step isn't waiting on an answer",
    "no_calendar": "The customer has no calendar to move it on",
    "invalid_postpone": "A postponement moves a date later, and no later than the year 9000",
    "test_clock_deleted": "That test run was deleted: nothing on it changes any more",
    "undo_too_late": "That date has passed, so this can no longer be undone",
    "clock_not_done": "That date isn't marked done",
    "subscription_not_active": "That plan is no longer running",
    "subscription_not_running": "That plan is not running",
    "subscription_not_paused": "That plan is not paused",
    "no_one_to_remind": "Nobody is named for that date, so there is nobody to remind: add a contact on the "
                        "customer's page, or assign it",
    "timer_not_failed": "It is not stopped by an error any more",
    "test_clock_advancing": "That test run is moving now: try again once it has stopped",
}


def refused(code: str) -> str:
    return f"Not done. {REFUSED.get(code) or 'That cannot be done now'}. Nothing was changed."


def retried(timer: Timer) -> str:
    """Retry: what an error stopped runs again at once on its clock (the same function ``timers retry`` calls)."""
    timer_retry(timer=timer)
    return "It runs again now; if it stops again, it is back here."


def attempt(fn: Callable[[], str]) -> Outcome:
    """Run ``fn`` in one transaction: its message, or the refusal said as a sentence (nothing kept)."""
    try:
        with transaction.atomic():
            return Outcome(True, fn())
    except (Refused, KeepingTimeError) as exc:
        return Outcome(False, refused(exc.code), exc.code)


def _what(item: ClockItem) -> str:
    """'pay · the 2027 return · US for Acme Robotics (Tue 18 Apr 2028)'."""
    return f"{clock_what(item)} for {item.clock.subject.name} ({day(item.due_date)})"


def _job(job: Job) -> str:
    return f"{job_title(job)} for {job.subject.name}"


def customers_date(item: ClockItem) -> bool:
    """Whether the customer answers for the date: theirs to keep or choose."""
    return customers_clock(item.clock)


def not_yours(item: ClockItem) -> Outcome:
    who = item.clock.answers_for or "the customer"
    return Outcome(False, f"Not done. {who} answers for {_what(item)}, not the brand, so only they can mark it "
                          f"done or choose what happens. Remind them, or assign it to one of your people. "
                          f"Nothing was changed.", "customers_date")


def who(user, brand_id: str | None = None) -> str:
    """How the record names the owner acting: their membership's name (in the object's brand when given),
    else their username."""
    names = Membership.objects.filter(user=user).exclude(name="")
    if brand_id is not None:
        names = names.filter(brand_id=brand_id)
    return names.values_list("name", flat=True).first() or user.get_username()


def _armer(obj) -> DirectArmer:
    return DirectArmer(brand=obj.brand_id, domain=obj.domain)


# -- clock items: mark done, choose, postpone, assign ---------------------------------------------------------
def item_reassign(item: ClockItem, *, to: Membership, by: str) -> str:
    """Assign who answers for the date (a member of the brand): its notices and lapses go to them. A date a
    Service gives a member role (``member:preparer``) makes them that role's member of record for its job, so
    every date of the job in that role moves with it; any other date is assigned on its own."""
    clock = item.clock
    if clock.role.startswith("member:") and not clock.assigned:
        role = clock.role.split(":", 1)[1]
        owner_ref = clock.owner_ref if clock.lives_on == clock.LivesOn.JOB else ""
        n = member_of_record_set(subject=clock.subject, owner_ref=owner_ref, role=role, member=to, by=by)
        return f"{member_says(to)} is the {role} now, and answers for {_what(item)}" + (
            f" and {n - 1} more date{'s' if n != 2 else ''}." if n > 1 else ".")
    clock_reassign(armer=_armer(clock), clock=clock, to=to, by=by, why="assigned in the owner console")
    return f"{member_says(to)} now answers for {_what(item)}."


def item_satisfy(item: ClockItem, *, by: str) -> str:
    clock = item.clock
    if item.status == ClockItem.Status.VOIDED:
        raise KeepingTimeError(f"{item.owner_key} is voided; its job ended", code="clock_item_voided", status=409)
    if item.status == ClockItem.Status.SATISFIED:
        return f"{capitalized(_what(item))} was already done."
    clock_satisfy(armer=_armer(clock), item=item, by=by, who=by)
    return f"{capitalized(_what(item))} marked done."


def item_reopen(item: ClockItem, *, by: str) -> str:
    """Take back Mark done until the date passes (calendars.undo.clock_reopen): open again, on the record."""
    clock_reopen(armer=_armer(item.clock), item=item, by=by)
    return f"{capitalized(_what(item))} is open again."


def undo_offer(item: ClockItem) -> dict:
    """The console's offer to take back the Mark done it just did: the button while the date is ahead, else why
    not (as the portals say it)."""
    now = domain_now(domain=item.clock.domain)
    return {"id": item.pk, "what": _what(item), "why_not": "" if undoable(item, now=now) else undo_closes(item)}


def item_choose(item: ClockItem, *, option: str, by: str) -> str:
    clock_choose(armer=_armer(item.clock), item=item, option=option, by=by)
    return f"Chose “{option}” on {_what(item)}."


def item_remind(item: ClockItem, *, by: str, link_base: str) -> str:
    """Email who answers for the date a reminder (services.reminders: the date in their zone, what a miss
    costs, a one-time link to their portal); at most once a minute of domain time."""
    done = clock_remind(item=item, by=by, link_base=link_base)
    person = done.person
    if not done.sent:
        return f"{person.name} was already reminded of {_what(item)} just now."
    if not person.email:
        return f"Reminded {person.name} of {_what(item)} in their portal: they have no email address."
    return f"Emailed {person.name} ({person.email}) a reminder of {_what(item)}."


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
    return f"{moved} date{'' if moved == 1 else 's'} moved to {day(to)} (notice {notice})."


# -- jobs ------------------------------------------------------------------------------------------------------
def job_deliver_now(job: Job) -> str:
    job_deliver(armer=_armer(job), job=job, keeps={})
    return f"{capitalized(_job(job))} delivered."


def job_cancel_now(job: Job, *, reason: str) -> str:
    job_end(armer=_armer(job), job=job, status=Job.Status.CANCELED, reason=reason)
    return f"{capitalized(_job(job))} canceled."


def job_step_done(job: Job, *, step: str, by: str) -> str:
    job = Job.objects.select_for_update().get(pk=job.pk)  # one move of a job's steps at a time (as the API)
    step_done(armer=_armer(job), job=job, step=step, by=by)
    return f"{capitalized(step)} done on {_job(job)}."


def job_answer(job: Job, *, step: str) -> str:
    job = Job.objects.select_for_update().get(pk=job.pk)
    ask_answer(armer=_armer(job), job=job, step=step)
    return f"The answer to {step} on {_job(job)} is recorded."


def task_assign(task: Task, *, member: str) -> str:
    Job.objects.select_for_update().get(pk=task.job_id)
    task_take(armer=_armer(task), task=task, member=member)
    return f"{capitalized(task.step)} on {_job(task.job)} assigned to {member}."


# -- subscriptions -----------------------------------------------------------------------------------------------
def _plan(sub: Subscription) -> str:
    svc = service_of(sub.service, sub.version)
    return f"{sub.subject.name}’s {svc.title if svc is not None and svc.title else sub.service}"


def _active(sub: Subscription) -> None:
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription changes",
                               code="subscription_not_active", status=409)


def sub_pause(sub: Subscription, *, note: str) -> str:
    subscription_pause(armer=_armer(sub), sub=sub, note=note)
    return f"{capitalized(_plan(sub))} paused: no new work starts until it resumes."


def sub_resume(sub: Subscription) -> str:
    subscription_resume(armer=_armer(sub), sub=sub)
    return f"{capitalized(_plan(sub))} resumed."


def sub_cancel(sub: Subscription) -> str:
    _active(sub)
    subscription_cancel(armer=_armer(sub), sub=sub)
    return f"{capitalized(_plan(sub))} ends when this term ends (term {sub.cycle})."


# -- notifications ---------------------------------------------------------------------------------------------
def notifications_read(qs) -> str:
    """Mark read at each one's own domain's time."""
    n = 0
    for domain in set(qs.filter(read_at__isnull=True).values_list("domain", flat=True)):
        n += qs.filter(domain=domain, read_at__isnull=True).update(read_at=domain_now(domain=domain))
    return f"{n} notification{'' if n == 1 else 's'} marked read."


# -- the dashboard's settle form -------------------------------------------------------------------------------------
SETTLE = {
    ("item", "satisfy"), ("item", "reopen"), ("item", "choose"), ("item", "reassign"), ("item", "remind"),
    ("job", "deliver"),
    ("job", "done"), ("job", "answer"), ("task", "assign"), ("notification", "read"), ("timer", "retry"),
}


def settle(*, request, brands, kind: str, id: str, act: str, option: str = "", member: str = "",
           step: str = "") -> Outcome:
    """One row's control, by what it names; another brand's object (or none) is not found."""
    if (kind, act) not in SETTLE:
        return Outcome(False, "That button does nothing here. Nothing was changed.", "unknown_act")
    if kind == "item":
        item = (scope(ClockItem.objects.select_related("clock__subject__calendar"), brands)
                .filter(pk=int(id) if id.isdigit() else -1).first())
        if item is None:
            return Outcome(False, "That date was not found.", "resource_missing")
        by = who(request.user, item.clock.brand_id)
        if act in ("satisfy", "reopen", "choose") and customers_date(item):
            return not_yours(item)  # the customer's to keep or choose on, whatever the form posted
        if act == "remind":
            return attempt(lambda: item_remind(item, by=by, link_base=request.build_absolute_uri("/")))
        if act == "satisfy":
            return attempt(lambda: item_satisfy(item, by=by))
        if act == "reopen":
            return attempt(lambda: item_reopen(item, by=by))
        if act == "reassign":
            to = (Membership.objects.filter(brand_id=item.clock.brand_id, user__username=member)
                  .select_related("user").first())
            if to is None:
                return Outcome(False, "Choose one of the brand's people to assign it to. Nothing was changed.",
                               "invalid_input")
            return attempt(lambda: item_reassign(item, to=to, by=by))
        return attempt(lambda: item_choose(item, option=option, by=by))
    if kind == "job":
        job = scope(Job.objects.select_related("subscription", "subject"), brands).filter(pk=id).first()
        if job is None:
            return Outcome(False, "That work was not found.", "resource_missing")
        if act == "deliver":
            return attempt(lambda: job_deliver_now(job))
        if act == "answer":
            return attempt(lambda: job_answer(job, step=step or job.step))
        return attempt(lambda: job_step_done(job, step=step or job.step, by=who(request.user, job.brand_id)))
    if kind == "task":
        task = scope(Task.objects.select_related("job__subject"), brands).filter(pk=id).first()
        if task is None:
            return Outcome(False, "That work was not found.", "resource_missing")
        if not member:
            return Outcome(False, "Choose someone to assign it to. Nothing was changed.", "invalid_input")
        return attempt(lambda: task_assign(task, member=member))
    if kind == "timer":
        timer = scope(Timer.objects.filter(pk=id), brands).first()
        if timer is None:
            return Outcome(False, "That was not found.", "resource_missing")
        return attempt(lambda: retried(timer))
    qs = scope(Notification.objects.filter(pk=id), brands)
    if not qs.exists():
        return Outcome(False, "That notification was not found.", "resource_missing")
    return attempt(lambda: notifications_read(qs))
