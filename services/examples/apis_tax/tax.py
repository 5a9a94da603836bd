"""Dates the world sets for a calendar-year C corporation, and how an extension moves them."""

from __future__ import annotations

from datetime import date

from calendars.specs import CalendarSpec, DueInput

# Whose closed days bind a federal date: the federal holidays and the District of Columbia's (IRC 7503: a
# legal holiday in the District binds every federal filer, wherever they live: DC's Emancipation Day moves the
# return due Saturday 15 April 2028 to Tuesday the 18th). The customer's own calendar adds its closed days and
# says the zone the date closes in; it never removes these. The example binds every item to it (a state's own
# closed days would be a calendar per item: calendar={"US": FEDERAL, "US-NJ": NEW_JERSEY}).
FEDERAL = CalendarSpec("US federal", zone="America/New_York", holidays=("US", "DC"))

# When the return is due, by item: the 15th day of the 4th month after the year (federal, CA, NY), or of
# the 5th (NJ's CBT-100 and the Texas franchise report). An extension gives 6 months (CA: 7).
FILE_MONTH = {"US": 4, "US-CA": 4, "US-NY": 4, "US-NJ": 5, "US-TX": 5}
EXTENDED_MONTH = {"US": 10, "US-CA": 11, "US-NY": 10, "US-NJ": 11, "US-TX": 11}
# The states that accept the federal extension (the seed's order: US accepted → US-CA, US-NY accepted); New
# Jersey and Texas file their own.
FOLLOW_FEDERAL = ("US-CA", "US-NY")
ESTIMATE_MONTHS = {"Q1": 4, "Q2": 6, "Q3": 9, "Q4": 12}
# A general business credit unused in its year carries forward 20 years (IRC 39(a)): it expires on the last
# day of the 20th tax year after the one it arose in.
CARRYFORWARD_YEARS = 20


def items(x: DueInput) -> list[str]:
    return ["US", *(f"US-{s}" for s in x.input.get("states", []))]


def follows(x: DueInput) -> str | None:
    return "US" if x.item in FOLLOW_FEDERAL else None


def file_due(x: DueInput) -> date:
    return date(int(x.period) + 1, FILE_MONTH.get(x.item, 4), 15)


def extended_due(x: DueInput) -> date:
    return date(int(x.period) + 1, EXTENDED_MONTH.get(x.item, 10), 15)


def pay_due(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 15)


def estimate_due(x: DueInput) -> date:
    year, quarter = x.period.split("-")
    return date(int(year), ESTIMATE_MONTHS[quarter], 15)


def carryforwards(x: DueInput) -> list[str]:
    """The credits the subject keeps that arose in this period: {"2026": ["US"]} is a federal credit from the
    2026 tax year (one item per jurisdiction)."""
    return list((x.get("carryforwards") or {}).get(x.period, []))


def carryforward_expires(x: DueInput) -> date:
    return date(int(x.period) + CARRYFORWARD_YEARS, 12, 31)
