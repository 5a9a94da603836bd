"""Calendar math, pure: closing minutes, the roll, DST both ways, a 30-minute shift. No database."""

from datetime import date, time

import pytest

from calendars.civil import calendar_from
from calendars.offsets import OffsetError, parse_offset, parse_rung
from calendars.specs import ClockSpec, SpecError
from tests.conftest import at

NY = calendar_from(zone="America/New_York", holiday_country="US", holiday_subdiv="DC")
LORD_HOWE = calendar_from(zone="Australia/Lord_Howe", weekends=())


def test_roll_names_every_closed_day_and_the_last_reason():
    r = NY.roll(date(2028, 4, 15))
    assert r.date == date(2028, 4, 18)
    assert r.reason == "Emancipation Day (observed)"
    assert r.why == ("Saturday 2028-04-15: a weekend; Sunday 2028-04-16: a weekend, Emancipation Day; "
                     "Monday 2028-04-17: Emancipation Day (observed)")
    assert NY.roll(date(2028, 10, 15)).date == date(2028, 10, 16)
    assert NY.roll(date(2028, 11, 15)).date == date(2028, 11, 15) and not NY.roll(date(2028, 11, 15)).moved


def test_hand_written_closed_days_join_the_holidays():
    cal = calendar_from(zone="America/New_York", holiday_country="US", closed_days={date(2028, 4, 18): "IRS"})
    assert cal.roll(date(2028, 4, 18)).date == date(2028, 4, 19)
    assert calendar_from(zone="UTC", weekends=()).roll(date(2028, 4, 15)).date == date(2028, 4, 15)


def test_on_time_means_through_the_last_instant_of_the_closing_minute():
    d = date(2028, 4, 18)
    assert NY.close_of(d) == at("2028-04-19T03:59Z")
    assert NY.on_time(at("2028-04-19T03:59:59.999Z"), d)
    assert not NY.on_time(at("2028-04-19T04:00Z"), d)


def test_new_york_spring_forward_rings_at_the_next_minute_that_exists():
    # 2027-03-14: 02:00 EST jumps to 03:00 EDT. 02:30 never happens.
    assert NY.at(date(2027, 3, 14), time(2, 30)) == at("2027-03-14T07:00Z")  # 03:00 EDT
    assert NY.at(date(2027, 3, 14), time(3, 0)) == at("2027-03-14T07:00Z")
    assert NY.at(date(2027, 3, 14), time(1, 59)) == at("2027-03-14T06:59Z")


def test_new_york_fall_back_rings_at_the_first_occurrence():
    # 2027-11-07: 01:00–02:00 happens twice; 01:30 rings at the first, in EDT.
    assert NY.at(date(2027, 11, 7), time(1, 30)) == at("2027-11-07T05:30Z")
    assert NY.at(date(2027, 11, 7), time(2, 30)) == at("2027-11-07T07:30Z")  # EST, after the repeat


def test_lord_howe_thirty_minute_shift_both_ways():
    # 2027-10-03 02:00 +10:30 jumps to 02:30 +11:00; 2027-04-04 02:00 +11:00 falls back to 01:30 +10:30.
    assert LORD_HOWE.at(date(2027, 10, 3), time(2, 15)) == at("2027-10-02T15:30Z")  # 02:30 +11
    assert LORD_HOWE.at(date(2027, 4, 4), time(1, 45)) == at("2027-04-03T14:45Z")  # first: +11
    assert LORD_HOWE.local(at("2027-04-03T15:15Z")).strftime("%H:%M%z") == "01:45+1030"  # the second one


@pytest.mark.parametrize(("text", "kind", "step"), [("notice 90d", "notice", None), ("escalate 7d", "escalate", None),
                                                    ("ack daily 7d", "ack", None), ("run tentative 3d", "run", "tentative")])
def test_rungs(text, kind, step):
    rung = parse_rung(text)
    assert (rung.kind, rung.step) == (kind, step)
    assert rung.day(date(2028, 4, 18)) <= date(2028, 4, 15)


@pytest.mark.parametrize("text", ["notice", "notice 90", "remind 3d", "ack 7d", "run 3d", "notice 0d"])
def test_bad_rungs(text):
    with pytest.raises(OffsetError):
        parse_rung(text)


def test_offsets():
    assert parse_offset("5d before file", anchors=("file", "pay")).apply(date(2028, 4, 18)) == date(2028, 4, 13)
    assert parse_offset("1mo after end").apply(date(2027, 12, 31)) == date(2028, 1, 31)
    with pytest.raises(OffsetError, match="names 'fiel'"):
        parse_offset("5d before fiel", anchors=("file", "pay"))


def test_a_malformed_rung_is_an_error_at_load_naming_the_file_and_field():
    with pytest.raises(SpecError, match=r"services/annual_return.py: clocks.file.rungs: 'notice ninety'"):
        ClockSpec(name="file", due=lambda x: date(2028, 4, 15), rungs=("notice ninety",),
                  where="services/annual_return.py")
    with pytest.raises(SpecError, match="runs.tentative"):
        ClockSpec(name="file", due=lambda x: date(2028, 4, 15), runs={"tentative": "extend"})
