"""A job's life: open (its clocks, deadline, signals and first step), wait on a party and resume, activity,
deliver, and end (canceled or lapsed); and the reads of its live timers (``live_keys``, ``next_timer``).

Inside the tick the ``armer`` is the firing (the gate commits what it proposes); outside it, the domain
directly. Ids minted inside the tick are derived from what they name, so a replay mints the same ids. A job
enters and leaves its steps through ``steps``; what moves it on from a step (``acts``) sits above this.
"""

from __future__ import annotations

from django.db.models import Q

from calendars.clocks import clock_open
from calendars.models import Clock, ClockItem, Subject
from timers import batch as batches
from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError
from timers.models import Timer
from timers.owners import owner_filter
from timers.rearm import Rearm
from timers.rows import insert_new
from timers.schedule_runs import schedule_run_closed
from timers.timeutil import iso_z

from . import registry
from .deadlines import arm_deadline, current_deadline_key, deadline_key, signal_key
from .kinds import SIGNAL
from .mints import mints_held
from .models import Ask, Job, MoneyLine, Subscription, Task
from .money import post_money
from .policies import signal_span
from .repin import repin_subject_clocks
from .steps import step_enter, step_leave


def job_open(*, armer: Armer, brand_id: str, domain: str, service: str, subject: Subject, period: str,
             input: dict, subscription: Subscription | None = None, schedule: str = "", price_cents: int = 0,
             job_id: str | None = None, if_new: bool = False) -> Job | None:
    """Open a job: its clocks (dates the world sets) and its deadline (price.within). A job whose period is
    taken (or whose id is) raises IntegrityError; with ``if_new`` it is None instead, and nothing was written
    (one INSERT … ON CONFLICT DO NOTHING, where the caller would otherwise need a savepoint)."""
    now = armer.now
    # A job runs the version live at its opening (a mint: the one live at the mint) until it closes.
    version = registry.pin(service, domain=domain, now=now)
    svc = registry.get(service, version)
    job = Job(
        id=job_id or domain_id("job", domain, subscription.id if subscription else subject.id, service, period,
                               length=10),
        brand_id=brand_id, domain=domain, service=service, version=version,
        subject=subject, subscription=subscription, schedule=schedule, period=period, input=input,
        price_cents=price_cents, opened_at=now,
    )
    if if_new:
        taken = _periods_taken(armer, domain, subscription.id) if subscription is not None and schedule else None
        if taken is None:
            if not insert_new([job]):
                return None
        else:  # asked of the batch (one query for its mints), and kept: a job's key was checked just now
            # The period's slot, and the id: an order of the period under the plan has the mint's id.
            if (subscription.id, schedule, period) in taken or job.id in taken:
                return None
            taken.update({(subscription.id, schedule, period), job.id})
            batches.create(job, kept_by=(PERIODS_TAKEN,))
    else:
        job.save(force_insert=True)
    armer.made(job.id)  # in the tick: its keys need no look in the database
    title = (svc.title or "{service} {period}").format(service=service, period=period)
    opened: dict[str, list] = {}
    for name in svc.clocks:
        clock = clock_open(armer=armer, brand=brand_id, domain=domain, subject=subject,
                   spec_name=registry.clock_spec_name(service, name, version), owner_ref=job.id, period=period, inputs=input,
                   title=f"{name} · {title}", version=job.version, opened_at=now,
                   clock_id=domain_id("clk", domain, job.id, name, length=8))
        if clock is not None:
            opened[clock.name] = clock.opened_items
    # A clock that lives on the subject follows the newest job of its Service there (clock.repinned).
    repin_subject_clocks(armer=armer, job=job)
    armer.record("job.opened", subject=job.id, data={"service": service, "period": period, "subject": subject.id,
                                                     "schedule": schedule, "version": job.version[:15]})
    if svc.price.hold and price_cents:  # the buyer's funds, held until delivery (or returned)
        post_money(armer=armer, brand_id=brand_id, domain=domain, kind="hold", cents=price_cents,
                   memo=f"hold · {service} {period}", owed_at=now, key_owner=job.id, occurrence="open",
                   subscription=subscription, job=job)
    if svc.within is not None:
        arm_deadline(armer, job, svc, opened=opened)
        if svc.waits is not None:  # it opens on the party's work: the at-risk timer waits from the start
            _wait(armer, job, on=svc.waits.on, key=deadline_key(job, "at_risk"))
    for name in svc.signals:
        armer.arm(signal_key(job, name), owed_at=now + signal_span(job, svc, name), handler=SIGNAL,
                  opened_at=job.opened_at, data={"job": job.id, "signal": name, "since": now.isoformat()},
                  version=job.version)
    if svc.steps:
        step_enter(armer=armer, job=job, step=svc.steps[0], by="job.opened")
    return job


PERIODS_TAKEN = "services.periods_taken"


def _periods_taken(armer: Armer, domain: str, subscription: str) -> set | None:
    """(subscription, schedule, period) and the id of the jobs opened so far under ``subscription`` and the
    subscriptions whose mints the batch holds (``period_taken`` and the primary key back it: an order under
    the plan has the id the period's mint would, and a kept row that missed it would fail the batch); None
    outside a batch that keeps writes (timers.batch.taken)."""
    f = armer.firing
    if f is None:
        return None

    def load(subs: set) -> set:
        rows = Job.objects.filter(domain=domain, subscription_id__in=subs).exclude(schedule="")
        found: set = set()
        for pk, sub, schedule, period in rows.values_list("id", "subscription_id", "schedule", "period"):
            found.update({(sub, schedule, period), pk})
        return found

    return batches.taken(PERIODS_TAKEN, tables=("services_job",), owner=subscription,
                         ahead=lambda: {t.owner for t in mints_held(f)}, load=load)


def job_wait(*, armer: Armer, job: Job, on: str) -> Job:
    """The work is the party's now (the customer's books, a signature): the deadline counts only while the
    work is the brand's, so the at-risk timer is held (held_since, remaining). ``late_at`` never moves."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job waits", code="job_not_open", status=409)
    if job.waiting_on:
        raise KeepingTimeError(f"{job.id} already waits on {job.waiting_on}", code="job_waiting", status=409)
    key = current_deadline_key(armer, job, "at_risk")
    state = armer.state(key) if key else None
    return _wait(armer, job, on=on, key=key if state is not None and state[0] == "armed" else None)


def _wait(armer: Armer, job: Job, *, on: str, key: str | None) -> Job:
    # Inside the tick the hold is proposed after the arm in the same firing: it applies in that order.
    if key is not None:
        armer.hold(key, by=Rearm.HOLD, who=on)
    job.waiting_on = on
    batches.save(job, fields=["waiting_on"])
    armer.record("job.waiting", subject=job.id, data={"on": on, "held": key,
                                                      "late_at": iso_z(job.late_at) if job.late_at else None})
    return job


def job_resume_work(*, armer: Armer, job: Job) -> Job:
    """The party answered: the held at-risk timer re-arms at min(now + remaining, late_at); one whose time
    passed while held fires at once, in place."""
    if not job.waiting_on:
        raise KeepingTimeError(f"{job.id} waits on no one", code="job_not_waiting", status=409)
    key = current_deadline_key(armer, job, "at_risk")
    state = armer.state(key) if key else None
    if state is not None and state[0] == "held":
        armer.resume(key, cap=job.late_at)
    armer.record("job.resumed", subject=job.id, data={"from": job.waiting_on, "resumed": key if state and
                                                      state[0] == "held" else None})
    job.waiting_on = ""
    job.save(update_fields=["waiting_on"])
    return job


def job_activity(*, armer: Armer, job: Job, what: str = "") -> Job:
    """Something happened on the job: it is recorded, with its time kept on the job. Activity is not on the
    closed re-arm list, so no timer moves: a silent signal reads the last activity when it fires."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; activity counts on an open job", code="job_not_open",
                               status=409)
    job.last_activity_at = armer.now
    job.save(update_fields=["last_activity_at"])
    armer.record("job.activity", subject=job.id, data={"what": what})
    return job


def job_deliver(*, armer: Armer, job: Job, keeps: dict | None = None) -> Job:
    """Deliver a job: its deadline and signals stop, and what the subject keeps is carried to the next job."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job is delivered", code="job_not_open",
                               status=409)
    svc = registry.get(job.service, job.version)
    # What the subject keeps is declared by the job's Service or by the plan that minted it.
    declared = set(svc.subject.keeps)
    if job.subscription_id:
        declared |= set(registry.get(job.subscription.service, job.subscription.version).subject.keeps)
    carried = {k: v for k, v in (keeps or {}).items() if k in declared}
    ignored = sorted(set(keeps or {}) - set(carried))
    if ignored:
        raise KeepingTimeError(f"{svc.name} keeps {', '.join(sorted(declared)) or 'nothing'}; not {ignored}",
                               code="unknown_keeps")
    step_leave(armer, job, why="job.delivered")
    job.status, job.closed_at = Job.Status.DELIVERED, armer.now
    job.save(update_fields=["status", "closed_at"])
    held = sum(MoneyLine.objects.filter(job=job, kind="hold").values_list("amount_cents", flat=True))
    acts = sum(MoneyLine.objects.filter(job=job, kind="charge").exclude(step="").values_list("amount_cents",
                                                                                            flat=True))
    if held > acts:  # the hold is captured: what its acts did not charge already
        post_money(armer=armer, brand_id=job.brand_id, domain=job.domain, kind="charge", cents=held - acts,
                   memo=f"{job.service} {job.period} delivered", owed_at=armer.now, key_owner=job.id,
                   occurrence="delivered", subscription=job.subscription, job=job)
    if carried:
        subject = job.subject
        subject.keeps = {**subject.keeps, **carried}
        subject.save(update_fields=["keeps"])
    armer.supersede_all([k for k in live_keys(armer, domain=job.domain, owner=job.id, clocks=False)
                         if k.split(":")[1] in ("deadline", "ask", "task")], by="job.delivered")
    armer.record("job.delivered", subject=job.id, data={"keeps": sorted(carried), "late": job.late})
    schedule_run_closed(armer=armer, ref=job.id, outcome=f"job {job.status}")  # a schedule's Run it was
    return job


def job_end(*, armer: Armer, job: Job, status: str, reason: str = "") -> Job:
    """Cancel (before delivery) or lapse a job: its timers stop, the hold returns; acts already committed
    stay charged."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job ends", code="job_not_open", status=409)
    if status not in (Job.Status.CANCELED, Job.Status.LAPSED):
        raise KeepingTimeError(f"a job ends canceled or lapsed, not {status!r}", code="invalid_status")
    step_leave(armer, job, why=f"job.{status}")
    job.status, job.closed_at = status, armer.now
    job.save(update_fields=["status", "closed_at"])
    Task.objects.filter(job=job, status__in=[Task.Status.OPEN, Task.Status.TAKEN]).update(
        status=Task.Status.CANCELED, closed_at=armer.now, hold_until=None)
    Ask.objects.filter(job=job, status=Ask.Status.OPEN).update(status=Ask.Status.CANCELED)
    # The job's own timers and its clocks' (whose data names the job): the runtime's owner filter.
    # A clock that lives on the subject (a carryforward) outlives its job: it is neither voided nor stopped.
    outlive = tuple(Clock.objects.filter(owner_ref=job.id, domain=job.domain,
                                         lives_on=Clock.LivesOn.SUBJECT).values_list("id", flat=True))
    keys = [k for k in live_keys(armer, domain=job.domain, owner=job.id) if not outlive or not k.startswith(outlive)]
    armer.supersede_all(keys, by=f"job.{status}")
    ClockItem.objects.filter(clock__owner_ref=job.id, status=ClockItem.Status.OPEN).exclude(
        clock__lives_on=Clock.LivesOn.SUBJECT).update(status=ClockItem.Status.VOIDED, changed_at=armer.now)
    held = sum(MoneyLine.objects.filter(job=job, kind="hold").exclude(status="void").values_list("amount_cents",
                                                                                                flat=True))
    released = sum(MoneyLine.objects.filter(job=job, kind="release").values_list("amount_cents", flat=True))
    # Paid acts already committed stay charged (from the hold): the rest of it returns.
    acts = sum(MoneyLine.objects.filter(job=job, kind="charge").exclude(step="").values_list("amount_cents",
                                                                                            flat=True))
    released += acts
    if held - released > 0:
        post_money(armer=armer, brand_id=job.brand_id, domain=job.domain, kind="release", cents=held - released,
                   memo=f"hold returns · {job.service} {job.period} {status}", owed_at=armer.now, key_owner=job.id,
                   occurrence=status, subscription=job.subscription, job=job)
    armer.record(f"job.{status}", subject=job.id, data={"reason": reason, "released": max(0, held - released),
                                                         "acts_charged": acts, "timers_stopped": len(keys)})
    schedule_run_closed(armer=armer, ref=job.id, outcome=f"job {job.status}")  # a schedule's Run it was
    return job


def live_keys(armer: Armer, *, domain: str, owner: str, clocks: bool = True) -> list[str]:
    """An owner's armed and held timers as the armer sees them: the table's, and inside the tick also what the
    batch armed or changed in memory (not yet in the table). ``clocks``: its clocks' timers too."""
    which = owner_filter(domain, owner) if clocks else Q(owner=owner)
    keys = set(Timer.objects.filter(which, domain=domain, status__in=["armed", "held"]).values_list("key", flat=True))
    f = armer.firing
    if f is not None:
        for key, head, data in f.touched():
            if head == owner or (clocks and (head.startswith(f"{owner}#") or data.get("of") == owner)):
                keys.add(key)
        keys = {k for k in keys if (f.state(k) or ("",))[0] in ("armed", "held")}
    return sorted(keys)


def next_timer(*, domain: str, owner: str) -> Timer | None:
    """The next armed timer of a job, clock or subscription (a clock's items included), in tick order."""
    return (Timer.objects.filter(Q(owner=owner) | Q(owner__startswith=f"{owner}#"), domain=domain, status="armed")
            .order_by("owed_at", "place", "opened_at", "key").first())
