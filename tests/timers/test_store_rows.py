"""The tick's store on PostgreSQL (timers/store.py): a batch's update sends a column the same in every row as one
value and the rest as arrays, each row keeping its own values; the claim's rows build Items positionally; binary
jsonb {} is read and written without json's Python, into a fresh dict each time."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.db import connection, transaction

from tests.conftest import T0
from timers.engine import TIMER_FIELDS, Item
from timers.models import Event, Timer
from timers.store import PIPELINED_UP_TO, PostgresStore

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the PostgreSQL store")
_ = connection  # the skipif condition reads it
N = PIPELINED_UP_TO + 16  # past the pipelined batch: the arrays' update and the COPYs


def test_an_items_first_fields_are_a_rows_columns_in_order():
    assert [f.name for f in dataclasses.fields(Item)][: len(TIMER_FIELDS)] == list(TIMER_FIELDS)


def _armed(arm) -> list[Item]:
    for n in range(N):
        arm(f"job_{n}:task:prep:2027", T0 + timedelta(minutes=n), data={"n": n} if n % 3 else {})
    items = PostgresStore().load_many(_domain(arm), [f"job_{n}:task:prep:2027" for n in range(N)])
    return sorted(items, key=lambda i: i.owed_at)


def _domain(arm) -> str:
    return Timer.objects.values_list("domain", flat=True).first()


def _stored() -> dict[str, tuple]:
    return {t[0]: t[1:] for t in Timer.objects.values_list("id", "status", "fired_at", "attempt", "wakes", "by",
                                                           "superseded_by", "late_by", "tick_pass")}


@postgresql_only
def test_a_batch_update_keeps_each_rows_own_values_and_sends_the_same_ones_once(arm):
    items = _armed(arm)
    for n, item in enumerate(items):
        if n % 2:
            item.status, item.by, item.superseded_by = "superseded", f"by{n}", f"tmr_{n}"
        else:
            item.status, item.fired_at, item.attempt, item.wakes = "fired", T0 + timedelta(seconds=n), 1, 1
            item.late_by = timedelta(0)
        item.tick_pass = 1 + n % 2
    with transaction.atomic():
        PostgresStore().write(domain=items[0].domain or _domain(arm), new=[], changed=items, commits=[], events=[],
                              sends=[])
    got = _stored()
    for n, item in enumerate(items):
        assert got[item.id] == (item.status, item.fired_at, item.attempt, item.wakes, item.by, item.superseded_by,
                                item.late_by, item.tick_pass), n


@postgresql_only
def test_a_batch_of_fires_alike_moves_every_row_with_its_own_time(arm):
    items = _armed(arm)
    for n, item in enumerate(items):
        item.status, item.fired_at, item.attempt, item.wakes = "fired", T0 + timedelta(seconds=n), 1, 1
    with transaction.atomic():
        PostgresStore().write(domain=_domain(arm), new=[], changed=items, commits=[], events=[], sends=[])
    got = _stored()
    assert [got[i.id][:4] for i in items] == [("fired", T0 + timedelta(seconds=n), 1, 1) for n in range(N)]


@postgresql_only
def test_jsonb_empty_and_not_round_trips_each_into_a_dict_of_its_own(arm):
    items = _armed(arm)
    assert [i.data for i in items] == [{"n": n} if n % 3 else {} for n in range(N)]
    empty = [i.data for i in items if not i.data]
    empty[0]["x"] = 1
    assert empty[1] == {}  # not one shared {}
    domain = _domain(arm)
    events = [(f"evt_{n:014d}", domain, items[n].brand_id, "timer.fired", "job", T0, items[n].key, items[n].data,
               T0, timedelta(0)) for n in range(N)]
    with transaction.atomic():
        PostgresStore().write(domain=domain, new=[], changed=[], commits=[], events=events, sends=[])
    got = dict(Event.objects.filter(domain=domain).values_list("id", "data"))
    assert [got[e[0]] for e in events] == [e[7] for e in events]
