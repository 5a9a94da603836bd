"""Repins: moving open work to another version, timer by timer, only when someone chooses it (or when a
newer job of the Service joins a subject whose clock ``lives_on: 'subject'``).

The diff is computed, not guessed: the new version's clock spec arms (into a planner, not the database)
what it would arm for each open item at its current move; each armed timer it would not arm at the same
time is superseded ``by: 'repin'``; each it would arm that is not there, and is still ahead, is armed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from calendars import specs
from calendars.clock_keys import rung_key
from calendars.clock_reads import subject_clocks
from calendars.clocks import arm_item
from calendars.closed_days import business_calendar
from calendars.models import Clock, ClockItem
from timers import batch as batches
from timers.armer import Armer
from timers.errors import KeepingTimeError
from timers.models import Timer, Version
from timers.rearm import Rearm

from . import registry
from .kinds import SCHEDULE
from .models import Job


@dataclass(frozen=True)
class Change:
    action: str  # arm | supersede | keep
    key: str
    owed_at: datetime | None


class _Planner:
    """An armer that writes nothing: it collects what a clock spec would arm."""

    def __init__(self, now: datetime):
        self.now = now
        self.arms: dict[str, tuple[datetime, dict]] = {}

    def arm(self, key, *, owed_at, handler, data, opened_at, version=""):
        self.arms[key] = (owed_at, {"handler": handler, "data": data, "opened_at": opened_at})

    def retime(self, key, *, owed_at, by=None):
        if key in self.arms:
            self.arms[key] = (owed_at, self.arms[key][1])

    def supersede(self, *a, **k):
        pass

    def supersede_all(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def state(self, key):
        return None


@dataclass
class _Held:
    key: str
    owed_at: datetime | None


def _in_memory(armer: Armer, plans: dict, armed: dict, existing: set) -> None:
    """Inside the tick what the batch armed or changed is in memory, not yet in the table: read each timer the
    repin weighs as the tick sees it, so one advance and many small ones repin alike."""
    if armer.firing is None:
        return
    state = armer.firing.state
    for key in sorted(set(plans) | set(armed)):
        now = state(key)
        if now is None:
            continue
        existing.add(key)
        if now[0] in ("armed", "held"):
            if key not in armed or armed[key].owed_at != now[1]:
                armed[key] = _Held(key, now[1])
        else:
            armed.pop(key, None)


def clock_repin(*, armer: Armer, clock: Clock, version: str, dry_run: bool,
                by: Rearm = Rearm.CLOCK_REPINNED) -> list[Change]:
    """Repin one clock to ``version``: the diff of its open items' timers, applied unless ``dry_run``."""
    service = clock.spec.partition("@")[0].rpartition(".")[0]
    new_name = registry.clock_spec_name(service, clock.name, version)
    spec = specs.get(new_name)
    cal = business_calendar(clock.subject)
    changes: list[Change] = []
    items = list(ClockItem.objects.filter(clock=clock, status=ClockItem.Status.OPEN).select_related("clock"))
    armed = {t.key: t for t in Timer.objects.filter(Q(owner__startswith=f"{clock.id}#") | Q(owner=clock.id),
                                                    domain=clock.domain, status__in=["armed", "held"])}
    existing = set(Timer.objects.filter(domain=clock.domain, owner__startswith=clock.id).values_list("key", flat=True))
    plans: dict[str, tuple[datetime, dict]] = {}
    chains: dict[str, list[str]] = {}  # an ack rung's day keys, in order: the chain arms one day at a time
    for item in items:
        item.clock = clock
        planner = _Planner(armer.now)
        arm_item(planner, item, spec, cal, move=item.moves)
        for rung in spec.parsed_rungs:
            if rung.kind != "ack":
                continue
            first = rung.day(item.due_date)
            days = max(1, (item.due_date - first).days)
            head = rung_key(item, rung, move=item.moves, day=1)
            chains[head] = [rung_key(item, rung, move=item.moves, day=d) for d in range(1, days + 1)]
            for d in range(2, days + 1):
                owed1, extra = planner.arms[head]
                planner.arms[chains[head][d - 1]] = (cal.at(first + timedelta(days=d - 1), spec.at), {
                    **extra, "data": {**extra["data"], "day": d}})
        plans.update(planner.arms)
    _in_memory(armer, plans, armed, existing)
    mine = {k: t for k, t in armed.items() if any(k.startswith(f"{i.owner_key}:") for i in items)}
    for key, t in sorted(mine.items()):
        want = plans.get(key)
        if want is not None and want[0] == t.owed_at:
            changes.append(Change("keep", key, t.owed_at))
        else:
            changes.append(Change("supersede", key, t.owed_at))
    kept = {c.key for c in changes if c.action == "keep"}
    in_chain = {k: head for head, keys in chains.items() for k in keys}
    started: set[str] = set()
    for key, (owed, _) in sorted(plans.items(), key=lambda kv: (kv[1][0], kv[0])):
        if key in mine or key in existing or owed <= armer.now:
            continue
        head = in_chain.get(key)
        if head is not None:  # only the chain's next day, and only if no day of it runs already
            if head in started or any(k in kept for k in chains[head]):
                continue
            started.add(head)
        changes.append(Change("arm", key, owed))
    if dry_run:
        return changes
    armer.supersede_all([c.key for c in changes if c.action == "supersede"], by=by)
    # The timers the newer bundle arms alike stay, pinned to it: what they arm next is its, and the older
    # version is left with no timer of this clock (it retires once none is left).
    armer.repin([c.key for c in changes if c.action == "keep"], version=version)
    for c in changes:
        if c.action == "arm":
            extra = plans[c.key][1]
            armer.arm(c.key, owed_at=c.owed_at, handler=extra["handler"], data=extra["data"],
                      opened_at=extra["opened_at"], version=version)
    Clock.objects.filter(pk=clock.pk).update(spec=new_name, version=version)
    armer.record("clock.repinned", subject=clock.id, data={
        "to": version, "by": by, "armed": sum(c.action == "arm" for c in changes),
        "superseded": sum(c.action == "supersede" for c in changes)})
    return changes


@transaction.atomic
def job_repin(*, armer: Armer, job: Job, to: Version, dry_run: bool = False) -> list[Change]:
    """The repin an owner chooses: every clock of the job, then the job itself, onto ``to``."""
    if job.status != Job.Status.OPEN:
        raise KeepingTimeError(f"{job.id} is {job.status}; only an open job is repinned", code="job_not_open",
                               status=409)
    if job.service not in to.services:
        raise KeepingTimeError(f"version {to.label} does not declare {job.service!r}", code="version_mismatch")
    registry.get(job.service, to.digest)  # loadable, before anything changes
    changes: list[Change] = []
    for clock in Clock.objects.filter(domain=job.domain, owner_ref=job.id).select_related("subject__calendar"):
        changes += clock_repin(armer=armer, clock=clock, version=to.digest, dry_run=dry_run)
    if not dry_run:
        old = job.version
        Job.objects.filter(pk=job.pk).update(version=to.digest)
        job.version = to.digest
        armer.record("job.repinned", subject=job.id, data={"from": old, "to": to.digest,
                                                           "changes": sum(c.action != "keep" for c in changes)})
    return changes


def repin_subject_clocks(*, armer: Armer, job: Job) -> list[Clock]:
    """A newer job of a Service joins a subject: its clocks that live on the subject repin to the job's version."""
    moved = []
    f = armer.firing
    lives = None if f is None else subject_clocks(domain=job.domain, subject_id=job.subject_id,
                                                  ahead=lambda: _minting_subjects(f))
    if lives is not None and not any(spec.startswith(f"{job.service}.") and version != job.version and ref != job.id
                                     for spec, version, ref in lives):
        return moved  # the batch knows the subject's clocks: none to repin (the query below would find none)
    older = (Clock.objects.filter(domain=job.domain, subject=job.subject, lives_on=Clock.LivesOn.SUBJECT,
                                  spec__startswith=f"{job.service}.", items__status=ClockItem.Status.OPEN)
             .exclude(version=job.version).exclude(owner_ref=job.id).distinct().select_related("subject__calendar"))
    for clock in older:
        clock_repin(armer=armer, clock=clock, version=job.version, dry_run=False)
        moved.append(clock)
    return moved


def _minting_subjects(f) -> set[str]:
    """The subjects of the subscriptions whose mints the batch holds (from the batch's subscriptions)."""
    subs = batches.current().caches.get("services.subscriptions") or {}
    return {s.subject_id for t in f.holding((SCHEDULE,)) if (s := subs.get(t.owner)) is not None}
