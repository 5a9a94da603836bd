"""Schedules' statements: a Run's insert, which the constraint decides, and an HTTP call's settle, which closes
its Runs and succeeds their ticks.

On PostgreSQL the insert is one statement that does nothing on a conflict (elsewhere a savepoint the constraint's
refusal rolls back), and a claim's settled calls are one statement (each update but the last a data-modifying
WITH), their ids bound as binary arrays, where the ORM bound 200 ids as text twice; elsewhere the ORM's two
updates a group.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction

from ..models import ScheduleRun, ScheduleTick
from ..prepared import kept_cursors, together

# A Run, or nothing when (schedule, intended time) has one already: schedule_run_once decides.
RUN_INSERTED = ("INSERT INTO timers_schedulerun (id, schedule_id, intended_at, state, started_at, closed_at, ref, "
                "outcome, cancel_requested_at) VALUES (%s, %s, %s, %s, %s, NULL, '', '', NULL) "
                "ON CONFLICT DO NOTHING RETURNING id")
# A settled call's tick succeeds, if it is still open (params: settled_at, Run ids).
TICKS_SUCCEEDED = ("UPDATE timers_scheduletick SET state = 'succeeded', settled_at = %b "
                   "WHERE run_id = ANY(%b::varchar[]) AND state = 'open'")
# A settled call's Run closes with its outcome, if it is still open (params: closed_at, outcome, Run ids).
RUNS_CLOSED = ("UPDATE timers_schedulerun SET state = 'closed', closed_at = %b, outcome = %b "
               "WHERE id = ANY(%b::varchar[]) AND state = 'open'")


def settle_rows(succeeded: dict[datetime, list[str]], closed: dict[tuple[datetime, str], list[str]]) -> None:
    """Ticks succeed ({settled_at: Run ids}) and Runs close ({(closed_at, outcome): Run ids}), still open ones
    only. A claim's calls are nearly always one group of each: one statement on PostgreSQL."""
    if connection.vendor != "postgresql":
        for now, pks in succeeded.items():
            ScheduleTick.objects.filter(run_id__in=pks, state=ScheduleTick.State.OPEN).update(
                state=ScheduleTick.State.SUCCEEDED, settled_at=now)
        for (now, outcome), pks in closed.items():
            ScheduleRun.objects.filter(pk__in=pks, state=ScheduleRun.State.OPEN).update(
                state=ScheduleRun.State.CLOSED, closed_at=now, outcome=outcome[:200])
        return
    parts: list[tuple[str, list[Any]]] = [(TICKS_SUCCEEDED, [now, pks]) for now, pks in succeeded.items()]
    parts += [(RUNS_CLOSED, [now, outcome[:200], pks]) for (now, outcome), pks in closed.items()]
    if not parts:
        return
    cur, _, _ = kept_cursors()
    cur.execute(together(tuple(sql for sql, _ in parts)), [v for _, ps in parts for v in ps], binary=True)


def insert_run(run: ScheduleRun) -> bool:
    """Insert the Run, or nothing when (schedule, intended time) has one: the constraint decides, not a check."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(RUN_INSERTED, [run.id, run.schedule_id, run.intended_at, run.state, run.started_at])
            return cur.fetchone() is not None
    try:
        with transaction.atomic():
            run.save(force_insert=True)
    except IntegrityError:
        return False
    return True
