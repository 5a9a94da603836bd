"""A schedule's Runs once started: a tick settles (succeeded, or dead-lettered with its DeadLetter), a Run closes,
the Runs still running are read (once a batch for the HTTP calls the outbox still owes), and when the open Run
closes the oldest buffered fire starts. The firing (timers/schedule_fires.py), the HTTP target's settle
(timers/schedule_http.py) and the domain's jobs (a job's end closes its Run) all come here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from . import batch as batches
from .arming import timer_arm
from .errors import KeepingTimeError
from .ids import is_live, new_id
from .models import Brand, DeadLetter, Outbox, Schedule, ScheduleRun, ScheduleTick
from .schedule_targets import HTTP, START, compact, known_target, runs_by_ref


def settle_tick(tick: ScheduleTick, state: str, now: datetime) -> None:
    ScheduleTick.objects.filter(pk=tick.pk, state=ScheduleTick.State.OPEN).update(state=state, settled_at=now)
    tick.state, tick.settled_at = state, now


def dead_letter(sch: Schedule, tick: ScheduleTick, now: datetime, *, error: str, status: int | None,
                payload: dict[str, Any] | None) -> None:
    """A tick that will not succeed: settled dead-lettered, with its DeadLetter row (once)."""
    settle_tick(tick, ScheduleTick.State.DEAD_LETTERED, now)
    DeadLetter.objects.get_or_create(tick=tick, defaults={
        "id": new_id("dlq", seed=f"{tick.id}|dead"), "schedule": sch, "at": now, "status": status,
        "error": error[:2000], "payload": payload or {}})


def close_run(run: ScheduleRun, now: datetime, outcome: str) -> None:
    """An open Run closes with its outcome (a Service's mint refused, a job's end, a target's refusal)."""
    ScheduleRun.objects.filter(pk=run.pk, state=ScheduleRun.State.OPEN).update(
        state=ScheduleRun.State.CLOSED, closed_at=now, outcome=outcome[:200])
    run.state, run.closed_at, run.outcome = ScheduleRun.State.CLOSED, now, outcome[:200]


def direct_arm(sch: Schedule, *, runtime: bool = False) -> Callable[..., None]:
    # runtime: a settle's release, which lands between an advance's batches (timers.domains.domain_writable)
    def arm(key: str, *, owed_at: datetime, handler: str, data: dict[str, Any], opened_at: datetime, version: str = "") -> None:
        try:
            timer_arm(brand=Brand(id=sch.brand_id), key=key, owed_at=owed_at, domain=sch.domain, handler=handler,
                      data=data, opened_at=opened_at, runtime=runtime)
        except KeepingTimeError as exc:
            if exc.code != "timer_exists":
                raise

    return arm


def open_runs(sch: Schedule) -> list[ScheduleRun]:
    """The Runs still running (one EXISTS when there is none, the common case)."""
    if sch.target_kind == "http":
        if not is_live(sch.domain):
            return []  # on a test clock an HTTP call settles at its fire (schedule_targets.http_open): no query
        held = _http_open_runs(sch)
        if held is not None:
            return held
    runs = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.OPEN)
    kind = known_target(sch.target_kind)
    if kind is not None and kind.still_open is not None:
        runs = kind.still_open(runs, sch)
    if not runs.exists():
        return []
    return list(runs.order_by("intended_at")[:100])


OPEN_HTTP = "timers.schedules.open_http"


def _http_open_runs(sch: Schedule) -> list[ScheduleRun] | None:
    """schedule_targets.http_open for every schedule of the domain at once: the HTTP calls the outbox still owes
    and their open Runs, read once a batch (two queries) instead of at each fire; None outside a batch. The
    batch's own new Runs do not drop it (their calls are queued by this batch, not owed yet: see http_open); any
    other write to the Runs or the outbox does."""
    b = batches.current()
    if b is None:
        return None
    cache = b.cache(OPEN_HTTP, tables=("timers_outbox", "timers_schedulerun"))
    if sch.domain not in cache:
        with b.quiet():
            owed = list(Outbox.objects.filter(domain=sch.domain, transport=HTTP, status__in=["pending", "sending"])
                        .values_list("id", flat=True)[:1000])
            by: dict[str, list[ScheduleRun]] = {}
            if owed:
                for run in runs_by_ref(ScheduleRun.objects.filter(state=ScheduleRun.State.OPEN), owed).order_by(
                        "intended_at"):
                    by.setdefault(run.schedule_id, []).append(run)
        cache[sch.domain] = by
    return list(cache[sch.domain].get(sch.id, ()))[:100]


def release_buffered(sch: Schedule, now: datetime, arm: Callable[..., None]) -> None:
    """The open Run closed: the oldest buffered fire starts now (a timer, so it starts inside the tick)."""
    if sch.deleted_at is not None:
        return  # a deleted schedule's buffered fires were dropped: none starts after the delete
    if sch.overlap not in (Schedule.Overlap.BUFFER_ONE, Schedule.Overlap.BUFFER_ALL):
        return
    if open_runs(sch):
        return
    nxt = ScheduleRun.objects.filter(schedule=sch, state=ScheduleRun.State.BUFFERED).order_by("intended_at").first()
    if nxt is None:
        return
    arm(f"{sch.id}:schedule:start:{compact(nxt.intended_at)}", owed_at=now, handler=START,
        data={"run": nxt.id}, opened_at=sch.created_at)


def schedule_run_closed(*, armer: Any, ref: str, outcome: str) -> ScheduleRun | None:
    """A Run's work ended (its job was delivered, canceled or lapsed): the Run closes with that outcome and
    the oldest buffered fire, if any, starts. ``armer`` is the caller's (a firing's or a direct one)."""
    run = ScheduleRun.objects.select_related("schedule").filter(ref=ref, state=ScheduleRun.State.OPEN).first()
    if run is None:
        return None
    close_run(run, armer.now, outcome)
    if run.schedule.target_kind != Schedule.Target.SUBSCRIPTION:  # a Service's mints keep their record as it was
        armer.record("schedule.run_closed", subject=run.schedule_id, data={"run": run.id, "outcome": outcome})
    release_buffered(run.schedule, armer.now, armer.arm)
    return run
