"""A schedule's bounds and skip list, pure: which of its spec's instants it fires.

- ``start_at`` and ``end_at``: an instant before the one or after the other never starts (both inclusive).
- ``remaining_actions``: the Runs its spec may still start (each fire that starts or buffers a Run takes one);
  at 0 it fires no more. None is no limit. Triggers and backfills are asked for, and take none.
- ``jitter``: each fire of the spec starts up to this much after its intended time (never at or past the
  next one), the delay derived from the domain's seed, the schedule and the intended time, so every way of
  running the clock starts it at the same instant; the Run keeps its intended time as its identity.
- ``calendar`` and ``closed_days``: an instant whose local day the calendar closes (a weekend, a holiday, a
  day the brand closed) is ``skip``ped (recorded with the calendar's why), or fired at the same local time on
  the ``next_open`` or ``previous_open`` day (``schedule.rolled``); the Run keeps its intended time. The
  calendars app registers how a calendar is found (``register_calendars``): the runtime knows no calendars.
- ``skip``: cron expressions (the spec's own grammar, read on local wall time in the schedule's zone, to the
  minute) or local dates (``2027-12-25``) whose matching instants are not fired; each is recorded skipped with
  the rule that matched. A skipped instant still has its fire timer, so it is recorded when it comes.
- The calendar's time rules: a cron fire whose local time the spring change skips happens at the first minute
  after the gap (``dst_skipped: next_minute``, also with no calendar) or is recorded skipped with why
  (``skip``: its fire timer still comes, at the transition); a repeated local time fires at its first
  occurrence (``dst_repeated: first``) or its second (``second``: the evaluator's ``fold``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from cronsim import CronSim

from . import schedule_spec as specs
from .domains import domain_seed
from .errors import KeepingTimeError
from .timeutil import local_instant, zone_named

MAX_SKIP = 100  # rules on one schedule
MAX_BACKFILL = 1000  # instants one backfill call asks for
MAX_REMAINING = 1_000_000_000
DATE_PATTERN = r"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])$"
_DATE = re.compile(DATE_PATTERN[1:-1])
SKIP_ITEM_SCHEMA = {"oneOf": [
    {"type": "string", "pattern": specs.CRON_PATTERN, "description": "a cron expression read in the schedule's zone"},
    {"type": "string", "format": "date", "pattern": DATE_PATTERN, "description": "a date in the schedule's zone"},
]}
# Up to 999999s, 99999m, 999h or 99d: every span the pattern admits is within the column's 365 days.
JITTER_PATTERN = r"^(?:(?:0|[1-9][0-9]{0,5})s|(?:0|[1-9][0-9]{0,4})m|(?:0|[1-9][0-9]{0,2})h|(?:0|[1-9][0-9]?)d)$"
_JITTER = re.compile(JITTER_PATTERN[1:-1])
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
CLOSED_DAYS = ("skip", "next_open", "previous_open")
MAX_ROLL = 366  # days a roll looks through for an open one
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
LOOK_AHEAD = 1_000  # instants looked through for the next that fires (a skip list may exclude many)


class BoundsError(KeepingTimeError):
    """A bound or skip rule that cannot be (400), naming its field as the API's param."""

    def __init__(self, message: str, *, code: str, param: str):
        super().__init__(message, code=code, status=400)
        self.param = param


def check_skip(value: object) -> list[str]:
    """The skip list as given, or 400 invalid_skip naming the item (param ``skip``)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_SKIP:
        raise BoundsError(f"skip is a list of up to {MAX_SKIP} cron expressions or dates (2027-12-25)",
                          code="invalid_skip", param="skip")
    out: list[str] = []
    for n, item in enumerate(value):
        if isinstance(item, str) and _DATE.fullmatch(item):
            try:
                date.fromisoformat(item)
            except ValueError:
                raise BoundsError(f"skip[{n}] {item!r} is no date", code="invalid_skip", param="skip") from None
        elif not isinstance(item, str) or not specs.CRON_RE.fullmatch(item):
            raise BoundsError(f"skip[{n}] {str(item)[:60]!r} is a cron expression ('0 9 25 12 *') or a date "
                              "(2027-12-25)", code="invalid_skip", param="skip")
        out.append(item)
    return out


def check_remaining(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REMAINING:
        raise BoundsError(f"remaining_actions is a whole number from 0 to {MAX_REMAINING}, or null for no limit",
                          code="invalid_remaining_actions", param="remaining_actions")
    return value


def check_jitter(value: object) -> timedelta:
    """A jitter span (``30s``, ``5m``, ``0s``), or 400 invalid_jitter. A jitter longer than the spec's period
    is no error: each delay stops short of the spec's next instant (``Bounds.owed``)."""
    if value is None:
        return timedelta(0)
    if not isinstance(value, str) or not _JITTER.fullmatch(value):
        raise BoundsError(f"jitter {str(value)[:40]!r} is a span: a number and s, m, h or d (e.g. 30s, 5m), "
                          "at most 99d", code="invalid_jitter", param="jitter")
    return timedelta(seconds=int(value[:-1]) * _UNIT[value[-1]])


def jitter_delay(seed: str, schedule_id: str, at: datetime, jitter: timedelta) -> timedelta:
    """The delay of the fire of ``at``: sha256 of (the domain's seed, the schedule, the instant) in whole
    microseconds below ``jitter``. The same on every way of running the clock."""
    if jitter <= timedelta(0):
        return timedelta(0)
    digest = hashlib.sha256(f"{seed}|{schedule_id}|{at.astimezone(UTC).isoformat()}".encode()).digest()
    span = int(jitter / timedelta(microseconds=1))
    return timedelta(microseconds=int.from_bytes(digest[:8], "big") % span)


class ClosedDays(Protocol):
    def why_closed(self, d: date) -> str | None:
        """Why the calendar closes ``d`` ("Thanksgiving Day", "a weekend"), or None when it is open."""

    # Its time rules (a calendar with none reads as next_minute and first).
    dst_skipped: str
    dst_repeated: str


_calendars: list[Callable[[str, str], ClosedDays | None]] = []


def register_calendars(lookup: Callable[[str, str], ClosedDays | None]) -> None:
    """How the domain finds a brand's calendar by id (brand id, calendar id): its closed days, or None."""
    _calendars[:] = [lookup]


def calendar_of(brand_id: str, calendar_id: str) -> ClosedDays:
    """The brand's calendar, or 404 resource_missing (param ``calendar``)."""
    found = _calendars[0](brand_id, calendar_id) if _calendars and calendar_id else None
    if found is None:
        err = KeepingTimeError(f"no calendar {calendar_id[:40]!r}", code="resource_missing", status=404)
        err.param = "calendar"
        raise err
    return found


def check_closed_days(value: object) -> str:
    if value is None:
        return "skip"
    if value not in CLOSED_DAYS:
        raise BoundsError(f"closed_days is one of {', '.join(CLOSED_DAYS)}", code="invalid_closed_days",
                          param="closed_days")
    return str(value)


def day_words(d: date) -> str:
    """A day as people say it: Monday 1 January 2029."""
    return f"{WEEKDAYS[d.weekday()]} {d.day} {MONTHS[d.month - 1]} {d.year}"


@dataclass(frozen=True)
class Bounds:
    zone: ZoneInfo
    start_at: datetime | None
    end_at: datetime | None
    skip: Sequence[str]
    jitter: timedelta = timedelta(0)
    seed: str = ""
    schedule_id: str = ""
    calendar: ClosedDays | None = None
    closed_days: str = "skip"
    cron: str = ""  # the spec's cron expression (a skipped local minute is read against it), or ""

    @property
    def dst_skipped(self) -> str:
        return getattr(self.calendar, "dst_skipped", "next_minute") if self.calendar is not None else "next_minute"

    @property
    def fold(self) -> int:
        second = self.calendar is not None and getattr(self.calendar, "dst_repeated", "first") == "second"
        return 1 if second else 0

    def ruled(self, ev: specs.Evaluator) -> specs.Evaluator:
        """The spec's evaluator under the calendar's rule for a repeated hour."""
        if isinstance(ev, specs.Cron) and ev.fold != self.fold:
            return replace(ev, fold=self.fold)
        return ev

    @classmethod
    def of(cls, sch: object) -> Bounds:
        jitter = getattr(sch, "jitter", None) or timedelta(0)
        seed = domain_seed(sch.domain) if jitter else ""  # type: ignore[attr-defined]
        calendar_id = getattr(sch, "calendar", "")
        # A calendar gone since (the admin removed it) leaves the schedule on no calendar, not failing its fires.
        cal = _calendars[0](sch.brand_id, calendar_id) if calendar_id and _calendars else None  # type: ignore[attr-defined]
        spec = getattr(sch, "spec", None)
        cron = spec.get("cron", "") if isinstance(spec, dict) and isinstance(spec.get("cron"), str) else ""
        return cls(zone_named(sch.zone), sch.start_at, sch.end_at, tuple(sch.skip or ()),  # type: ignore[attr-defined]
                   jitter, seed, sch.id, cal, getattr(sch, "closed_days", "skip"),  # type: ignore[attr-defined]
                   specs._ordered_ranges(cron) if cron else "")

    def closed(self, at: datetime) -> str | None:
        """Why the calendar closes the local day of ``at`` ("Thursday 25 November 2027: Thanksgiving Day")."""
        if self.calendar is None:
            return None
        d = at.astimezone(self.zone).date()
        why = self.calendar.why_closed(d)
        return f"{day_words(d)}: {why}" if why else None

    def rolled(self, at: datetime) -> tuple[datetime, str] | None:
        """Where a fire on a closed day goes (next_open, previous_open): the same local time on the first open
        day after (or before) it, with the calendar's why; None when it stays (open, or skip)."""
        if self.calendar is None or self.closed_days == "skip":
            return None
        why = self.closed(at)
        if why is None:
            return None
        wall = at.astimezone(self.zone).replace(tzinfo=None)
        step = timedelta(days=1 if self.closed_days == "next_open" else -1)
        d = wall.date()
        for _ in range(MAX_ROLL):
            d += step
            if self.calendar.why_closed(d) is None:
                return local_instant(datetime.combine(d, wall.time()), self.zone, fold=self.fold), why
        return None  # no open day within a year: it stays where it is

    def base(self, at: datetime) -> datetime:
        """The fire's instant before jitter: ``at``, or where the calendar rolls it."""
        got = self.rolled(at)
        return at if got is None else got[0]

    def owed(self, ev: specs.Evaluator, at: datetime) -> datetime:
        """When the fire of ``at`` starts: where the calendar rolls it, plus its jitter delay (an unrolled one
        before the spec's next instant)."""
        base = self.base(at)
        if not self.jitter:
            return base
        delay = jitter_delay(self.seed, self.schedule_id, at, self.jitter)
        following = ev.after(at)
        if base == at and following is not None and at + delay >= following:
            delay = max(timedelta(0), following - at - timedelta(seconds=1))
        return base + delay

    def first_from(self, ev: specs.Evaluator, now: datetime) -> datetime | None:
        """The first instant after ``now`` whose fire is not owed before ``now`` (a roll back to a day already
        past does not fire when a schedule is made or changed)."""
        at = self.first(ev, now)
        for _ in range(LOOK_AHEAD):
            if at is None or self.owed(ev, at) >= now:
                return at
            at = self.first(ev, at)
        return None

    def within(self, at: datetime) -> bool:
        return (self.start_at is None or at >= self.start_at) and (self.end_at is None or at <= self.end_at)

    def skipped_by(self, at: datetime) -> str | None:
        """The skip rule ``at`` matches (its local date, or its local minute on a cron), or the calendar's why
        its day is closed (closed_days skip), or None."""
        if self.calendar is not None and self.closed_days == "skip":
            why = self.closed(at)
            if why is not None:
                return f"closed {why}"
        if self.dst_skipped == "skip":
            gone = self.skipped_wall(at)
            if gone is not None:
                return (f"dst {day_words(gone.date())}: {gone:%H:%M} does not happen in {self.zone.key} (the clocks go "
                        "forward over it, and the calendar's dst_skipped is skip)")
        if not self.skip:
            return None
        wall = at.astimezone(self.zone).replace(tzinfo=None)
        minute = wall.replace(second=0, microsecond=0)
        for rule in self.skip:
            if _DATE.fullmatch(rule):
                if wall.date().isoformat() == rule:
                    return f"skip {rule}"
            elif next(CronSim(specs._ordered_ranges(rule), minute - timedelta(minutes=1))) == minute:
                return f"skip {rule}"
        return None

    def skipped_wall(self, at: datetime) -> datetime | None:
        """The local minute the cron meant when ``at`` is where the spring change put it: ``at`` is the
        transition, the cron matches a local minute in the gap and not the local minute at ``at`` itself (that
        one is a fire of its own)."""
        if not self.cron:
            return None
        before = (at - timedelta(minutes=1)).astimezone(self.zone)
        here = at.astimezone(self.zone)
        if here.utcoffset() == before.utcoffset():
            return None
        wall, before_wall = here.replace(tzinfo=None), before.replace(tzinfo=None).replace(second=0, microsecond=0)
        if wall - before_wall <= timedelta(minutes=1):
            return None  # the clocks went back (or did not jump): no minute is skipped
        if next(CronSim(self.cron, wall - timedelta(minutes=1))) == wall:
            return None
        meant = next(CronSim(self.cron, before_wall))
        return meant if meant < wall else None

    def first(self, ev: specs.Evaluator, after: datetime) -> datetime | None:
        """The spec's first instant after ``after`` inside the bounds (a skipped one included), or None."""
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - timedelta(microseconds=1)
        at = ev.after(after)
        if at is None or (self.end_at is not None and at > self.end_at):
            return None
        return at

    def upcoming(self, ev: specs.Evaluator, first: datetime, n: int) -> list[datetime]:
        """The next ``n`` fires from ``first`` on, where the calendar rolls them (skipped ones left out)."""
        out: list[datetime] = []
        for at in self._walk(ev, first):
            if len(out) >= n:
                break
            if self.skipped_by(at) is None:
                out.append(self.base(at))
        return out

    def _walk(self, ev: specs.Evaluator, first: datetime) -> Iterator[datetime]:
        at: datetime | None = first
        for _ in range(LOOK_AHEAD):
            if at is None or (self.end_at is not None and at > self.end_at):
                return
            yield at
            at = ev.after(at)
