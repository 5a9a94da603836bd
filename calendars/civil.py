"""Business calendars, pure: zone, weekends, closed days, the closing minute, the roll, and DST.

A due function returns a civil date; the calendar closes it at its minute in its zone and rolls a closed
day forward. Instants are UTC; calendar math happens in the calendar's zone. No database here.

A date may be bound by two calendars (``bound``): the one its Service names decides which closed days bind it
(the federal calendar's Emancipation Day binds every federal filer), and the customer's own gives the zone and
the closing minute and may add closed days of its own, never remove one. A roll says whose closed day it
passed over ("Monday 2028-04-17: Emancipation Day (observed), on the US federal calendar").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import cached_property
from typing import TypeAlias
from zoneinfo import ZoneInfo

import holidays as holidays_lib

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MAX_ROLL_DAYS = 366
Day: TypeAlias = date  # Rolled's field ``date`` hides the type inside its body


@dataclass(frozen=True)
class Rolled:
    civil: Day  # what the due function said
    date: Day  # the first open day on or after it
    skipped: tuple[tuple[Day, str], ...] = ()  # each closed day passed over, with why (and whose)
    whose: str = ""  # the calendar (or calendars) whose closed day pushed the date last; "" unnamed or unmoved

    @property
    def moved(self) -> bool:
        return self.date != self.civil

    @property
    def why(self) -> str:
        """Every closed day passed over: "Saturday 2028-04-15: a weekend; … Monday 2028-04-17: Emancipation
        Day (observed)"."""
        return "; ".join(f"{WEEKDAYS[d.weekday()]} {d.isoformat()}: {reason}" for d, reason in self.skipped)

    @property
    def reason(self) -> str:
        """Why the last closed day was closed, and on whose calendar: the one that pushed the date to where it
        is ("Emancipation Day (observed), on the US federal calendar")."""
        return self.skipped[-1][1] if self.skipped else ""


WHOSE = ", on the "  # what joins a closed day's why to whose calendar closed it: "…, on the US federal calendar"


def whose_text(why: str, name: str) -> str:
    return f"{why}{WHOSE}{name} calendar" if name else why


def split_whose(reason: str) -> tuple[str, str]:
    """A reason cut where it says whose it is: ("Emancipation Day (observed)", ", on the US federal calendar")."""
    at = reason.find(WHOSE)
    return (reason, "") if at < 0 else (reason[:at], reason[at:])


@dataclass
class BusinessCalendar:
    zone_name: str = "UTC"
    weekends: frozenset[int] = frozenset()  # 0 Monday … 6 Sunday
    closes: time = time(23, 59)
    holiday_country: str = ""
    holiday_subdiv: str = ""
    closed_days: dict[date, str] = field(default_factory=dict)  # hand-written
    _years: dict[int, dict[date, str]] = field(default_factory=dict, repr=False)
    _holidays: dict[int, dict[date, str]] = field(default_factory=dict, repr=False)
    name: str = ""  # what people call it: a roll says whose closed day it passed over
    # The calendar whose closed days bind its dates (the Service's), checked first; this one's own add to them.
    binds: BusinessCalendar | None = None
    # Its time rules: a local time the spring change skips happens at the first minute after the gap
    # (next_minute) or not at all (skip); one the fall change repeats happens at its first or second occurrence.
    dst_skipped: str = "next_minute"
    dst_repeated: str = "first"

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.zone_name)

    # -- closed days ---------------------------------------------------------------------------------
    def holidays_in(self, year: int) -> dict[date, str]:
        """The public holidays of ``year`` (the holidays package's), without the hand-written days."""
        if year not in self._holidays:
            days: dict[date, str] = {}
            if self.holiday_country:
                source = holidays_lib.country_holidays(self.holiday_country, subdiv=self.holiday_subdiv or None,
                                                       years=year)
                for d, name in source.items():
                    days[d] = name
            self._holidays[year] = days
        return self._holidays[year]

    def closed_in(self, year: int) -> dict[date, str]:
        if year not in self._years:
            days = dict(self.holidays_in(year))
            for d, name in self.closed_days.items():
                if d.year == year:
                    days[d] = f"{days[d]}, {name}" if d in days and name not in days[d] else name
            self._years[year] = days
        return self._years[year]

    def _own_reasons(self, d: date) -> list[str]:
        """Why this calendar alone closes ``d``, each reason apart: a weekend, a holiday, a hand-written day."""
        reasons = []
        if d.weekday() in self.weekends:
            reasons.append("a weekend")
        holiday = self.holidays_in(d.year).get(d)
        if holiday:
            reasons.append(holiday)
        own = self.closed_days.get(d)
        if own and own not in (holiday or ""):  # as closed_in joins them
            reasons.append(own)
        return reasons

    def closed_by(self, d: date) -> list[tuple[str, list[str]]]:
        """Whose closed day ``d`` is: (calendar name, reasons), the binding calendar's first; a reason the
        binding calendar gives is not said again for this one."""
        found: list[tuple[str, list[str]]] = []
        said: set[str] = set()
        for cal in (self.binds, self) if self.binds is not None else (self,):
            reasons = [r for r in cal._own_reasons(d) if r not in said]
            said.update(reasons)
            if reasons:
                found.append((cal.name, reasons))
        return found

    def why_closed(self, d: date) -> str | None:
        found = self.closed_by(d)
        return " and ".join(whose_text(", ".join(reasons), name) for name, reasons in found) or None

    def roll(self, civil: date) -> Rolled:
        """The first open day on or after ``civil``, with each closed day passed over, why, and whose."""
        d = civil
        skipped: list[tuple[date, str]] = []
        whose = ""
        for _ in range(MAX_ROLL_DAYS):
            found = self.closed_by(d)
            if not found:
                return Rolled(civil, d, tuple(skipped), whose)
            skipped.append((d, " and ".join(whose_text(", ".join(reasons), name) for name, reasons in found)))
            whose = " and ".join(name for name, _ in found if name)
            d += timedelta(days=1)
        raise ValueError(f"no open day within a year of {civil}")

    # -- instants ------------------------------------------------------------------------------------
    def at(self, d: date, t: time) -> datetime:
        """The UTC instant of a local date and time by the calendar's rules: a repeated minute at its first or
        second occurrence (dst_repeated). A skipped minute rings at the first minute after the gap: a notice or
        a due is never dropped, whatever dst_skipped says (that rule drops a schedule's fire, see ``fires_at``)."""
        return local_instant(d, t, self.zone, fold=self.fold)

    def fires_at(self, d: date, t: time) -> datetime | None:
        """Where a fire meant for local ``d`` ``t`` happens: None when the spring change skips that minute and
        the calendar's dst_skipped is ``skip``."""
        if self.dst_skipped == "skip" and is_skipped(d, t, self.zone):
            return None
        return self.at(d, t)

    @property
    def fold(self) -> int:
        return 1 if self.dst_repeated == "second" else 0

    def close_of(self, d: date) -> datetime:
        """The start of the closing minute: a due is on time through its last instant (23:59:59.999). When the
        spring change skips the closing minute, the due is on time only up to the change: its close is the
        minute before the transition, so no local minute after the closing minute counts as on time."""
        if is_skipped(d, self.closes, self.zone):
            return local_instant(d, self.closes, self.zone) - timedelta(minutes=1)
        return self.at(d, self.closes)

    def on_time(self, when: datetime, d: date) -> bool:
        return when < self.close_of(d) + timedelta(minutes=1)

    def local(self, when: datetime) -> datetime:
        return when.astimezone(self.zone)

    def today(self, when: datetime) -> date:
        return self.local(when).date()


def is_skipped(d: date, t: time, zone: ZoneInfo) -> bool:
    """The spring change skips this local time: it names no instant in ``zone``."""
    naive = datetime.combine(d, t.replace(tzinfo=None))
    return naive.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive


def local_instant(d: date, t: time, zone: ZoneInfo, *, fold: int = 0) -> datetime:
    """A local time's instant: a repeated one at occurrence ``fold`` (0 the first, 1 the second), a skipped one
    at the first minute after the gap."""
    naive = datetime.combine(d, t.replace(tzinfo=None))
    for _ in range(24 * 60):  # DST gaps are at most an hour or two; a day of minutes is a hard bound
        aware = naive.replace(tzinfo=zone, fold=fold)
        instant = aware.astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == naive:
            return instant
        naive = (naive + timedelta(minutes=1)).replace(second=0, microsecond=0)
    raise ValueError(f"{d} {t} does not exist in {zone}")


def calendar_from(*, zone: str = "UTC", weekends: Iterable[int] | None = None, closes: time | None = None,
                  holiday_country: str = "", holiday_subdiv: str = "",
                  closed_days: dict[date, str] | None = None, name: str = "", dst_skipped: str = "next_minute",
                  dst_repeated: str = "first") -> BusinessCalendar:
    return BusinessCalendar(
        zone_name=zone,
        weekends=frozenset(weekends if weekends is not None else (5, 6)),
        closes=closes or time(23, 59),
        holiday_country=holiday_country,
        holiday_subdiv=holiday_subdiv,
        closed_days=dict(closed_days or {}),
        name=name,
        dst_skipped=dst_skipped,
        dst_repeated=dst_repeated,
    )


def bound(own: BusinessCalendar, binding: BusinessCalendar | None) -> BusinessCalendar:
    """A date's calendar when its Service names the calendar that binds it: ``own`` (the customer's) gives the
    zone and the closing minute and adds its closed days; ``binding``'s are never removed. The same calendar
    (or none) is ``own`` alone."""
    if binding is None or binding is own:
        return own
    return replace(own, binds=binding)


DueFunction = Callable[..., date]
