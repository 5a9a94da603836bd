"""Dates the world sets for a calendar-year C corporation, and how an extension moves them."""

from __future__ import annotations

from datetime import date

from calendars.specs import DueInput

# When the return is due, by item: the 15th day of the 4th month after the year (federal, CA, NY), or of
# the 5th (NJ's CBT-100 and the Texas franchise report). An extension gives 6 months (CA: 7).
FILE_MONTH = {"US": 4, "US-CA": 4, "US-NY": 4, "US-NJ": 5, "US-TX": 5}
EXTENDED_MONTH = {"US": 10, "US-CA": 11, "US-NY": 10, "US-NJ": 11, "US-TX": 11}
ESTIMATE_MONTHS = {"Q1": 4, "Q2": 6, "Q3": 9, "Q4": 12}


def items(x: DueInput) -> list[str]:
    return ["US", *(f"US-{s}" for s in x.input.get("states", []))]


def file_due(x: DueInput) -> date:
    return date(int(x.period) + 1, FILE_MONTH.get(x.item, 4), 15)


def extended_due(x: DueInput) -> date:
    return date(int(x.period) + 1, EXTENDED_MONTH.get(x.item, 10), 15)


def pay_due(x: DueInput) -> date:
    return date(int(x.period) + 1, 4, 15)


def estimate_due(x: DueInput) -> date:
    year, quarter = x.period.split("-")
    return date(int(year), ESTIMATE_MONTHS[quarter], 15)
