"""A batch reads each calendar's closed days once, the calendar that binds a date as well as the subject's own:
fires of dates bound to another calendar than their subject's ask the database nothing per fire for either."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calendars import specs
from calendars.clocks import clock_open
from calendars.models import Calendar, ClockItem, ClosedDay, Subject
from calendars.specs import CalendarSpec, ClockSpec
from tests.conftest import at
from timers.advance import advance
from timers.armer import DirectArmer
from timers.models import Event
from timers.test_clocks import test_clock_create

N = 24
SPEC = specs.register("tests.binding.file", ClockSpec(
    name="file", due=lambda x: date(int(x.period) + 1, 4, 15), items=("US",), rungs=("notice 30d", "notice 7d"),
    calendar=CalendarSpec("t federal", zone="America/New_York", holidays=("US", "DC")),
))


def _queries(ctx: CaptureQueriesContext, table: str) -> int:
    return sum(1 for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")
               and f'FROM "{table}"' in q["sql"])


@pytest.mark.django_db
def test_a_batch_of_bound_dates_reads_each_calendar_once(brand):
    tc = test_clock_create(brand=brand, frozen_time=datetime(2028, 1, 10, tzinfo=UTC), name="bound")
    la = Calendar.objects.create(brand=brand, name="Los Angeles", zone="America/Los_Angeles", holiday_country="US",
                                 holiday_subdiv="CA")
    ClosedDay.objects.create(calendar=la, date=date(2028, 1, 3), why="a day of its own")
    armer = DirectArmer(brand=brand, domain=tc.id)
    for i in range(N):
        subject = Subject.objects.create(brand=brand, domain=tc.id, kind="taxpayer", key_name="ein",
                                         key=f"12-{i:07d}", name=f"Filer {i}", calendar=la, created_at=tc.frozen_time)
        clock_open(armer=armer, brand=brand, domain=tc.id, subject=subject, spec_name="tests.binding.file",
                   owner_ref=f"job_{i:06d}", period="2027")
    federal = Calendar.objects.get(brand=brand, name="t federal")
    items = ClockItem.objects.filter(clock__domain=tc.id)
    assert items.count() == N and set(items.values_list("calendar", flat=True)) == {federal.id}
    assert set(items.values_list("due_date", flat=True)) == {date(2028, 4, 18)}  # the federal calendar's roll
    with CaptureQueriesContext(connection) as ctx:
        advance(tc.id, at("2028-03-20T00:00Z"))  # every date's notice 30d, at one instant
    assert Event.objects.filter(domain=tc.id, type="clock.notice").count() == N
    # Each calendar's closed days once (the batch's, maybe once more as the advance carries to its next), never
    # once a fire; the calendars come with the items they decide.
    assert _queries(ctx, "calendars_closedday") <= 4, [q["sql"] for q in ctx.captured_queries
                                                       if "calendars_closedday" in q["sql"]]
    assert _queries(ctx, "calendars_calendar") <= 2
