"""What a member who leaves the brand hands over: the clocks they answer for to a successor, each Task they
hold to the successor (in its pool) or back to its pool, and their standby window closed; each on the record
of the clock domain it touches, with why ``member_left``.

Above Tasks and windows (``tasks.task_reopen``, ``windows.window_close``): who a member is and who is in a
pool stay below them, in ``members``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q

from calendars.acts import clock_reassign
from calendars.models import Clock, ClockItem, MemberOfRecord
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError
from timers.ids import brand_domain
from timers.models import Brand, Membership, TestClock
from timers.timeutil import iso_z

from .members import keep_an_owner, member_says, membership_locked, sync_staff
from .models import PoolMember, Task, Window
from .tasks import task_reopen
from .windows import window_close

LEFT = "member_left"  # the why of every handover a removal records
# What a removal hands over: the clocks that still have a date to keep (one that lives on the subject comes
# again each period, so it is handed over even while all its dates are kept).
WAITING = (ClockItem.Status.OPEN, ClockItem.Status.DUE, ClockItem.Status.PASSED)


@dataclass
class Handover:
    """What a removal handed over: clock ids to the successor, Task ids to the successor (in that Task's pool)
    or back to their pool (the successor is not in it), standby windows closed."""

    member: str
    successor: str = ""
    clocks: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    reopened: list[str] = field(default_factory=list)
    windows: list[str] = field(default_factory=list)

    def says(self) -> str:
        """In people's words: "Grace Hopper left; 2 dates and 1 Task went to Linus Pauling."."""
        parts = []
        if self.clocks or self.tasks:
            what = " and ".join(p for p in (_count(len(self.clocks), "date"), _count(len(self.tasks), "Task")) if p)
            parts.append(f"{what} went to {self.successor}")
        if self.reopened:
            n = len(self.reopened)
            parts.append(f"{_count(n, 'Task')} went back to {'its pool' if n == 1 else 'their pools'} "
                         f"({self.successor or 'no successor'} is not in {'it' if n == 1 else 'them'})")
        if self.windows:
            parts.append("their standby window closed")
        return f"{self.member} left" + (f"; {'; '.join(parts)}." if parts else ".")


def _refused(message: str, *, code: str, param: str) -> KeepingTimeError:
    err = KeepingTimeError(message, code=code)
    err.param = param  # the API's answer names the field (timers.api.errors)
    return err


def _count(n: int, what: str) -> str:
    return "" if not n else f"{n} {what}{'s' if n != 1 else ''}"


def _live_domains(qs, brand: Brand):
    """Rows of ``qs`` not on a deleted test clock: nothing lands on one after test_clock.deleted."""
    gone = TestClock.objects.filter(brand=brand, status__in=TestClock.GONE).values("id")
    return qs.exclude(domain__in=gone)


def member_holds(*, brand: Brand, membership: Membership) -> tuple[list[Clock], list[Task]]:
    """What the member answers for in the brand: the clocks that still have a date to keep and are theirs, on
    every clock domain, and the Tasks they hold."""
    if membership.user is None:
        return [], []  # an invite not accepted answers for nothing yet
    clocks = _live_domains(Clock.objects.filter(brand=brand, member=membership), brand).filter(
        Q(lives_on=Clock.LivesOn.SUBJECT) | Q(items__status__in=WAITING)).distinct().order_by("domain", "id")
    tasks = _live_domains(Task.objects.filter(brand=brand, member=membership.user, status=Task.Status.TAKEN),
                          brand).select_related("job", "member").order_by("domain", "id")
    return list(clocks), list(tasks)


def member_remove(*, brand: Brand, membership: Membership, successor: Membership | None,
                  by: str = "the brand") -> Handover:
    """The member leaves the brand. Everything they answer for goes to ``successor``, a member of the same
    brand, each on its own clock domain (a DirectArmer there) and on its record:

    - every clock that names them and still has a date to keep answers for the successor (``clock.reassigned``);
    - each Task they hold goes to the successor if the successor is in that Task's pool (``task.handed_over``:
      the hold runs on as it stood, its timers unchanged, since the hold's end reads the Task when it fires),
      else back to its pool, open for anyone in it (``task.reopened``): a Task is never given to someone
      outside its pool;
    - a standby window they have open closes (``window.closed``).

    Then their pool places and their membership go (the account stays: it may belong to another brand; one
    that owns no brand is no longer staff). Refused, with nothing changed: a successor of another brand or
    none (``successor_not_member``), the member themself (``successor_is_leaver``), no successor while they
    answer for something (``successor_required``), the brand's last owner (``last_owner``)."""
    with transaction.atomic():
        membership = membership_locked(brand, membership)
        if successor is not None:
            if successor.brand_id != brand.id or successor.user_id is None:  # an invite is no one yet
                raise _refused(f"{member_says(successor)} is not a member of {brand.name}", code="successor_not_member",
                           param="successor")
            if successor.pk == membership.pk:
                raise _refused(f"{member_says(membership)} cannot succeed themself: name another member",
                           code="successor_is_leaver", param="successor")
            successor = membership_locked(brand, successor)
        keep_an_owner(brand, membership, "leave")
        clocks, tasks = member_holds(brand=brand, membership=membership)
        tasks = list(Task.objects.select_for_update(of=("self",)).filter(pk__in=[t.pk for t in tasks])
                     .select_related("job", "member").order_by("domain", "id"))  # no take or release meanwhile
        if (clocks or tasks) and successor is None:
            raise _refused(f"{member_says(membership)} answers for "
                       f"{' and '.join(p for p in (_count(len(clocks), 'date'), _count(len(tasks), 'Task')) if p)}: "
                       f"name a successor from {brand.name}'s members", code="successor_required", param="successor")
        user = membership.user
        if user is None:  # an invite withdrawn: its link dies with it
            membership.delete()
            return Handover(member=member_says(membership), successor="")
        leaver = user.get_username()
        done = Handover(member=member_says(membership), successor=member_says(successor) if successor else "")
        armers: dict[str, DirectArmer] = {}

        def armer(domain: str) -> DirectArmer:
            domain = brand_domain(domain, brand.id)
            if domain not in armers:
                armers[domain] = DirectArmer(brand=brand.id, domain=domain)
            return armers[domain]

        for clock in clocks:
            clock_reassign(armer=armer(clock.domain), clock=clock, to=successor, by=by, why=LEFT)
            done.clocks.append(clock.id)
        if successor is not None:  # what they were of record for (a job's preparer) is the successor's now
            MemberOfRecord.objects.filter(brand=brand, member=membership).update(member=successor)
        their_pools = set(PoolMember.objects.filter(brand=brand, membership=successor).values_list("pool", flat=True)
                          ) if successor else set()
        for task in tasks:
            a = armer(task.domain)
            if task.pool in their_pools:
                task.member = successor.user
                task.save(update_fields=["member"])
                a.record("task.handed_over", subject=task.job_id, data={
                    "task": task.id, "step": task.step, "from": leaver, "to": successor.user.get_username(),
                    "hold_until": iso_z(task.hold_until), "by": by, "why": LEFT})
                done.tasks.append(task.id)
            else:
                task_reopen(a, task, why=LEFT)
                done.reopened.append(task.id)
        for win in _live_domains(Window.objects.filter(brand=brand, member=user, status=Window.Status.OPEN),
                                 brand).select_related("member").order_by("domain", "id"):
            window_close(armer=armer(win.domain), window=win)
            done.windows.append(win.id)
        membership.delete()  # its PoolMember rows with it (CASCADE)
        sync_staff(user)
    return done
