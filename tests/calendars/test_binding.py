"""The holidays that bind a date (issue 37), through the API only: the Service names the calendar whose closed
days bind each date (apis.tax's clocks: the federal calendar, with DC's Emancipation Day, IRC 7503), and the
customer's own calendar gives the zone the date closes in and adds its closed days, never removes one.

Expected dates come from zoneinfo and the holidays package, never from the runtime's own roll.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import holidays
import pytest

from services import registry
from tests.support.api import Client
from timers.advance import run_requested_advances

pytestmark = pytest.mark.django_db(transaction=True)

FROZEN = "2027-12-15T14:00:00Z"
MINTED = "2028-02-02T14:00:00Z"  # the 2027 return is minted a month after the year ends
NEW_YORK = {"name": "New York", "zone": "America/New_York", "holidays": "US-NY"}
LOS_ANGELES = {"name": "Los Angeles", "zone": "America/Los_Angeles", "holidays": "US-CA"}
STATES = ["CA", "NY", "NJ"]


# -- the truth, from the holidays package and zoneinfo -------------------------------------------------------
def first_open(civil: date, *calendars: tuple[str, str], closed: tuple[date, ...] = ()) -> date:
    """The first day on or after ``civil`` that is no weekend, no holiday of any (country, subdivision) given,
    and not one of ``closed``."""
    days = [holidays.country_holidays(c, subdiv=s or None, years=[civil.year, civil.year + 1]) for c, s in calendars]
    d = civil
    while d.weekday() >= 5 or d in closed or any(d in h for h in days):
        d += timedelta(days=1)
    return d


def closes_at(d: date, zone: str) -> str:
    """23:59 local on ``d`` in ``zone``, as UTC with Z."""
    return datetime.combine(d, time(23, 59), ZoneInfo(zone)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


FEDERAL = ("US", "DC")  # the federal holidays and the District's: IRC 7503's legal holidays
APRIL_15 = date(2028, 4, 15)


# -- the world, made over the API ------------------------------------------------------------------------------
@pytest.fixture
def api(client_for) -> Client:
    return client_for("apis.tax")


def made(r, status: int = 201) -> dict:
    assert r.status == status, r.body
    return r.body


def customer(api: Client, clock: str, key: str, name: str, calendar: str | None = None) -> dict:
    body = {"kind": "taxpayer", "key": key, "name": name, "test_clock": clock}
    return made(api.post("/subjects", {**body, **({"calendar": calendar} if calendar else {})}))


def advance(api: Client, clock: str, to: str) -> None:
    made(api.post(f"/test_clocks/{clock}/advance", {"to": to}), 202)
    assert run_requested_advances() == 1  # the worker's turn (tick --forever)
    assert made(api.get(f"/test_clocks/{clock}"), 200)["status"] == "ready"


def dates(api: Client, clock: str, subject: str, service: str, period: str) -> dict[str, dict[str, dict]]:
    """A job's clocks, each item as GET /clocks/<id> answers it: {clock name: {item: item}}."""
    jobs = made(api.get(f"/jobs?subject={subject}&test_clock={clock}&limit=100"), 200)["data"]
    job = next(j for j in jobs if j["service"] == service and j["period"] == period)
    found = {}
    for clock_id in job["clocks"]:
        got = made(api.get(f"/clocks/{clock_id}"), 200)
        found[got["name"]] = {i["item"]: i for i in got["items"]}
    return found


@pytest.fixture
def tax(api) -> dict:
    """Acme in New York (its calendar: New York's holidays) and Sunset Labs in Los Angeles (California's), both on
    the Tax Plan since December 2027 (CA, NY and NJ besides the federal return), ticked until the 2027 return is
    minted."""
    clock = made(api.post("/test_clocks", {"frozen_time": FROZEN, "name": "two coasts"}))["id"]
    ny = made(api.post("/calendars", NEW_YORK))  # the brand's first: its default
    la = made(api.post("/calendars", LOS_ANGELES))
    acme = customer(api, clock, "12-3456789", "Acme Robotics")
    sunset = customer(api, clock, "98-7654321", "Sunset Labs", calendar=la["id"])
    assert (acme["calendar"], sunset["calendar"], sunset["zone"]) == (ny["id"], la["id"], "America/Los_Angeles")
    for subject in (acme, sunset):
        made(api.post("/subscriptions", {"subject": subject["id"], "plan": "tax-plan",
                                         "input": {"entity": "C corp", "states": STATES}}))
    advance(api, clock, MINTED)
    return {"clock": clock, "ny": ny, "la": la, "acme": acme, "sunset": sunset}


# -- the truth ---------------------------------------------------------------------------------------------------
def test_both_coasts_file_the_federal_return_on_the_federal_calendar_and_close_in_their_own_zone(api, tax):
    federal_date = first_open(APRIL_15, FEDERAL)
    assert federal_date == date(2028, 4, 18)  # Saturday, Sunday, then Emancipation Day (observed) on Monday
    # What each customer's own calendar would say alone: the bug was Los Angeles on Monday the 17th.
    assert first_open(APRIL_15, ("US", "CA")) == date(2028, 4, 17)
    nj_date = first_open(date(2028, 5, 15), FEDERAL)
    assert nj_date == date(2028, 5, 15)
    for who, zone in (("acme", "America/New_York"), ("sunset", "America/Los_Angeles")):
        got = dates(api, tax["clock"], tax[who]["id"], "annual-return", "2027")
        file, pay = got["file"], got["pay"]
        assert set(file) == {"US", "US-CA", "US-NY", "US-NJ"}, who
        for item in ("US", "US-CA", "US-NY"):
            assert (file[item]["civil"], file[item]["due_date"]) == ("2028-04-15", federal_date.isoformat()), who
            assert file[item]["due_at"] == closes_at(federal_date, zone), (who, item)
            # Whose closed day pushed it: the federal calendar's, said with its name.
            assert file[item]["rolled_why"].endswith(
                "Monday 2028-04-17: Emancipation Day (observed), on the US federal calendar"), (who, file[item])
        assert pay["US"]["due_date"] == federal_date.isoformat() and pay["US"]["due_at"] == closes_at(federal_date, zone)
        assert file["US-NJ"]["due_date"] == nj_date.isoformat() and file["US-NJ"]["due_at"] == closes_at(nj_date, zone)
        assert file["US-NJ"]["rolled_why"] is None
    # Los Angeles closes at 23:59 PDT: 06:59 the next morning, UTC.
    sunset = dates(api, tax["clock"], tax["sunset"]["id"], "annual-return", "2027")
    assert sunset["file"]["US"]["due_at"] == "2028-04-19T06:59:00Z"
    assert sunset["file"]["US"]["local"] == "2028-04-18T23:59:00-07:00"

    # The record says whose closed day it was; the customer's calendar lists it in its zone, saying so too.
    rolled = made(api.get(f"/events?type=clock.rolled&test_clock={tax['clock']}&limit=100"), 200)["data"]
    us = [e["data"] for e in rolled if e["data"]["clock"] == "file" and e["data"]["item"] == "US"
          and e["data"]["from"] == "2028-04-15"]
    assert len(us) == 2 and all(d["to"] == "2028-04-18" and d["closed_on"] == "US federal" for d in us), us
    assert all(d["why"] == "Emancipation Day (observed), on the US federal calendar" for d in us)
    cal = made(api.get(f"/subjects/{tax['sunset']['id']}/calendar?test_clock={tax['clock']}&from=2028-04-01"), 200)
    assert cal["zone"] == "America/Los_Angeles"
    row = next(e for e in cal["data"] if e["what"] == "file · the 2027 return · US")
    assert row["date"] == "2028-04-18" and row["local"] == "2028-04-18T23:59:00-07:00"
    assert row["status"] == ("ahead, rolled from Saturday 2028-04-15: Emancipation Day (observed) on Monday 04-17, "
                             "on the US federal calendar")
    # The federal calendar is the brand's now, made from the Service's declaration when the first return opened.
    federal = [c for c in made(api.get("/calendars"), 200)["data"] if c["name"] == "US federal"]
    assert len(federal) == 1 and federal[0]["holidays"] == "US-DC" and federal[0]["default"] is False


def test_a_customers_own_closed_day_still_pushes_its_dates(api, tax):
    """The customer's calendar adds: a day it closes by hand pushes its own dates, and only its own."""
    moved = made(api.post(f"/calendars/{tax['la']['id']}",
                          {"closed_days": [{"date": "2028-04-18", "why": "Sunset Labs moves office"}]}), 200)
    assert moved["closed_days"] == [{"date": "2028-04-18", "why": "Sunset Labs moves office"}]
    pushed = first_open(APRIL_15, FEDERAL, ("US", "CA"), closed=(date(2028, 4, 18),))
    assert pushed == date(2028, 4, 19)
    sunset = dates(api, tax["clock"], tax["sunset"]["id"], "annual-return", "2027")
    for item in ("US", "US-CA", "US-NY"):
        got = sunset["file"][item]
        assert got["due_date"] == pushed.isoformat() and got["due_at"] == closes_at(pushed, "America/Los_Angeles")
        assert got["moves"] == 1
        assert got["rolled_why"].endswith("Tuesday 2028-04-18: Sunset Labs moves office, on the Los Angeles calendar")
    assert sunset["pay"]["US"]["due_date"] == pushed.isoformat()
    acme = dates(api, tax["clock"], tax["acme"]["id"], "annual-return", "2027")
    assert {i["due_date"] for c in acme.values() for name, i in c.items() if name != "US-NJ"} == {"2028-04-18"}
    moves = made(api.get(f"/events?type=clock.moved&test_clock={tax['clock']}&limit=100"), 200)["data"]
    assert sorted(e["subject"].split("#")[1] for e in moves) == ["US", "US", "US-CA", "US-NY"]  # one line a move
    assert all(e["data"]["by"] == "calendar" and e["data"]["closed_on"] == "Los Angeles" for e in moves)


def test_a_change_to_the_binding_calendar_re_rolls_every_date_bound_to_it(api, tax):
    """No subject keeps its dates on the federal calendar, yet every open date bound to it rolls again."""
    federal = next(c for c in made(api.get("/calendars"), 200)["data"] if c["name"] == "US federal")
    made(api.post(f"/calendars/{federal['id']}",
                  {"closed_days": [{"date": "2028-04-18", "why": "IRS disaster relief"}]}), 200)
    pushed = first_open(APRIL_15, FEDERAL, closed=(date(2028, 4, 18),))
    assert pushed == date(2028, 4, 19)
    for who, zone in (("acme", "America/New_York"), ("sunset", "America/Los_Angeles")):
        got = dates(api, tax["clock"], tax[who]["id"], "annual-return", "2027")
        for clock, item in (("file", "US"), ("file", "US-CA"), ("file", "US-NY"), ("pay", "US")):
            assert got[clock][item]["due_date"] == pushed.isoformat(), (who, clock, item)
            assert got[clock][item]["due_at"] == closes_at(pushed, zone)
            assert got[clock][item]["rolled_why"].endswith("IRS disaster relief, on the US federal calendar")
        assert got["file"]["US-NJ"]["due_date"] == "2028-05-15" and got["file"]["US-NJ"]["moves"] == 0
    moves = made(api.get(f"/events?type=clock.moved&test_clock={tax['clock']}&limit=100"), 200)["data"]
    assert len(moves) == 8 and len({e["subject"] for e in moves}) == 8  # one record line per move
    assert all(e["data"]["by"] == "calendar" and "IRS disaster relief" in e["data"]["calendar"] for e in moves)


# -- what a Service declares ---------------------------------------------------------------------------------
@pytest.fixture
def filers(monkeypatch):
    monkeypatch.setattr(registry, "_services", dict(registry._services))
    registry.load(["tests.support.svc_binding"])


def order(api: Client, clock: str, subject: str, service: str):
    return api.post("/jobs", {"subject": subject, "service": service, "period": "2027"})


def test_a_clock_whose_service_names_no_calendar_is_bound_by_the_brands_default_as_before(api, filers):
    clock = made(api.post("/test_clocks", {"frozen_time": FROZEN, "name": "plain"}))["id"]
    ny = made(api.post("/calendars", NEW_YORK))
    payer = made(api.post("/subjects", {"kind": "payer", "key": "ABC", "name": "Abc", "test_clock": clock}))
    assert payer["calendar"] == ny["id"]
    job = made(order(api, clock, payer["id"], "t-plain"))
    got = made(api.get(f"/clocks/{job['clocks'][0]}"), 200)["items"][0]
    # New York's own closed days alone, as every date fell before a Service could name its calendar.
    expected = first_open(APRIL_15, ("US", "NY"))
    assert got["due_date"] == expected.isoformat() == "2028-04-17"
    assert got["due_at"] == closes_at(expected, "America/New_York")
    assert got["rolled_why"].endswith("Sunday 2028-04-16: a weekend, on the New York calendar")
    assert [c["name"] for c in made(api.get("/calendars"), 200)["data"]] == ["New York"]  # nothing made


def test_a_service_binds_each_item_and_a_calendar_it_names_must_be_the_brands(api, filers):
    clock = made(api.post("/test_clocks", {"frozen_time": FROZEN, "name": "by item"}))["id"]
    made(api.post("/calendars", NEW_YORK))
    la = made(api.post("/calendars", LOS_ANGELES))
    filer = made(api.post("/subjects", {"kind": "filer", "key": "ABC", "name": "Abc", "test_clock": clock,
                                        "calendar": la["id"]}))
    r = order(api, clock, filer["id"], "t-by-item")
    assert r.status == 409 and r.code == "calendar_missing" and r.body["error"]["param"] == "calendar", r.body
    assert "California" in r.message
    assert made(api.get(f"/jobs?subject={filer['id']}&test_clock={clock}"), 200)["data"] == []  # nothing written
    assert "t federal" not in {c["name"] for c in made(api.get("/calendars"), 200)["data"]}
    # California's calendar closes on a day of its own: 2028-03-31 is Cesar Chavez Day, not a federal holiday.
    made(api.post("/calendars", {"name": "California", "zone": "America/Los_Angeles", "holidays": "US-CA",
                                 "closed_days": [{"date": "2028-04-17", "why": "state furlough day"}]}))
    job = made(order(api, clock, filer["id"], "t-by-item"))
    items = {i["item"]: i for i in made(api.get(f"/clocks/{job['clocks'][0]}"), 200)["items"]}
    federal = first_open(APRIL_15, FEDERAL)
    california = first_open(APRIL_15, ("US", "CA"), closed=(date(2028, 4, 17),))
    assert (federal, california) == (date(2028, 4, 18), date(2028, 4, 18))
    assert items["US"]["rolled_why"].endswith("Emancipation Day (observed), on the t federal calendar")
    assert items["US-CA"]["rolled_why"].endswith("state furlough day, on the California calendar")
    for name, d in (("US", federal), ("US-CA", california)):
        assert items[name]["due_date"] == d.isoformat() and items[name]["due_at"] == closes_at(d, "America/Los_Angeles")


def test_a_services_own_calendar_binds_its_clocks(api, filers):
    clock = made(api.post("/test_clocks", {"frozen_time": FROZEN, "name": "bound"}))["id"]
    la = made(api.post("/calendars", LOS_ANGELES))
    filer = made(api.post("/subjects", {"kind": "filer", "key": "ABC", "name": "Abc", "test_clock": clock,
                                        "calendar": la["id"]}))
    job = made(order(api, clock, filer["id"], "t-bound"))
    items = {i["item"]: i for i in made(api.get(f"/clocks/{job['clocks'][0]}"), 200)["items"]}
    expected = first_open(APRIL_15, FEDERAL, ("US", "CA"))
    assert expected == date(2028, 4, 18)
    assert {i["due_date"] for i in items.values()} == {expected.isoformat()}
    assert {i["due_at"] for i in items.values()} == {closes_at(expected, "America/Los_Angeles")}
