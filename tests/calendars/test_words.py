"""How the apps say a time (calendars/words.py): in the reader's zone, named, and how far it is. No database."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from calendars.words import day, local, until

NOW = datetime(2027, 10, 20, 14, 30, tzinfo=UTC)


def test_a_time_is_said_in_the_readers_zone_with_its_name():
    la, ny = ZoneInfo("America/Los_Angeles"), ZoneInfo("America/New_York")
    assert local(datetime(2027, 10, 22, 14, 30, tzinfo=UTC), la) == "Fri 22 Oct 2027, 07:30 PDT"
    # A New York date closing at 23:59 is that day there, not the next (as UTC would say it).
    assert local(datetime(2028, 4, 19, 3, 59, tzinfo=UTC), ny) == "Tue 18 Apr 2028, 23:59 EDT"
    assert local(datetime(2027, 12, 1, 3, 59, tzinfo=UTC), ny) == "Tue 30 Nov 2027, 22:59 EST"
    assert local(None, la) == "" and day(date(2028, 4, 18)) == "Tue 18 Apr 2028"


def test_how_far_a_time_is_from_now():
    assert until(NOW + timedelta(days=2), NOW) == "in 2 days"
    assert until(NOW + timedelta(days=2), NOW, left=True) == "2 days left"
    assert until(NOW + timedelta(hours=3, minutes=10), NOW, left=True) == "3 h left"
    assert until(NOW + timedelta(minutes=20), NOW) == "in 20 min"
    assert until(NOW - timedelta(hours=5), NOW) == "5 h ago"
    assert until(NOW + timedelta(seconds=30), NOW) == "now" and until(None, NOW) == ""


def test_far_times_are_said_in_months_and_years():
    assert until(NOW + timedelta(days=60), NOW) == "in 60 days"
    assert until(NOW + timedelta(days=89), NOW) == "in 3 months"
    assert until(NOW + timedelta(days=6920), NOW) == "in 19 years"
