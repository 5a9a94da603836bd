"""The armed table holds only what is armed (timers/history.py): what fires or is superseded moves to history, and
every reader still finds it there."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from tests.conftest import T0
from timers import history
from timers.advance import advance
from timers.errors import KeepingTimeError
from timers.gate import wake
from timers.models import Timer
from timers.test_clocks import test_clock_delete

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif("connection.vendor != 'postgresql'")


def tables(*ids: str) -> dict[str, str]:
    """Each timer's table: the partition PostgreSQL keeps its row in."""
    with connection.cursor() as cur:
        cur.execute("SELECT id, tableoid::regclass::text FROM timers_timer WHERE id = ANY(%s)", [list(ids)])
        return dict(cur.fetchall())


def this_month() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM')")
        return f"{history.HISTORY}_{cur.fetchone()[0]}"


@postgresql_only
def test_a_timer_that_fires_or_is_superseded_leaves_the_armed_table_and_is_read_as_before(clock, arm):
    a = arm("job_1:task:prep:2027", T0 + timedelta(hours=1))
    b = arm("job_2:task:prep:2027", T0 + timedelta(hours=2))
    c = arm("job_3:task:prep:2027", T0 + timedelta(days=9))
    assert set(tables(a.id, b.id, c.id).values()) == {history.ARMED}

    advance(clock.id, T0 + timedelta(days=1))
    month = this_month()
    assert tables(a.id, b.id, c.id) == {a.id: month, b.id: month, c.id: history.ARMED}
    # Readers of timers_timer read both: a key, an owner, an id, a status.
    assert Timer.objects.get(pk=a.id).status == "fired"
    assert list(Timer.objects.filter(domain=clock.id, owner="job_2").values_list("status", flat=True)) == ["fired"]
    assert Timer.objects.filter(domain=clock.id).count() == 3
    [again] = wake(domain=clock.id, timer_ids=[a.id])
    assert again.replayed and Timer.objects.get(pk=a.id).wakes == 2
    assert tables(a.id)[a.id] == month  # a wake keeps it where it is

    test_clock_delete(clock=clock)  # supersedes what is still armed: it moves too
    assert tables(c.id) == {c.id: month}
    assert Timer.objects.get(pk=c.id).status == "superseded"
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {history.ARMED} WHERE domain = %s", [clock.id])
        assert cur.fetchone()[0] == 0


def test_a_key_that_fired_is_not_armed_again(clock, arm):
    # No one unique index spans the armed table and history on PostgreSQL: the arm asks history too.
    a = arm("job_1:task:prep:2027", T0 + timedelta(hours=1))
    advance(clock.id, T0 + timedelta(days=1))
    with pytest.raises(KeepingTimeError) as exc:
        arm("job_1:task:prep:2027", T0 + timedelta(days=2))
    assert exc.value.code == "timer_exists"
    assert list(Timer.objects.filter(domain=clock.id).values_list("id", "status")) == [(a.id, "fired")]


@postgresql_only
def test_a_month_without_its_partition_falls_to_the_default_and_is_left_there(clock, arm):
    month = this_month()
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE {month}")  # as if no worker had made it ahead (rolled back with the test)
    a = arm("job_1:task:prep:2027", T0 + timedelta(hours=1))
    advance(clock.id, T0 + timedelta(days=1))
    assert tables(a.id) == {a.id: f"{history.HISTORY}_default"}  # the fire did not fail for want of it
    assert history.ensure_partitions() == []  # the month has rows in the default partition: left there
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)", [month])
        assert cur.fetchone()[0] is None


@postgresql_only
def test_months_ahead_are_made_once(db):
    with connection.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s", [history.HISTORY])
        months = {r[0] for r in cur.fetchall()}
    assert this_month() in months and f"{history.HISTORY}_default" in months
    assert len(months) == history.AHEAD + 2
    assert history.ensure_partitions() == []  # already there: nothing made, nothing raised
