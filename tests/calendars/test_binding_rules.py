"""Which closed days bind a date, pure: the roll over two calendars (the binding one's days kept, the customer's
added, whose said), and what a clock may write as its calendar, checked when its Service loads."""

from __future__ import annotations

import sys
import types
from datetime import date

import pytest

from calendars.civil import bound, calendar_from
from calendars.specs import CalendarSpec, DueInput, SpecError
from services import registry
from services.declare import Period, Service, ServiceError, SubjectSpec, clock

FEDERAL = calendar_from(zone="America/New_York", holiday_country="US", holiday_subdiv="DC", name="US federal")
LOS_ANGELES = calendar_from(zone="America/Los_Angeles", holiday_country="US", holiday_subdiv="CA",
                            closed_days={date(2028, 4, 18): "office move"}, name="Los Angeles")


def test_the_binding_calendars_closed_days_stay_and_the_customers_add_and_each_says_whose():
    assert LOS_ANGELES.roll(date(2028, 4, 15)).date == date(2028, 4, 17)  # California's alone: Monday
    cal = bound(LOS_ANGELES, FEDERAL)
    assert (cal.zone_name, cal.closes) == ("America/Los_Angeles", LOS_ANGELES.closes)  # the customer's zone
    r = cal.roll(date(2028, 4, 15))
    assert r.date == date(2028, 4, 19)  # past the federal Emancipation Day, then the customer's own day
    assert r.why == ("Saturday 2028-04-15: a weekend, on the US federal calendar; "
                     "Sunday 2028-04-16: a weekend, Emancipation Day, on the US federal calendar; "
                     "Monday 2028-04-17: Emancipation Day (observed), on the US federal calendar; "
                     "Tuesday 2028-04-18: office move, on the Los Angeles calendar")
    assert r.reason == "office move, on the Los Angeles calendar" and r.whose == "Los Angeles"
    assert cal.close_of(date(2028, 4, 19)) == LOS_ANGELES.close_of(date(2028, 4, 19))  # 23:59 PDT
    assert bound(LOS_ANGELES, None) is LOS_ANGELES and bound(FEDERAL, FEDERAL) is FEDERAL


def test_a_day_both_close_is_the_binding_calendars_and_a_reason_of_the_customers_own_is_added():
    ny = calendar_from(zone="America/New_York", holiday_country="US", holiday_subdiv="DC",
                       closed_days={date(2028, 4, 17): "Acme offsite"}, name="apis.tax")
    assert bound(ny, FEDERAL).why_closed(date(2028, 4, 17)) == (
        "Emancipation Day (observed), on the US federal calendar and Acme offsite, on the apis.tax calendar")
    assert bound(ny, FEDERAL).why_closed(date(2028, 4, 15)) == "a weekend, on the US federal calendar"
    assert bound(ny, FEDERAL).why_closed(date(2028, 4, 18)) is None


def test_a_clock_names_its_calendar_per_item_or_by_a_function_else_its_services():
    spec_cal = CalendarSpec("US federal", holidays=("US", "DC"))
    x = DueInput(input={}, keeps={}, period="2027", item="US")
    per_item = clock("file", due=lambda _: date(2028, 4, 15), calendar={"US": spec_cal, "US-CA": "California"})
    assert per_item.calendar_for(x) == spec_cal
    assert per_item.calendar_for(DueInput({}, {}, "2027", "US-CA")) == "California"
    assert per_item.calendar_for(DueInput({}, {}, "2027", "US-NJ")) is None  # no Service calendar: the brand's
    by_fn = clock("file", due=lambda _: date(2028, 4, 15), calendar=lambda i: spec_cal if i.item == "US" else None)
    assert by_fn.calendar_for(x) == spec_cal and by_fn.calendar_for(DueInput({}, {}, "2027", "US-CA")) is None
    wrong = clock("file", due=lambda _: date(2028, 4, 15), calendar=lambda i: 7)
    with pytest.raises(SpecError, match="clocks.file.calendar"):
        wrong.calendar_for(x)
    assert CalendarSpec("x", holidays="US-DC").country_and_subdivision == ("US", "DC")
    assert CalendarSpec("x", holidays=("US",)).country_and_subdivision == ("US", "")


def _load(name: str, **clock_kw) -> None:
    module = types.ModuleType(name)
    module.__file__ = f"/tmp/{name}.py"
    module.svc = Service(name=f"t-{name}", subject=SubjectSpec(kind="t", key="k", period=Period(of="year")),
                         clocks={"file": clock("file", due=lambda _: date(2028, 4, 15), **clock_kw)})
    sys.modules[name] = module
    try:
        registry.load([name])
    finally:
        del sys.modules[name]


@pytest.mark.parametrize(("kw", "field"), [
    ({"calendar": CalendarSpec("Mars", zone="Mars/Olympus")}, "clocks.file.calendar.zone"),
    ({"calendar": {"US": CalendarSpec("US federal", holidays="US-ZZ")}}, "clocks.file.calendar.US.holidays"),
    ({"calendar": CalendarSpec("")}, "clocks.file.calendar"),
])
def test_a_clock_calendar_that_cannot_be_made_stops_the_load_naming_the_field(monkeypatch, kw, field):
    monkeypatch.setattr(registry, "_services", dict(registry._services))
    with pytest.raises(ServiceError, match=rf"/tmp/t_bad_cal\.py: {field.replace('.', '[.]')}"):
        _load("t_bad_cal", **kw)


@pytest.mark.parametrize("written", [7, "", {"US": 7}])
def test_a_clock_calendar_of_the_wrong_kind_is_refused_when_the_clock_is_written(written):
    with pytest.raises(ServiceError, match="clocks.file.calendar"):
        clock("file", due=lambda _: date(2028, 4, 15), calendar=written)
