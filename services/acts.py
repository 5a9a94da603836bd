"""People's acts that move a job on: a step done (by its Task's member, by the party answering its link, or
by the system: its act charged, and the job enters its next step or is delivered), the party's answer
through its link, and a grant the party gives for its term.

Above the job's life (``jobs``): a step done may deliver the job. Writes take an ``armer`` (the firing
inside the tick, a DirectArmer outside it), so a step moved from the API and one moved by a scripted act on
a test clock land the same way.
"""

from __future__ import annotations

from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError, Refused
from timers.timeutil import iso_z

from . import registry
from .jobs import job_activity, job_deliver
from .kinds import ASK
from .models import Ask, Grant, Job, Task
from .money import post_money
from .steps import current_step, require_open, step_enter, step_leave


def step_done(*, armer: Armer, job: Job, step: str, by: str = "", member: str = "") -> Job:
    """The current step is done: by its Task's member, by the party answering its link, or by the system.
    A step that needs a grant is refused ``needs_grant`` (through the gate) unless one is active now. The
    step's act is charged (deliver.<step>.usd), and the job enters its next step, or is delivered."""
    require_open(job)
    svc = registry.get(job.service, job.version)
    current = current_step(job, svc, step)
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
    step_leave(armer, job, why="step.done")
    nxt = svc.next_step(step)
    if nxt is None:
        job.step = ""
        job.save(update_fields=["step"])
        return job_deliver(armer=armer, job=job)
    step_enter(armer=armer, job=job, step=nxt, by=f"{step} done")
    return job


def ask_answer(*, armer: Armer, job: Job, step: str, party: str = "") -> Job:
    """The party answered through the link: its step is done. An answer is activity on the job."""
    require_open(job)
    svc = registry.get(job.service, job.version)
    current = current_step(job, svc, step)
    if not current.party:
        raise KeepingTimeError(f"{step} is not a party's step", code="not_an_ask", status=409)
    ask = Ask.objects.filter(job=job, entry=job.step_entry, scope="").first()
    if ask is None or ask.status != Ask.Status.OPEN:
        raise KeepingTimeError(f"{job.id}'s link for {step} is not open", code="ask_not_open", status=409)
    job_activity(armer=armer, job=job, what=f"{party or current.party} answered {step}")
    return step_done(armer=armer, job=job, step=step, by=party or current.party)


def grant_give(*, armer: Armer, job: Job, scope: str) -> Grant:
    """The party grants ``scope`` for its term (scope.<g>.for); a grant asked for again is answered."""
    require_open(job)
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
    grant = Grant.objects.create(id=domain_id("grt", job.domain, job.id, scope, str(n), length=10),
                                 brand_id=job.brand_id, domain=job.domain, job=job, scope=scope, number=n,
                                 party=decl.party, granted_at=now, ends_at=now + svc.scope_term[scope])
    Ask.objects.filter(job=job, scope=scope, status=Ask.Status.OPEN).update(status=Ask.Status.ANSWERED,
                                                                             answered_at=now)
    armer.arm(f"{job.id}:ask:grant {scope}:#{n}", owed_at=grant.ends_at, handler=ASK,
              data={"grant": grant.id, "point": "grant"}, opened_at=job.opened_at, version=job.version)
    armer.record("grant.given", subject=job.id, data={"grant": grant.id, "scope": scope, "party": decl.party,
                                                      "ends": iso_z(grant.ends_at)})
    return grant
