"""People's time on a job: steps, Tasks and their holds (place 4), asks and grants (place 3), step
deadlines (place 5), standby windows (place 7), and the brand's policy values (policy.set).

Writes are keyword-only service functions taking an ``armer`` (the firing inside the tick, a DirectArmer
outside it), so a step moved from the API and one moved by a scripted act on a test clock land the same way.
Timers never follow what people do, except through the closed re-arm list: a hold's extension, a reply or
an answer is read by the timer when it fires (the hold's end reads ``hold_until``, the silent signal reads
the last activity), and ``policy.set`` supersedes the silent timers it changes.

Keys (the occurrence names the step's entry, never a date):
    job_…:task:hold <step>:#<entry> take <n>[@m]     the hold's end (m: its extension)
    job_…:task:warn <step>:#<entry> take <n>[@m]     three quarters of the hold
    job_…:ask:remind <step>:#<entry> link <n>        a day before the link expires
    job_…:ask:expire <step>:#<entry> link <n>        the link expires (n = 1, then 2)
    job_…:ask:grant <scope>:#<n>                      the nth grant's term ends
    job_…:deadline:<step> at_risk:#<entry>            the step's deadline (deliver.<step>.within)
    win_…:window:standby:open                          a standby window closes
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dateutil.relativedelta import relativedelta
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from timers import handlers
from timers.armer import Armer, FiringArmer
from timers.engine import Firing
from timers.errors import KeepingTimeError, Refused
from timers.ids import new_id
from timers.rearm import Rearm
from timers.timeutil import iso_z, three_quarters

from . import registry
from .declare import Service, Step
from .members import in_pool
from .models import Ask, Grant, Job, PolicyValue, Task, Window
from .notifications import notify, when

TASK = "services.task"
ASK = "services.ask"
WINDOW = "services.window"
STEP_DEADLINE = "services.step_deadline"
DAY = timedelta(days=1)


def _seed(domain: str, *parts: str) -> str:
    from .services import _seed as seed

    return seed(domain, *parts)


def _span_end(start: datetime, span: relativedelta) -> datetime:
    return start + span


def _open(job: Job) -> None:
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job's steps move", code="job_not_open",
                               status=409)


# -- steps -------------------------------------------------------------------------------------------------
def step_enter(*, armer: Armer, job: Job, step: Step, by: str = "") -> None:
    """The job is at ``step`` now: its Task (a pool's step) or its ask (a party's) opens, and its deadline
    (deliver.<step>.within) is armed from now."""
    svc = registry.get(job.service, job.version)
    now = armer.now
    job.step, job.step_entry = step.name, job.step_entry + 1
    job.save(update_fields=["step", "step_entry"])
    entry = job.step_entry
    due_at = None
    if step.name in svc.step_within:
        due_at = now + svc.step_within[step.name]
        for point, owed in (("at_risk", three_quarters(now, due_at)), ("late", due_at)):
            armer.arm(f"{job.id}:deadline:{step.name} {point}:#{entry}", owed_at=owed, handler=STEP_DEADLINE,
                      data={"job": job.id, "step": step.name, "entry": entry, "point": point, "due": iso_z(due_at)},
                      opened_at=job.opened_at, version=job.version)
    armer.record("step.entered", subject=job.id, data={"step": step.name, "entry": entry, "by": by,
                                                       "due": iso_z(due_at) if due_at else None})
    if step.pool:
        Task.objects.create(id=new_id("tsk", seed=_seed(job.domain, job.id, str(entry)), length=10),
                            brand_id=job.brand_id, domain=job.domain, job=job, step=step.name, entry=entry,
                            pool=step.pool, due_at=due_at, opened_at=now)
    elif step.party:
        _send_link(armer, job, step=step.name, scope="", entry=entry, party=step.party,
                   span=svc.step_expires.get(step.name), link=1)


def _send_link(armer: Armer, job: Job, *, step: str, scope: str, entry: int, party: str,
               span: relativedelta | None, link: int, ask: Ask | None = None) -> Ask:
    now = armer.now
    expires_at = now + span if span is not None else None
    if ask is None:
        ask = Ask.objects.create(id=new_id("ask", seed=_seed(job.domain, job.id, step or f"grant {scope}", str(entry)),
                                           length=10),
                                 brand_id=job.brand_id, domain=job.domain, job=job, step=step, scope=scope, entry=entry,
                                 party=party, link=link, expires_at=expires_at, sent_at=now)
    else:
        ask.link, ask.expires_at, ask.sent_at = link, expires_at, now
        ask.save(update_fields=["link", "expires_at", "sent_at"])
    if expires_at is not None:
        what = step or f"grant {scope}"
        for point, owed in (("remind", expires_at - DAY), ("expire", expires_at)):
            armer.arm(f"{job.id}:ask:{point} {what}:#{entry} link {link}", owed_at=owed, handler=ASK,
                      data={"ask": ask.id, "point": point, "link": link}, opened_at=job.opened_at,
                      version=job.version)
    armer.record("ask.sent" if link == 1 else "ask.reopened", subject=job.id,
                 data={"ask": ask.id, "step": step or None, "scope": scope or None, "party": party, "link": link,
                       "expires": iso_z(expires_at) if expires_at else None})
    return ask


def _step_keys(job: Job, entry: int, step: str) -> list[str]:
    """Every key the step's entry can have armed: its deadline, its link's reminders and expiries, and each
    take's hold and warning (with the extension's)."""
    keys = [f"{job.id}:deadline:{step} {point}:#{entry}" for point in ("at_risk", "late")]
    keys += [f"{job.id}:ask:{point} {step}:#{entry} link {n}" for n in (1, 2) for point in ("remind", "expire")]
    task = Task.objects.filter(job=job, entry=entry).first()
    if task is not None:
        keys += _take_keys(task, task.takes)
    return keys


def _take_keys(task: Task, take: int) -> list[str]:
    base = f"{task.job_id}:task:{{}} {task.step}:#{task.entry} take {take}"
    return [base.format(point) + suffix for point in ("warn", "hold") for suffix in ("", "@1")]


def _end_live(armer: Armer, keys: list[str], *, by: str) -> None:
    """End those of ``keys`` still armed or held, as the armer sees them (a firing's view includes what its
    batch armed): ended, not re-armed, so nothing takes their place."""
    live = [k for k in keys if (armer.state(k) or ("",))[0] in ("armed", "held")]
    if live:
        armer.supersede_all(live, by=by)


def _leave(armer: Armer, job: Job, *, why: str) -> None:
    """The job leaves its current step: the step's Task and ask close and the timers they armed end."""
    if not job.step:
        return
    entry = job.step_entry
    Task.objects.filter(job=job, entry=entry, status__in=[Task.Status.OPEN, Task.Status.TAKEN]).update(
        status=Task.Status.DONE if why == "step.done" else Task.Status.CANCELED, closed_at=armer.now, hold_until=None)
    Ask.objects.filter(job=job, entry=entry, scope="", status=Ask.Status.OPEN).update(
        status=Ask.Status.ANSWERED if why == "step.done" else Ask.Status.CANCELED, answered_at=armer.now)
    _end_live(armer, _step_keys(job, entry, job.step), by=why)


def step_done(*, armer: Armer, job: Job, step: str, by: str = "", member: str = "") -> Job:
    """The current step is done: by its Task's member, by the party answering its link, or by the system.
    A step that needs a grant is refused ``needs_grant`` (through the gate) unless one is active now. The
    step's act is charged (deliver.<step>.usd), and the job enters its next step, or is delivered."""
    from .services import job_deliver, post_money

    _open(job)
    svc = registry.get(job.service, job.version)
    current = _current(job, svc, step)
    if current.needs and not Grant.objects.filter(job=job, scope=current.needs, status=Grant.Status.ACTIVE,
                                                  ends_at__gt=armer.now).exists():
        raise Refused("needs_grant", f"{step} needs the {current.needs} grant from "
                                     f"{svc.scopes[current.needs].party}, and none is active",
                      {"step": step, "scope": current.needs})
    task = None
    if current.pool:
        task = Task.objects.filter(job=job, entry=job.step_entry).first()
        if task is None or task.status != Task.Status.TAKEN:
            raise KeepingTimeError(f"{job.id}'s {step} Task is not taken; a member takes it first",
                                   code="task_not_taken", status=409)
        if member and task.member.get_username() != member:
            raise KeepingTimeError(f"{job.id}'s {step} Task is held by another member", code="task_not_yours",
                                   status=403)
        by = by or task.member.get_username()
        Task.objects.filter(pk=task.pk).update(status=Task.Status.DONE, closed_at=armer.now, hold_until=None)
    armer.record("step.done", subject=job.id, data={"step": step, "entry": job.step_entry, "by": by})
    if current.usd:
        post_money(armer=armer, brand_id=job.brand_id, domain=job.domain, kind="charge", cents=round(current.usd * 100),
                   memo=f"{job.service} {job.period} · {step} done", owed_at=armer.now, key_owner=job.id,
                   occurrence=f"{step} #{job.step_entry}", subscription=job.subscription, job=job, step=step)
    if current.pay and task is not None:  # the member's share, as the act commits: a lapse after leaves it whole
        post_money(armer=armer, brand_id=job.brand_id, domain=job.domain, kind="pay", cents=current.pay_cents,
                   memo=f"{job.service} {job.period} · {step} · pay to {by}", owed_at=armer.now, key_owner=job.id,
                   occurrence=f"{step} #{job.step_entry}", subscription=job.subscription, job=job, step=step,
                   member_id=task.member_id)
    _leave(armer, job, why="step.done")
    nxt = svc.next_step(step)
    if nxt is None:
        job.step = ""
        job.save(update_fields=["step"])
        return job_deliver(armer=armer, job=job)
    step_enter(armer=armer, job=job, step=nxt, by=f"{step} done")
    return job


def _current(job: Job, svc: Service, step: str) -> Step:
    declared = svc.step(step)
    if declared is None:
        raise KeepingTimeError(f"{job.service} has no step {step!r}; its steps: "
                               f"{', '.join(s.name for s in svc.steps) or 'none'}", code="unknown_step", status=404)
    if job.step != step:
        raise KeepingTimeError(f"{job.id} is at {job.step or 'no step'}, not {step}", code="step_not_current",
                               status=409)
    return declared


def step_goto(*, armer: Armer, job: Job, step: str, by: str) -> bool:
    """A signal's goto: the job leaves its step for ``step``. A job already there stays (False)."""
    svc = registry.get(job.service, job.version)
    target = svc.step(step)
    if target is None or job.status != Job.Status.OPEN or job.step == step:
        return False
    _leave(armer, job, why="step.left")
    step_enter(armer=armer, job=job, step=target, by=by)
    return True


# -- Tasks and holds ---------------------------------------------------------------------------------------
def _member(username: str, brand_id: str):
    """The brand's member of that username. Anyone else, of another brand or of none, is the same answer,
    so a key can't tell another brand's usernames from names nobody has."""
    user = get_user_model().objects.filter(username=username, is_active=True, memberships__brand_id=brand_id).first()
    if user is None:
        raise KeepingTimeError(f"no member {username!r} in this brand", code="unknown_member", status=404)
    return user


def task_take(*, armer: Armer, task: Task, member: str) -> Task:
    """A member of the pool takes the Task for the pool's hold; warned at three quarters of it. Who is in the
    pool is the brand's data (PoolMember, services/members.py), not the Service's code: a member added to
    the pool takes the next open Task at once, and one taken out no longer can."""
    job = task.job
    _open(job)
    svc = registry.get(job.service, job.version)
    if not in_pool(brand_id=job.brand_id, pool=task.pool, username=member):
        raise KeepingTimeError(f"{member} is not in the {task.pool} pool", code="not_in_pool", status=403)
    if task.status != Task.Status.OPEN:
        raise KeepingTimeError(f"{task.id} is {task.status}; only an open Task is taken", code="task_not_open",
                               status=409)
    user = _member(member, job.brand_id)
    now = armer.now
    task.status, task.member, task.takes, task.taken_at, task.extended = Task.Status.TAKEN, user, task.takes + 1, now, False
    task.hold_until = now + svc.pool_hold[task.pool]
    task.save(update_fields=["status", "member", "takes", "taken_at", "extended", "hold_until"])
    _arm_hold(armer, task, start=now, move=0)
    armer.record("task.taken", subject=job.id, data={"task": task.id, "step": task.step, "member": member,
                                                     "hold_until": iso_z(task.hold_until)})
    return task


def _hold_key(task: Task, point: str, move: int) -> str:
    base = f"{task.job_id}:task:{point} {task.step}:#{task.entry} take {task.takes}"
    return base if move == 0 else f"{base}@{move}"


def _arm_hold(armer: Armer, task: Task, *, start: datetime, move: int) -> None:
    job = task.job
    for point, owed in (("warn", three_quarters(start, task.hold_until)), ("hold", task.hold_until)):
        armer.arm(_hold_key(task, point, move), owed_at=owed, handler=TASK,
                  data={"task": task.id, "point": point, "take": task.takes}, opened_at=job.opened_at,
                  version=job.version)


def task_extend(*, armer: Armer, task: Task, member: str) -> Task:
    """Extend the hold once per Task (giving it back and taking it again does not make a second), by the pool's
    hold from its end. A second extend is refused (hold_extended) and
    nothing changes. No timer moves: the hold's end reads hold_until when it fires."""
    if task.status != Task.Status.TAKEN or task.member.get_username() != member:
        raise KeepingTimeError(f"{task.id} is not held by {member}", code="task_not_yours", status=403)
    if task.extended or task.extensions:
        raise KeepingTimeError(f"{task.id}'s hold was extended once already; it ends {iso_z(task.hold_until)}",
                               code="hold_extended", status=409)
    svc = registry.get(task.job.service, task.job.version)
    was = task.hold_until
    task.hold_until, task.extended, task.extensions = was + svc.pool_hold[task.pool], True, task.extensions + 1
    task.save(update_fields=["hold_until", "extended", "extensions"])
    armer.record("task.hold_extended", subject=task.job_id, data={"task": task.id, "member": member,
                                                                  "from": iso_z(was), "to": iso_z(task.hold_until)})
    return task


def task_release(*, armer: Armer, task: Task, member: str) -> Task:
    """The member gives the Task back to the pool before the hold ends."""
    if task.status != Task.Status.TAKEN or task.member.get_username() != member:
        raise KeepingTimeError(f"{task.id} is not held by {member}", code="task_not_yours", status=403)
    _reopen_task(armer, task, why="released")
    return task


def _reopen_task(armer: Armer, task: Task, *, why: str) -> None:
    member = task.member.get_username() if task.member else ""
    _end_live(armer, _take_keys(task, task.takes), by=f"task.{why}")
    task.status, task.member, task.hold_until, task.extended = Task.Status.OPEN, None, None, False
    task.save(update_fields=["status", "member", "hold_until", "extended"])
    armer.record("task.reopened", subject=task.job_id, data={"task": task.id, "member": member, "why": why})


def fire_task(f: Firing) -> None:
    task = Task.objects.select_related("job", "member").get(pk=f.timer.data["task"])
    point, take = f.timer.data["point"], int(f.timer.data["take"])
    if task.status != Task.Status.TAKEN or task.takes != take:
        f.what = f"skipped · {task.id} is {task.status}"
        return
    armer = FiringArmer(f)
    member = task.member.get_username()
    if task.hold_until > f.instant:
        # Extended since this timer was armed: the next end (and its warning) from the extension.
        if point == "hold":
            move = (f.key.move or 0) + 1
            _arm_hold(armer, task, start=f.instant, move=move)
            f.what = f"{task.id} · hold extended to {iso_z(task.hold_until)}"
            return
        if f.key.move is None and task.extended:
            f.what = f"{task.id} · extended: warned at three quarters of the extension"
            return
    if point == "warn":
        f.record("task.hold_warning", subject=task.job_id, data={"task": task.id, "member": member,
                                                                  "hold_until": iso_z(task.hold_until)})
        notify(f, kind="task.hold_ending", subject=task.id, recipients=[member],
               message=f"Your hold on {task.step} ({task.job.service} {task.job.period}) ends "
                       f"{when(task.hold_until, task.brand_id)}; extend it once, or it opens again for the pool")
        f.what = f"{task.id} · {member}'s hold ends {iso_z(task.hold_until)}"
        return
    _reopen_task(armer, task, why="hold_ended")
    f.what = f"{task.id} · {member}'s hold ended · open again for {task.pool}"


# -- asks and grants ---------------------------------------------------------------------------------------
def ask_answer(*, armer: Armer, job: Job, step: str, party: str = "") -> Job:
    """The party answered through the link: its step is done. An answer is activity on the job."""
    from .services import job_activity

    _open(job)
    svc = registry.get(job.service, job.version)
    current = _current(job, svc, step)
    if not current.party:
        raise KeepingTimeError(f"{step} is not a party's step", code="not_an_ask", status=409)
    ask = Ask.objects.filter(job=job, entry=job.step_entry, scope="").first()
    if ask is None or ask.status != Ask.Status.OPEN:
        raise KeepingTimeError(f"{job.id}'s link for {step} is not open", code="ask_not_open", status=409)
    job_activity(armer=armer, job=job, what=f"{party or current.party} answered {step}")
    return step_done(armer=armer, job=job, step=step, by=party or current.party)


def grant_give(*, armer: Armer, job: Job, scope: str) -> Grant:
    """The party grants ``scope`` for its term (scope.<g>.for); a grant asked for again is answered."""
    _open(job)
    svc = registry.get(job.service, job.version)
    if scope not in svc.scopes:
        raise KeepingTimeError(f"{job.service} declares no scope {scope!r}; scopes: "
                               f"{', '.join(svc.scopes) or 'none'}", code="unknown_scope", status=404)
    decl = svc.scopes[scope]
    now = armer.now
    previous = list(Grant.objects.filter(job=job, scope=scope).order_by("number"))
    active = [g for g in previous if g.status == Grant.Status.ACTIVE and g.ends_at > now]
    if active:
        raise KeepingTimeError(f"{scope} is granted until {iso_z(active[-1].ends_at)}", code="grant_active",
                               status=409)
    n = len(previous) + 1
    grant = Grant.objects.create(id=new_id("grt", seed=_seed(job.domain, job.id, scope, str(n)), length=10),
                                 brand_id=job.brand_id, domain=job.domain, job=job, scope=scope, number=n,
                                 party=decl.party, granted_at=now, ends_at=now + svc.scope_term[scope])
    Ask.objects.filter(job=job, scope=scope, status=Ask.Status.OPEN).update(status=Ask.Status.ANSWERED,
                                                                             answered_at=now)
    armer.arm(f"{job.id}:ask:grant {scope}:#{n}", owed_at=grant.ends_at, handler=ASK,
              data={"grant": grant.id, "point": "grant"}, opened_at=job.opened_at, version=job.version)
    armer.record("grant.given", subject=job.id, data={"grant": grant.id, "scope": scope, "party": decl.party,
                                                      "ends": iso_z(grant.ends_at)})
    return grant


def fire_ask(f: Firing) -> None:
    data = f.timer.data
    if data["point"] == "grant":
        return _grant_ended(f)
    ask = Ask.objects.select_related("job").get(pk=data["ask"])
    job, link = ask.job, int(data["link"])
    if ask.status != Ask.Status.OPEN or ask.link != link or job.status != Job.Status.OPEN:
        f.what = f"skipped · {ask.id} is {ask.status}"
        return
    what = ask.step or f"grant {ask.scope}"
    if data["point"] == "remind":
        f.record("ask.reminded", subject=job.id, data={"ask": ask.id, "party": ask.party, "link": link,
                                                      "expires": iso_z(ask.expires_at)})
        notify(f, kind="ask.expiring", subject=ask.id, recipients=[ask.party],
               message=f"The link for {what} ({job.service} {job.period}) expires "
                       f"{when(ask.expires_at, job.brand_id)}")
        f.what = f"{ask.id} · reminded {ask.party} · expires {iso_z(ask.expires_at)}"
        return
    armer = FiringArmer(f)
    if link == 1:
        svc = registry.get(job.service, job.version)
        _send_link(armer, job, step=ask.step, scope=ask.scope, entry=ask.entry, party=ask.party,
                   span=svc.step_expires.get(ask.step), link=2, ask=ask)
        f.what = f"{ask.id} · expired · the link opens once more, to {iso_z(ask.expires_at)}"
        return
    from .services import job_end

    Ask.objects.filter(pk=ask.pk).update(status=Ask.Status.EXPIRED)
    f.record("ask.expired", subject=job.id, data={"ask": ask.id, "party": ask.party, "link": link})
    job_end(armer=armer, job=job, status=Job.Status.LAPSED, reason=f"the link for {what} expired twice")
    notify(f, kind="job.lapsed", subject=job.id, recipients=[ask.party, "owner"],
           message=f"{job.service} {job.period} ended: {ask.party}'s link for {what} expired twice; "
                   "the amount held is returned")
    f.what = f"{ask.id} · expired twice · {job.id} lapsed"


def _grant_ended(f: Firing) -> None:
    grant = Grant.objects.select_related("job").get(pk=f.timer.data["grant"])
    job = grant.job
    if grant.status != Grant.Status.ACTIVE:
        f.what = f"skipped · {grant.id} {grant.status}"
        return
    Grant.objects.filter(pk=grant.pk).update(status=Grant.Status.ENDED)
    f.record("grant.ended", subject=job.id, data={"grant": grant.id, "scope": grant.scope, "party": grant.party})
    if job.status != Job.Status.OPEN:
        f.what = f"{grant.id} · {grant.scope} ended"
        return
    # The party is asked again (no expiry: a step that needs it waits, refused needs_grant, until it comes).
    try:
        with transaction.atomic():
            _send_link(FiringArmer(f), job, step="", scope=grant.scope, entry=grant.number, party=grant.party,
                       span=None, link=1)
    except IntegrityError:
        pass
    notify(f, kind="grant.ended", subject=job.id, recipients=[grant.party],
           message=f"Your {grant.scope} grant for {job.service} {job.period} ended; grant it again to go on")
    f.what = f"{grant.id} · {grant.scope} ended · {grant.party} asked again"


# -- step deadlines ----------------------------------------------------------------------------------------
def fire_step_deadline(f: Firing) -> None:
    data = f.timer.data
    job = Job.objects.get(pk=data["job"])
    if job.status != Job.Status.OPEN or job.step_entry != int(data["entry"]):
        f.what = f"skipped · {job.id} left {data['step']}"
        return
    f.record(f"step.{data['point']}", subject=job.id, data={"step": data["step"], "entry": data["entry"],
                                                            "due": data["due"]})
    f.what = f"{job.id} · {data['step']} {data['point'].replace('_', ' ')} · due {data['due']}"


# -- windows -----------------------------------------------------------------------------------------------
def window_open(*, armer: Armer, member: str, span: timedelta | relativedelta, brand_id: str) -> Window:
    """A member's standby window, open from now for ``span``; its end is a timer (place 7)."""
    user = _member(member, brand_id)
    now = armer.now
    closes = now + span
    if closes <= now:
        raise KeepingTimeError("a standby window lasts a positive span", code="invalid_span")
    try:
        with transaction.atomic():
            win = Window.objects.create(id=new_id("win", seed=_seed(armer.domain, member, now.isoformat()),
                                                  length=10),
                                        brand_id=brand_id, domain=armer.domain, member=user, opened_at=now,
                                        closes_at=closes)
    except IntegrityError:
        raise KeepingTimeError(f"{member} has a standby window open already", code="window_open",
                               status=409) from None
    armer.arm(f"{win.id}:window:standby:open", owed_at=closes, handler=WINDOW, data={"window": win.id},
              opened_at=now)
    armer.record("window.opened", subject=win.id, data={"member": member, "closes": iso_z(closes)})
    return win


def window_close(*, armer: Armer, window: Window, why: str = "closed") -> Window:
    if window.status != Window.Status.OPEN:
        raise KeepingTimeError(f"{window.id} is closed", code="window_closed", status=409)
    window.status, window.closed_at = Window.Status.CLOSED, armer.now
    window.save(update_fields=["status", "closed_at"])
    if why == "closed":
        armer.supersede(f"{window.id}:window:standby:open", by="window.closed")
    armer.record("window.closed", subject=window.id, data={"member": window.member.get_username(), "why": why})
    return window


def fire_window(f: Firing) -> None:
    win = Window.objects.select_related("member").get(pk=f.timer.data["window"])
    if win.status != Window.Status.OPEN:
        f.what = f"skipped · {win.id} closed"
        return
    window_close(armer=FiringArmer(f), window=win, why="ended")
    f.what = f"{win.id} · {win.member.get_username()}'s standby ended"


# -- policy ------------------------------------------------------------------------------------------------
def policy_value(*, brand_id: str, domain: str, svc: Service, name: str) -> int:
    row = PolicyValue.objects.filter(brand_id=brand_id, domain=domain, service=svc.name, name=name).values_list(
        "value", flat=True).first()
    return row if row is not None else svc.policy[name]


def signal_span(job: Job, svc: Service, name: str) -> relativedelta:
    """A signal's silent span: declared, or the brand's policy value in days."""
    silent = svc.signals[name].silent
    if silent in svc.policy:
        return relativedelta(days=policy_value(brand_id=job.brand_id, domain=job.domain, svc=svc, name=silent))
    return svc.silent[name]


@transaction.atomic
def policy_set(*, armer: Armer, service: str, name: str, value: int) -> list[str]:
    """Set the brand's ``service.name`` (stall_days): each open job's silent timer that reads it is
    superseded (policy.set) and re-armed from the job's last activity with the new span. Returns the keys
    armed."""
    from .services import SIGNAL, signal_key

    svc = registry.get(service)
    if name not in svc.policy:
        raise KeepingTimeError(f"{service} has no policy {name!r}; its policy: {', '.join(svc.policy) or 'none'}",
                               code="unknown_policy", status=404)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3650:
        raise KeepingTimeError(f"{name} is a whole number of days from 1 to 3650, not {value!r}",
                               code="invalid_policy_value")
    domain, brand_id = armer.domain, armer.brand_id
    old = PolicyValue.objects.filter(brand_id=brand_id, domain=domain, service=service, name=name).first()
    PolicyValue.objects.update_or_create(brand_id=brand_id, domain=domain, service=service, name=name,
                                         defaults={"value": value, "set_at": armer.now})
    armer.record("policy.set", subject=service, data={"name": name, "from": old.value if old else svc.policy[name],
                                                      "to": value})
    armed = []
    for job in Job.objects.filter(brand_id=brand_id, domain=domain, service=service,
                                  status=Job.Status.OPEN).order_by("opened_at", "id"):
        jsvc = registry.get(job.service, job.version)
        for sig, decl in jsvc.signals.items():
            if decl.silent != name:
                continue
            base = signal_key(job, sig)
            move, key = _last(armer, base)
            if key is None or armer.state(key)[0] != "armed":
                continue
            since = job.last_activity_at or job.opened_at
            nxt = f"{base}@{move + 1}"
            armer.arm(nxt, owed_at=max(since + relativedelta(days=value), armer.now), handler=SIGNAL,
                      data={"job": job.id, "signal": sig, "since": since.isoformat()}, opened_at=job.opened_at,
                      version=job.version)
            armer.supersede(key, by=Rearm.POLICY_SET, successor=nxt)
            armed.append(nxt)
    return armed


def _last(armer: Armer, base: str) -> tuple[int, str | None]:
    """The last key of ``base``'s chain (base, base@1, base@2 …) and its move."""
    if armer.state(base) is None:
        return 0, None
    move = 0
    while armer.state(f"{base}@{move + 1}") is not None:
        move += 1
    return move, base if move == 0 else f"{base}@{move}"


# -- scripted acts: what people do, on a test clock, so every way of a compare replays it -------------------
ACT = "services.act"
ACTS = ("take", "extend", "release", "done", "answer", "grant", "activity", "policy", "window")


def fire_act(f: Firing) -> None:
    """A person's act scheduled on a test clock (the example's "grace takes the appraisal"). It runs the
    same service function the API and the portals call. A refusal the gate makes (needs_grant) is the
    gate's; one the act's own rules make (hold_extended) is recorded as act.refused, and nothing changes."""
    from .services import job_activity

    d = f.timer.data
    act, armer = d["act"], FiringArmer(f)
    try:
        if act == "policy":
            armed = policy_set(armer=armer, service=d["service"], name=d["name"], value=int(d["value"]))
            f.what = f"policy.set {d['service']}.{d['name']} = {d['value']} · {len(armed)} re-armed"
            return
        if act == "window":
            win = window_open(armer=armer, member=d["member"], span=timedelta(hours=int(d["hours"])),
                              brand_id=f.timer.brand_id)
            f.what = f"{d['member']} on standby until {iso_z(win.closes_at)}"
            return
        job = Job.objects.get(domain=f.domain, subject_id=d["subject"], period=d["period"], service=d["service"])
        if act in ("take", "extend", "release"):
            task = Task.objects.select_related("job", "member").filter(job=job, entry=job.step_entry).first()
            if task is None:
                raise KeepingTimeError(f"{job.id} has no Task at {job.step or 'no step'}", code="no_task", status=409)
            {"take": task_take, "extend": task_extend, "release": task_release}[act](
                armer=armer, task=task, member=d["member"])
        elif act == "done":
            step_done(armer=armer, job=job, step=d["step"], member=d.get("member", ""))
        elif act == "answer":
            ask_answer(armer=armer, job=job, step=d["step"])
        elif act == "grant":
            grant_give(armer=armer, job=job, scope=d["scope"])
        elif act == "activity":
            job_activity(armer=armer, job=job, what=d.get("what", ""))
        f.what = f"{act} · {job.id}" + (f" · {d['member']}" if d.get("member") else "")
    except Refused:
        raise
    except KeepingTimeError as exc:
        f.record("act.refused", data={"act": act, "code": exc.code, "message": str(exc)})
        f.what = f"{act} refused {exc.code}"


def register() -> None:
    for name, fn in ((TASK, fire_task), (ASK, fire_ask), (WINDOW, fire_window), (STEP_DEADLINE, fire_step_deadline),
                     (ACT, fire_act)):
        handlers.register(name, fn, atomic=True, replace=True)
