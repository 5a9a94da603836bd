"""Subscriptions, jobs, schedules, cycles and money: keyword-only service functions.

Inside the tick the ``armer`` is the firing (the gate commits what it proposes); outside it, the domain
directly. Ids minted inside the tick are derived from what they name, so a replay mints the same ids.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from calendars.clock_keys import RUNG_HANDLER
from calendars.clocks import clock_open
from calendars.closed_days import business_calendar
from calendars.models import Clock, ClockItem, Subject
from calendars.specs import DueInput
from timers import batch as batches
from timers.armer import Armer, DirectArmer
from timers.domains import domain_seed
from timers.engine import Firing
from timers.errors import KeepingTimeError
from timers.ids import new_id
from timers.models import Brand, Timer
from timers.owners import owner_filter
from timers.rearm import Rearm
from timers.rows import insert_new, read
from timers.schedules import schedule_run_closed
from timers.timeutil import iso_z, three_quarters

from . import registry, tiers
from .declare import Service, check_input
from .models import Ask, Job, MoneyLine, Subscription, Task
from .people import _leave, signal_span, step_enter
from .periods import Period, next_period, period_of, previous_period
from .repin import repin_subject_clocks
from .schedules import service_schedule

CYCLE = "services.cycle"
SCHEDULE = "services.schedule"
DEADLINE = "services.deadline"
MONEY = "services.money"
UPDATE = "services.update"
SIGNAL = "services.signal"
SUBJECT_EVENT = "services.subject_event"
MINT_AT = time(9, 0)  # by default a schedule mints at 09:00 in the subject's zone, as rungs ring


def usd(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def _seed(domain: str, *parts: str) -> str:
    # The domain's seed, not its id: a test clock's id is random, and the same scenario must mint the same ids.
    return "|".join((domain_seed(domain), *parts))


# -- schedules -------------------------------------------------------------------------------------
def _ends(svc: Service, input: dict) -> str:
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
    each, ends = svc.schedule[name].each, _ends(svc, sub.input)
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


def _arm_schedule(armer: Armer, sub: Subscription, name: str, period: Period) -> None:
    armer.arm(schedule_key(sub, name, period), owed_at=mint_at(sub=sub, name=name, period=period),
              handler=SCHEDULE, data={"schedule": name, "period": period.name}, opened_at=sub.opened_at,
              version=sub.version)


# -- money -------------------------------------------------------------------------------------------
def money_line_id(domain: str, key_owner: str, kind: str, occurrence: str) -> str:
    """A money line's id, seeded by what it is for: posting the same line again finds it taken."""
    return new_id("mny", seed=_seed(domain, key_owner, kind, occurrence))


def post_money(*, armer: Armer, brand_id: str, domain: str, kind: str, cents: int, memo: str, owed_at: datetime,
               key_owner: str, occurrence: str, subscription: Subscription | None = None,
               job: Job | None = None, step: str = "", member_id: int | None = None) -> MoneyLine:
    """Post a line as owed and arm the money timer (place 8) that collects it. ``member_id``: a pay line's
    member (the user who did the act)."""
    line = MoneyLine(
        id=money_line_id(domain, key_owner, kind, occurrence), brand_id=brand_id, domain=domain,
        subscription=subscription, job=job, kind=kind, amount_cents=cents, memo=memo, owed_at=owed_at, step=step,
        member_id=member_id,
    )
    batches.create(line)
    pinned = job or subscription
    armer.arm(f"{key_owner}:money:{kind}:{occurrence}", owed_at=owed_at, handler=MONEY, data={"line": line.id},
              opened_at=pinned.opened_at, version=pinned.version)
    return line


# -- subscriptions -----------------------------------------------------------------------------------
@transaction.atomic
def subscription_create(*, brand: Brand, domain: str, subject: Subject, service: str, input: dict | None = None,
                        now: datetime | None = None) -> Subscription:
    armer = DirectArmer(brand=brand, domain=domain, now=now)
    # The subscription keeps the plan (and its price) live when it was made, whatever is deployed later.
    version = registry.pin(service, domain=domain, now=armer.now)
    svc = registry.get(service, version)
    check_input(svc.input, input or {})  # before anything is written: a bad input breaks every later mint
    # Live, the brand's plan decides which time runs: the plan's own, and that of each Service it mints.
    for declared in (svc, *(registry.get(s.order) for s in svc.schedule.values()),
                     *(registry.get(order) for order in svc.on.values())):
        tiers.require(tier=brand.tier, domain=domain, svc=declared)
    sub = Subscription.objects.create(
        # What it names: the subject's nth order of the Service, made at this instant.
        id=new_id("sbn", seed=_seed(domain, subject.id, service, armer.now.isoformat(),
                                    str(Subscription.objects.filter(subject=subject, service=service).count())),
                  length=10),
        brand=brand, domain=domain, subject=subject, service=service, version=version,
        input=input or {}, cycle=1, cycle_started_at=armer.now, opened_at=armer.now,
    )
    armer.record("subscription.created", subject=sub.id,
                 data={"service": service, "subject": subject.id, "input": sub.input, "price": svc.price.cents})
    if svc.every is not None:
        post_money(armer=armer, brand_id=brand.id, domain=domain, kind="charge", cents=svc.price.cents,
                   memo=f"{service} · cycle 1", owed_at=armer.now, key_owner=sub.id, occurrence="#1",
                   subscription=sub)
        armer.arm(f"{sub.id}:cycle:renew:#2", owed_at=armer.now + svc.every, handler=CYCLE, data={"cycle": 2},
                  opened_at=sub.opened_at, version=sub.version)
    for name in svc.schedule:
        _arm_schedule(armer, sub, name, first_period(sub=sub, name=name, since=armer.now))
        # One schedule mechanism: the Service's schedule is a Schedule row (its mints Runs and ticks).
        service_schedule(sub=sub, name=name, now=armer.now)
    return sub


@transaction.atomic
def subscription_update(*, armer: Armer, sub: Subscription, input: dict) -> Subscription:
    """Re-arms the next mint with the new input; jobs already minted keep theirs. The input is checked against
    the Service's declared input first (InvalidInput, nothing written): the next mint reads it."""
    check_input(registry.get(sub.service, sub.version).input, input, partial=True)
    sub.input = {**sub.input, **input}
    sub.save(update_fields=["input"])
    rearmed = []
    for key, name, period in _schedule_keys(armer, sub, "armed"):
        # Unchanged times stay as they are.
        armer.retime(key, owed_at=mint_at(sub=sub, name=name, period=period), by=Rearm.SUBSCRIPTION_UPDATE)
        rearmed.append(key)
    armer.record("subscription.updated", subject=sub.id, data={"input": input, "rearmed": sorted(rearmed)})
    return sub


@transaction.atomic
def subject_event(*, armer: Armer, subject: Subject, type: str, key: str, data: dict) -> list[Job]:
    """An event on the subject (a notice received): each active subscription whose Service names it under
    ``on`` mints a job of that Service, once per event ``key``, with the event's data as its input. The data is
    checked against each minted Service's declared input before anything is recorded (InvalidInput)."""
    minting = []
    for sub in Subscription.objects.filter(subject=subject, domain=subject.domain, status="active"):
        order = registry.get(sub.service, sub.version).on.get(type)
        if order is not None:
            check_input(registry.get(order, registry.live_version(order, domain=subject.domain, now=armer.now)).input,
                        {**sub.input, **data}, where="data", others=True)
            minting.append((sub, order))
    armer.record(f"subject.{type}", subject=subject.id, data={"key": key, **data})
    # The event a waiting job waits for (books.received): the work is the brand's again.
    for job in Job.objects.filter(subject=subject, domain=subject.domain, status=Job.Status.OPEN).exclude(
            waiting_on="").order_by("opened_at", "id"):
        waits = registry.get(job.service, job.version).waits
        if waits is not None and waits.until == type and job.waiting_on == waits.on:
            job_resume_work(armer=armer, job=job)
    jobs = []
    for sub, order in minting:
        svc = registry.get(sub.service, sub.version)
        allowance = svc.price.includes.get(order, 0)
        used = int(sub.usage.get(order, 0)) + 1
        live = registry.live_version(order, domain=subject.domain, now=armer.now)
        cents = 0 if used <= allowance else registry.get(order, live).price.cents
        try:
            with transaction.atomic():
                job = job_open(armer=armer, brand_id=sub.brand_id, domain=sub.domain, service=order, subject=subject,
                               period=key, input={**sub.input, **data}, subscription=sub, schedule=f"on {type}",
                               price_cents=cents)
        except IntegrityError:  # the same event again: its job is already open
            continue
        sub.usage = {**sub.usage, order: used}
        sub.save(update_fields=["usage"])
        if cents and not registry.get(job.service, job.version).price.hold:  # a holding Service holds it instead
            post_money(armer=armer, brand_id=sub.brand_id, domain=sub.domain, kind="charge", cents=cents,
                       memo=f"{order} {key} beyond the plan", owed_at=armer.now, key_owner=job.id, occurrence=key,
                       subscription=sub, job=job)
        armer.record("subject.event_minted", subject=sub.id, data={"event": type, "key": key, "job": job.id,
                                                                   "charge": cents, "used": used, "of": allowance})
        jobs.append(job)
    return jobs


def _schedule_keys(armer: Armer, sub: Subscription, status: str) -> list[tuple[str, str, Period]]:
    """The next mint of each schedule, in the given status: (key, schedule, period)."""
    svc = registry.get(sub.service, sub.version)
    ends = _ends(svc, sub.input)
    found = []
    for name, sch in svc.schedule.items():
        p = first_period(sub=sub, name=name, since=sub.paused_at or armer.now)
        for period in (previous_period(sch.each, p, ends=ends), p, next_period(sch.each, p, ends=ends)):
            key = schedule_key(sub, name, period)
            state = armer.state(key)
            if state is not None and state[0] == status:
                found.append((key, name, period))
    return found


@transaction.atomic
def subscription_pause(*, armer: Armer, sub: Subscription, note: str = "") -> Subscription:
    """Pause the schedules: the next mint of each is held; nothing else about the subscription changes."""
    if sub.status != Subscription.Status.ACTIVE or sub.paused_at is not None:
        raise KeepingTimeError(f"{sub.id} is {'paused' if sub.paused_at else sub.status}; only an active, running "
                               "subscription pauses", code="subscription_not_running", status=409)
    held = _schedule_keys(armer, sub, "armed")
    for key, _, _ in held:
        armer.hold(key, by=Rearm.HOLD, who="subscription.paused")
    sub.paused_at, sub.pause_note = armer.now, note
    sub.save(update_fields=["paused_at", "pause_note"])
    armer.record("subscription.paused", subject=sub.id, data={"note": note, "held": sorted(k for k, _, _ in held)})
    return sub


@transaction.atomic
def subscription_resume(*, armer: Armer, sub: Subscription) -> Subscription:
    """Resume: each held mint comes back at its own time; one whose time passed fires now, and the periods
    missed while paused follow the schedule's catch_up (each one, or only the latest)."""
    if sub.paused_at is None:
        raise KeepingTimeError(f"{sub.id} is not paused", code="subscription_not_paused", status=409)
    resumed = _schedule_keys(armer, sub, "held")
    for key, name, period in resumed:
        armer.resume(key, cap=mint_at(sub=sub, name=name, period=period))
    paused_for = armer.now - sub.paused_at
    sub.paused_at, sub.pause_note = None, ""
    sub.save(update_fields=["paused_at", "pause_note"])
    armer.record("subscription.resumed", subject=sub.id,
                 data={"resumed": sorted(k for k, _, _ in resumed), "paused_for_days": paused_for.days})
    return sub


def subscription_cancel(*, armer: Armer, sub: Subscription) -> Subscription:
    """Cancel at the cycle's end: the next renewal ends it; jobs of the current period go on."""
    if sub.status != Subscription.Status.ACTIVE:
        raise KeepingTimeError(f"{sub.id} is {sub.status}; only an active subscription cancels",
                               code="subscription_not_active", status=409)
    sub.cancel_at_period_end = True
    sub.save(update_fields=["cancel_at_period_end"])
    armer.record("subscription.cancel_scheduled", subject=sub.id, data={"cycle": sub.cycle})
    return sub


def subscription_uncancel(*, armer: Armer, sub: Subscription) -> Subscription:
    """Undo a cancel before the cycle's end: the next renewal renews."""
    if sub.status != Subscription.Status.ACTIVE or not sub.cancel_at_period_end:
        raise KeepingTimeError(f"{sub.id} is not set to cancel at the cycle's end", code="subscription_not_canceling",
                               status=409)
    sub.cancel_at_period_end = False
    sub.save(update_fields=["cancel_at_period_end"])
    armer.record("subscription.cancel_undone", subject=sub.id, data={"cycle": sub.cycle})
    return sub


# -- jobs --------------------------------------------------------------------------------------------
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
        id=job_id or new_id("job", seed=_seed(domain, subscription.id if subscription else subject.id, service,
                                              period), length=10),
        brand_id=brand_id, domain=domain, service=service, version=version,
        subject=subject, subscription=subscription, schedule=schedule, period=period, input=input,
        price_cents=price_cents, opened_at=now,
    )
    if if_new:
        taken = _periods_taken(armer, domain) if subscription is not None and schedule else None
        if taken is None:
            if not insert_new([job]):
                return None
        else:  # asked of the batch (one query for its mints), and kept: a job's key was checked just now
            if (subscription.id, schedule, period) in taken:
                return None
            taken.add((subscription.id, schedule, period))
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
                   clock_id=new_id("clk", seed=_seed(domain, job.id, name), length=8))
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
        _arm_deadline(armer, job, svc, opened=opened)
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


def _periods_taken(armer: Armer, domain: str) -> set | None:
    """(subscription, schedule, period) of the jobs minted so far, for the subscriptions whose mints the batch
    holds (``period_taken`` backs it); None outside a batch that keeps writes (timers.batch.taken)."""
    from .schedules import mints_held

    f = armer.firing
    if f is None:
        return None

    def load(subs: set) -> set:
        rows = Job.objects.filter(domain=domain, subscription_id__in=subs).exclude(schedule="")
        return set(rows.values_list("subscription_id", "schedule", "period"))

    return batches.taken(PERIODS_TAKEN, tables=("services_job",), owner=f.timer.owner,
                         ahead=lambda: {t.owner for t in mints_held(f)}, load=load)


def signal_key(job: Job, name: str) -> str:
    return f"{job.id}:deadline:{name}:{job.period}"


def _last_deadline_move(armer: Armer, job: Job, point: str) -> int | None:
    """The last @n of the deadline's ``point`` timer (a clock move re-arms at @n+1); None if it has none."""
    move = None
    while armer.state(deadline_key(job, point, 0 if move is None else move + 1)) is not None:
        move = 0 if move is None else move + 1
    return move


def _current_deadline_key(armer: Armer, job: Job, point: str) -> str | None:
    """The deadline timer of ``point`` now in force."""
    move = _last_deadline_move(armer, job, point)
    return None if move is None else deadline_key(job, point, move)


def job_wait(*, armer: Armer, job: Job, on: str) -> Job:
    """The work is the party's now (the customer's books, a signature): the deadline counts only while the
    work is the brand's, so the at-risk timer is held (held_since, remaining). ``late_at`` never moves."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job waits", code="job_not_open", status=409)
    if job.waiting_on:
        raise KeepingTimeError(f"{job.id} already waits on {job.waiting_on}", code="job_waiting", status=409)
    key = _current_deadline_key(armer, job, "at_risk")
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
    key = _current_deadline_key(armer, job, "at_risk")
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
    _leave(armer, job, why="job.delivered")
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


def _deadline_times(job: Job, svc: Service, opened: dict[str, list] | None = None) -> tuple[datetime, datetime]:
    """(at_risk, late_at): late at the end of ``price.within`` (from the open, or from a clock's date: the
    earliest of its items), at risk at three quarters of the way there. ``opened``: the items of the clocks
    the job has just opened, by clock name (its own clocks, so no query is needed)."""
    within = svc.within
    if within.anchor == "open":
        late_at = job.opened_at + within.span
    else:
        items = (opened or {}).get(within.anchor) or ClockItem.objects.filter(
            clock__owner_ref=job.id, clock__domain=job.domain, clock__name=within.anchor)
        anchor = min(i.due_date for i in items)
        late_at = business_calendar(job.subject).close_of(within.apply(anchor)) + timedelta(minutes=1)
    at_risk = three_quarters(job.opened_at, late_at)
    return at_risk, late_at


def _arm_deadline(armer: Armer, job: Job, svc: Service, *, opened: dict[str, list] | None = None) -> None:
    at_risk, late_at = _deadline_times(job, svc, opened)
    job.late_at = late_at
    batches.save(job, fields=["late_at"])
    for point, owed in (("at_risk", at_risk), ("late", late_at)):
        armer.arm(deadline_key(job, point), owed_at=owed, handler=DEADLINE,
                  data={"job": job.id, "point": point}, opened_at=job.opened_at, version=job.version)


def deadline_key(job: Job, point: str, move: int = 0) -> str:
    base = f"{job.id}:deadline:{point}:{job.period}"
    return base if move == 0 else f"{base}@{move}"


def _load_jobs(ids: set) -> dict:
    return {j.id: j for j in read(Job.objects.filter(pk__in=ids).order_by(), related=("subscription",))}


def _job_pks(job: Job, table: str) -> tuple:
    return (job.pk,) if table == "services_job" else (job.subscription_id,)


def _rung_job(timer) -> str | None:
    of = (timer.data or {}).get("of", "")
    return of if of.startswith("job_") else None


def batch_job(f: Firing, job_id: str, *, of_clocks: bool = False) -> Job | None:
    """A job with its subscription, from the batch: read ahead for the batch's deadlines, or (``of_clocks``,
    a job asked after for its clock's move) for the jobs whose clocks the batch's rungs ring."""
    ahead, key_of = ((RUNG_HANDLER,), _rung_job) if of_clocks else ((DEADLINE,), lambda t: t.data["job"])
    return batches.row(f, job_id, name="services.deadline_jobs", load=_load_jobs, ahead=ahead, key_of=key_of,
                       tables=("services_job", "services_subscription"), pk=_job_pks, carry=True)


def deadline_follows_clock(armer: Armer, item: ClockItem) -> None:
    """A deadline written before a clock ('5d before file') follows the clock: a move of its date supersedes
    the deadline's armed timers (by clock.moved) and arms them again at @n from the new date. A deadline that
    came already (the job is late) stays where it came."""
    clock = item.clock
    if not clock.owner_ref.startswith("job_"):
        return
    f = armer.firing
    if f is None:
        job = Job.objects.filter(pk=clock.owner_ref, domain=clock.domain, status=Job.Status.OPEN, late=False).first()
    else:
        job = batch_job(f, clock.owner_ref, of_clocks=True)  # a clock's job: read with those of the rungs' clocks
    if job is None or job.domain != clock.domain or job.status != Job.Status.OPEN or job.late:
        return
    svc = registry.get(job.service, job.version)
    if svc.within is None or svc.within.anchor != clock.name:
        return
    at_risk, late_at = _deadline_times(job, svc)
    if late_at == job.late_at:
        return
    # The current timers: the last @n of each point (the tick's view, so this batch's arms count).
    move = _last_deadline_move(armer, job, "late")
    if move is None:
        return
    for point, owed in (("at_risk", at_risk), ("late", late_at)):
        prev = deadline_key(job, point, move)
        state = armer.state(prev)
        if state is None:
            continue
        if state[0] != "armed" and point == "at_risk" and owed <= armer.now:
            continue  # it warned already, and the new warning would be in the past: once is enough
        key = deadline_key(job, point, move + 1)
        armer.arm(key, owed_at=owed, handler=DEADLINE, data={"job": job.id, "point": point, "late_at": iso_z(late_at)},
                  opened_at=job.opened_at, version=job.version)
        if state[0] in ("armed", "held"):
            armer.supersede(prev, by=Rearm.CLOCK_MOVED, successor=key)
        if state[0] == "held" and job.waiting_on:  # still the party's work: the new at-risk waits too
            armer.hold(key, by=Rearm.HOLD, who=job.waiting_on)
    armer.record("job.deadline_moved", subject=job.id, data={"from": iso_z(job.late_at) if job.late_at else None, "to": iso_z(late_at),
                                                             "clock": clock.name, "item": item.item})
    job.late_at = late_at
    batches.save(job, fields=["late_at"])


CURRENCIES = ("usd",)  # what a brand's lines are kept in; every amount is in its smallest unit (cents)
MAX_AMOUNT = 99_999_999  # Stripe's most for one usd amount ($999,999.99); a line's sum stays a 32-bit integer


def check_amount(amount: object, currency: object = "usd", *, param: str = "amount") -> tuple[int, str]:
    """An amount as the API, the CLI and the record take it: a positive whole number in the currency's
    smallest unit (Stripe's ``amount``: 30000 is $300.00), never a float or a dollar string."""
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT:
        shown = f"{amount!r}" if isinstance(amount, str) else str(amount)
        raise _bad(f"{param}: a whole number of cents from 1 to {MAX_AMOUNT} (30000 is $300.00), not {shown}",
                   "invalid_amount", param)
    if currency not in CURRENCIES:
        raise _bad(f"currency: one of {', '.join(CURRENCIES)}, not {currency!r}", "invalid_currency", "currency")
    return amount, str(currency)


def _bad(message: str, code: str, param: str) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code)
    err.param = param  # the API's answer names the field (timers.api.errors)
    return err


def _held_on_party(clock: Clock, job: Job, start: datetime, end: datetime) -> timedelta:
    """How much of [start, end) the job waited on the party (job.waiting .. job.resumed on the record)."""
    from timers.models import Event

    held, since = timedelta(0), None
    for type_, at_ in (Event.objects.filter(domain=clock.domain, subject=job.id, type__in=("job.waiting", "job.resumed"),
                                            owed_at__lt=end).order_by("seq").values_list("type", "owed_at")):
        if type_ == "job.waiting":
            since = at_ if since is None else since
        elif since is not None:
            held += max(timedelta(0), min(at_, end) - max(since, start))
            since = None
    if since is not None:
        held += max(timedelta(0), end - max(since, start))
    return held


@transaction.atomic
def penalty_notice(*, armer: Armer, clock: Clock, amount_cents: int, notice: str,
                   currency: str = "usd") -> MoneyLine | None:
    """A penalty notice for a clock's period. If the clock carries a guarantee (the brand answers for it),
    the penalty is credited from the brand's line, up to the guarantee's cap; AI and members' pay stay whole
    (a credit is the brand's own line: it never names a member, and no pay line changes).

    Only a clock the brand answers for (the brand, or one of its people, of record) carries the brand's
    guarantee: on a clock the customer answers for the notice is refused ``409 guarantee_not_brands``.
    With ``excludes: 'held'`` the time the job waited on the party, between the date and the notice, is left
    out: the credit is the penalty's share of the late time that was the brand's.

    One notice at a time per clock (its row is locked: the cap is read, then spent), and a notice already
    credited returns its line again and records nothing (its line's id is seeded by the notice)."""
    from .members import brand_people

    amount_cents, currency = check_amount(amount_cents, currency)
    Clock.objects.select_for_update().filter(pk=clock.pk).first()
    if clock.guarantee and clock.answers_for and clock.answers_for not in brand_people(clock.brand_id):
        raise KeepingTimeError(f"{clock.answers_for} answers for this date, not the brand: the brand's guarantee "
                               "covers only dates the brand or its people of record answer for",
                               code="guarantee_not_brands", status=409)
    job = Job.objects.filter(pk=clock.owner_ref).first()
    occurrence = f"guarantee {notice}"
    if job is not None:
        seen = MoneyLine.objects.filter(pk=money_line_id(clock.domain, job.id, "credit", occurrence)).first()
        if seen is not None:
            return seen
    cap = clock.guarantee_cap_cents
    already = sum(MoneyLine.objects.filter(job=job, kind="credit", memo__startswith=f"guarantee · {clock.id}")
                  .values_list("amount_cents", flat=True)) if job else 0
    covered, held = amount_cents, timedelta(0)
    if clock.guarantee and job is not None and (clock.guarantee or {}).get("excludes") == "held":
        due = clock.items.order_by("due_at").values_list("due_at", flat=True).first()
        if due is not None and armer.now > due:
            late = armer.now - due
            held = _held_on_party(clock, job, due, armer.now)
            covered = amount_cents * (late - held) // late  # floor: the brand never credits a cent it doesn't owe
    credit = max(0, min(covered, cap - already)) if clock.guarantee else 0
    armer.record("clock.penalty", subject=clock.id, data={
        "notice": notice, "amount": amount_cents, "currency": currency, "credited": credit, "cap": cap,
        "period": clock.period, **({"held_on_party_s": int(held.total_seconds())} if held else {})})
    if not credit or job is None:
        return None
    return post_money(armer=armer, brand_id=clock.brand_id, domain=clock.domain, kind="credit", cents=credit,
                      memo=f"guarantee · {clock.id} · {notice}", owed_at=armer.now, key_owner=job.id,
                      occurrence=occurrence, subscription=job.subscription, job=job)


def job_end(*, armer: Armer, job: Job, status: str, reason: str = "") -> Job:
    """Cancel (before delivery) or lapse a job: its timers stop, the hold returns; acts already committed
    stay charged."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job ends", code="job_not_open", status=409)
    if status not in (Job.Status.CANCELED, Job.Status.LAPSED):
        raise KeepingTimeError(f"a job ends canceled or lapsed, not {status!r}", code="invalid_status")
    _leave(armer, job, why=f"job.{status}")
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


