"""Tasks and their holds (place 4): a member of the pool takes a pool's step's Task for the pool's hold
(warned at three quarters of it), extends it once, gives it back, or loses it when the hold ends.

No timer follows an extension: the hold's end reads ``hold_until`` when it fires (``people_handlers``) and
arms the next end from the extension. Who is in a pool is the brand's data (``members.in_pool``).
"""

from __future__ import annotations

from datetime import datetime

from calendars.answers import member_of_record_set
from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.models import Membership
from timers.timeutil import iso_z, three_quarters

from . import registry
from .kinds import TASK
from .members import brand_member, in_pool
from .models import Task
from .steps import end_live, require_open, take_keys


def task_take(*, armer: Armer, task: Task, member: str) -> Task:
    """A member of the pool takes the Task for the pool's hold; warned at three quarters of it. Who is in the
    pool is the brand's data (PoolMember, services/members.py), not the Service's code: a member added to
    the pool takes the next open Task at once, and one taken out no longer can."""
    job = task.job
    require_open(job)
    svc = registry.get(job.service, job.version)
    if not in_pool(brand_id=job.brand_id, pool=task.pool, username=member):
        raise KeepingTimeError(f"{member} is not in the {task.pool} pool", code="not_in_pool", status=403)
    if task.status != Task.Status.OPEN:
        raise KeepingTimeError(f"{task.id} is {task.status}; only an open Task is taken", code="task_not_open",
                               status=409)
    user = brand_member(member, job.brand_id)
    now = armer.now
    task.status, task.member, task.takes, task.taken_at, task.extended = Task.Status.TAKEN, user, task.takes + 1, now, False
    task.hold_until = now + svc.pool_hold[task.pool]
    task.save(update_fields=["status", "member", "takes", "taken_at", "extended", "hold_until"])
    arm_hold(armer, task, start=now, move=0)
    armer.record("task.taken", subject=job.id, data={"task": task.id, "step": task.step, "member": member,
                                                     "hold_until": iso_z(task.hold_until)})
    # Who takes the pool's Task is the job's member of record in the pool's name: the job's dates a Service gives
    # ``member:<pool>`` go to them, each on the record after the take.
    membership = Membership.objects.select_related("user").get(user=user, brand_id=job.brand_id)
    member_of_record_set(subject=job.subject, owner_ref=job.id, role=task.pool, member=membership, by=member,
                         armer=armer)
    return task


def _hold_key(task: Task, point: str, move: int) -> str:
    base = f"{task.job_id}:task:{point} {task.step}:#{task.entry} take {task.takes}"
    return base if move == 0 else f"{base}@{move}"


def arm_hold(armer: Armer, task: Task, *, start: datetime, move: int) -> None:
    """Arm the hold's warning (at three quarters) and its end from ``start``, under ``@move`` (0 at the take)."""
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
    task_reopen(armer, task, why="released")
    return task


def task_reopen(armer: Armer, task: Task, *, why: str) -> None:
    """The Task opens again for its pool (given back, its hold ended, its member left): its hold's timers end."""
    member = task.member.get_username() if task.member else ""
    end_live(armer, take_keys(task, task.takes), by=f"task.{why}")
    task.status, task.member, task.hold_until, task.extended = Task.Status.OPEN, None, None, False
    task.save(update_fields=["status", "member", "hold_until", "extended"])
    armer.record("task.reopened", subject=task.job_id, data={"task": task.id, "member": member, "why": why})
