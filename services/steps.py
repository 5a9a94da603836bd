"""A job's steps: entering one (its Task for a pool's step, or its link to a party, and its deadline armed
from now), leaving one (its Task and ask closed, the timers they armed ended), and a signal's goto.

The floor under the job's life: ``jobs.job_open`` enters the first step and ``jobs.job_deliver`` and
``jobs.job_end`` leave the current one, while what moves a job on from a step (``acts.step_done``) sits
above the job's life. Writes take an ``armer`` (the firing inside the tick, a DirectArmer outside it).
"""

from __future__ import annotations

from datetime import timedelta

from dateutil.relativedelta import relativedelta

from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError
from timers.timeutil import iso_z, three_quarters

from . import registry
from .declare import Service, Step
from .kinds import ASK, STEP_DEADLINE
from .models import Ask, Job, Task

DAY = timedelta(days=1)


def require_open(job: Job) -> None:
    """Refused ``409 job_not_open`` unless the job is open: only an open job's steps move."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job's steps move", code="job_not_open",
                               status=409)


def current_step(job: Job, svc: Service, step: str) -> Step:
    """The declared step ``step``, refused unless the Service has it and the job is at it now."""
    declared = svc.step(step)
    if declared is None:
        raise KeepingTimeError(f"{job.service} has no step {step!r}; its steps: "
                               f"{', '.join(s.name for s in svc.steps) or 'none'}", code="unknown_step", status=404)
    if job.step != step:
        raise KeepingTimeError(f"{job.id} is at {job.step or 'no step'}, not {step}", code="step_not_current",
                               status=409)
    return declared


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
        Task.objects.create(id=domain_id("tsk", job.domain, job.id, str(entry), length=10),
                            brand_id=job.brand_id, domain=job.domain, job=job, step=step.name, entry=entry,
                            pool=step.pool, due_at=due_at, opened_at=now)
    elif step.party:
        send_link(armer, job, step=step.name, scope="", entry=entry, party=step.party,
                   span=svc.step_expires.get(step.name), link=1)


def send_link(armer: Armer, job: Job, *, step: str, scope: str, entry: int, party: str,
              span: relativedelta | None, link: int, ask: Ask | None = None) -> Ask:
    """The party's link for a step (or a grant's ``scope``): its ask, sent (``link`` 1) or opened once more
    (2, the same ``ask``), and its reminder and expiry armed when it expires."""
    now = armer.now
    expires_at = now + span if span is not None else None
    if ask is None:
        ask = Ask.objects.create(id=domain_id("ask", job.domain, job.id, step or f"grant {scope}", str(entry),
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
        keys += take_keys(task, task.takes)
    return keys


def take_keys(task: Task, take: int) -> list[str]:
    base = f"{task.job_id}:task:{{}} {task.step}:#{task.entry} take {take}"
    return [base.format(point) + suffix for point in ("warn", "hold") for suffix in ("", "@1")]


def end_live(armer: Armer, keys: list[str], *, by: str) -> None:
    """End those of ``keys`` still armed or held, as the armer sees them (a firing's view includes what its
    batch armed): ended, not re-armed, so nothing takes their place."""
    live = [k for k in keys if (armer.state(k) or ("",))[0] in ("armed", "held")]
    if live:
        armer.supersede_all(live, by=by)


def step_leave(armer: Armer, job: Job, *, why: str) -> None:
    """The job leaves its current step: the step's Task and ask close and the timers they armed end."""
    if not job.step:
        return
    entry = job.step_entry
    Task.objects.filter(job=job, entry=entry, status__in=[Task.Status.OPEN, Task.Status.TAKEN]).update(
        status=Task.Status.DONE if why == "step.done" else Task.Status.CANCELED, closed_at=armer.now, hold_until=None)
    Ask.objects.filter(job=job, entry=entry, scope="", status=Ask.Status.OPEN).update(
        status=Ask.Status.ANSWERED if why == "step.done" else Ask.Status.CANCELED, answered_at=armer.now)
    end_live(armer, _step_keys(job, entry, job.step), by=why)


def step_goto(*, armer: Armer, job: Job, step: str, by: str) -> bool:
    """A signal's goto: the job leaves its step for ``step``. A job already there stays (False)."""
    svc = registry.get(job.service, job.version)
    target = svc.step(step)
    if target is None or job.status != Job.Status.OPEN or job.step == step:
        return False
    step_leave(armer, job, why="step.left")
    step_enter(armer=armer, job=job, step=target, by=by)
    return True
