"""Periods a schedule mints, pure: tax years (ending any month-day), quarters, months, years."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from dateutil.relativedelta import relativedelta

EACH = ("tax_year", "year", "quarter", "month")


@dataclass(frozen=True, order=True)
class Period:
    start: date  # first day
    end: date  # the day after the last: the instant the period ends
    name: str

    @property
    def last_day(self) -> date:
        return self.end - timedelta(days=1)


def _ends(ends: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d\d)-(\d\d)", ends or "")
    if not m:
        raise ValueError(f"a year's end is MM-DD, e.g. 12-31 or 06-30; got {ends!r}")
    month, day = int(m[1]), int(m[2])
    date(2001, month, day)  # raises on 02-30
    return month, day


def period_of(each: str, d: date, *, ends: str = "12-31") -> Period:
    """The period of kind ``each`` that contains day ``d``."""
    if each in ("tax_year", "year"):
        month, day = _ends(ends if each == "tax_year" else "12-31")
        # A fiscal year is named for the calendar year it ends in.
        last = date(d.year, month, day)
        if d > last:
            last = date(d.year + 1, month, day)
        start = last - relativedelta(years=1) + timedelta(days=1)
        return Period(start, last + timedelta(days=1), str(last.year))
    if each == "quarter":
        q = (d.month - 1) // 3
        start = date(d.year, q * 3 + 1, 1)
        return Period(start, start + relativedelta(months=3), f"{d.year}-Q{q + 1}")
    if each == "month":
        start = date(d.year, d.month, 1)
        return Period(start, start + relativedelta(months=1), f"{d:%Y-%m}")
    raise ValueError(f"each is one of {', '.join(EACH)}; got {each!r}")


def period_named(each: str, name: str, *, ends: str = "12-31") -> Period:
    if each in ("tax_year", "year"):
        month, day = _ends(ends if each == "tax_year" else "12-31")
        return period_of(each, date(int(name), month, day), ends=ends)
    if each == "quarter":
        year, q = name.split("-Q")
        return period_of(each, date(int(year), (int(q) - 1) * 3 + 1, 1))
    if each == "month":
        year, month_no = name.split("-")
        return period_of(each, date(int(year), int(month_no), 1))
    raise ValueError(f"each is one of {', '.join(EACH)}; got {each!r}")


def next_period(each: str, p: Period, *, ends: str = "12-31") -> Period:
    return period_of(each, p.end, ends=ends)


def previous_period(each: str, p: Period, *, ends: str = "12-31") -> Period:
    return period_of(each, p.start - timedelta(days=1), ends=ends)
