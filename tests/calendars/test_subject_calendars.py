"""Where a new subject's dates fall (issue 23): the calendar it names, else the one its Service writes, else the
brand's default; a brand with none is refused, never silently UTC with no weekends."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from calendars.brand_calendars import calendar_create
from calendars.models import Calendar
from services import registry
from services.declare import CalendarSpec, Price, Service, ServiceError, SubjectSpec
from services.subjects import subject_create
from timers.errors import KeepingTimeError
from timers.test_clocks import test_clock_create

pytestmark = pytest.mark.django_db

T0 = datetime(2027, 1, 20, 14, tzinfo=UTC)


@pytest.fixture
def club_registered(monkeypatch):
    monkeypatch.setattr(registry, "_services", dict(registry._services))
    registry.load(["tests.support.svc_calendar"])


def test_a_services_calendar_is_made_once_from_its_declaration_and_kept_by_its_subjects(brand, club_registered):
    tc = test_clock_create(brand=brand, frozen_time=T0, name="club")
    a = subject_create(brand=brand, domain=tc.id, kind="club", key="ABC", name="Alpha", now=T0)
    b = subject_create(brand=brand, domain=tc.id, kind="club", key="BCD", name="Beta", now=T0)
    cal = a.calendar
    assert cal.name == "Paris office" and b.calendar_id == cal.id and Calendar.objects.count() == 1
    civil = cal.civil()
    assert (civil.zone_name, civil.closes.strftime("%H:%M"), civil.holiday_country) == ("Europe/Paris", "18:00", "FR")
    assert civil.why_closed(date(2027, 5, 7)) == "bridge day, on the Paris office calendar"  # and whose
    assert civil.why_closed(date(2027, 7, 14))
    assert civil.why_closed(date(2027, 1, 23)) == "a weekend, on the Paris office calendar"
    # A brand's own default does not win over the calendar the Service writes; one the subject names does.
    other = calendar_create(brand=brand, name="Home", zone="UTC", default=True, now=T0)
    c = subject_create(brand=brand, domain=tc.id, kind="club", key="CDE", name="Gamma", now=T0)
    d = subject_create(brand=brand, domain=tc.id, kind="club", key="DEF", name="Delta", calendar=other, now=T0)
    assert (c.calendar_id, d.calendar_id) == (cal.id, other.id)


def test_a_kind_whose_services_write_no_calendar_takes_the_brands_default_and_none_is_refused(brand):
    tc = test_clock_create(brand=brand, frozen_time=T0, name="tax")
    with pytest.raises(KeepingTimeError) as refused:
        subject_create(brand=brand, domain=tc.id, kind="taxpayer", key="12-3456789", name="Acme", now=T0)
    assert refused.value.code == "calendar_required" and refused.value.param == "calendar"
    cal = calendar_create(brand=brand, name="New York", zone="America/New_York", now=T0)
    assert cal.is_default  # the brand's first calendar
    subject = subject_create(brand=brand, domain=tc.id, kind="taxpayer", key="12-3456789", name="Acme", now=T0)
    assert subject.calendar_id == cal.id


def test_a_calendar_written_wrong_stops_the_load_naming_the_file_and_field(monkeypatch):
    import sys
    import types

    monkeypatch.setattr(registry, "_services", dict(registry._services))
    mod = types.ModuleType("tests._bad_cal")
    mod.__file__ = sys.modules["tests.support.svc_calendar"].__file__ if "tests.support.svc_calendar" in sys.modules else __file__
    mod.s = Service(name="t-bad-cal", subject=SubjectSpec(kind="club", key="code"), price=Price(usd=1),
                    calendar=CalendarSpec(name="Mars", zone="Mars/Olympus"))
    monkeypatch.setitem(sys.modules, "tests._bad_cal", mod)
    with pytest.raises(ServiceError, match=r"calendar.zone: an IANA zone"):
        registry.load(["tests._bad_cal"])
    mod.s = Service(name="t-bad-key", subject=SubjectSpec(kind="club", key="code", pattern="[A-Z", example="A"),
                    price=Price(usd=1))
    with pytest.raises(ServiceError, match=r"subject.pattern"):
        registry.load(["tests._bad_cal"])
