"""A schedule's bounds and skip list, pure: which of its spec's instants it fires.

- ``start_at`` and ``end_at``: an instant before the one or after the other never starts (both inclusive).
- ``remaining_actions``: the Runs its spec may still start (each fire that starts or buffers a Run takes one);
  at 0 it fires no more. None is no limit. Triggers and backfills are asked for, and take none.
- ``jitter``: each fire of the spec starts up to this much after its intended time (never at or past the
  next one), the delay derived from the domain's seed, the schedule and the intended time, so every way of
  running the clock starts it at the same instant; the Run keeps its intended time as its identity.
- ``skip``: cron expressions (the spec's own grammar, read on local wall time in the schedule's zone, to the
  minute) or local dates (``2027-12-25``) whose matching instants are not fired; each is recorded skipped with
  the rule that matched. A skipped instant still has its fire timer, so it is recorded when it comes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim

from . import schedule_spec as specs
from .domains import domain_seed
from .errors import KeepingTimeError
from .timeutil import zone_named

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
LOOK_AHEAD = 10_000  # instants looked through for the next that fires (a skip list may exclude many)


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


@dataclass(frozen=True)
class Bounds:
    zone: ZoneInfo
    start_at: datetime | None
    end_at: datetime | None
    skip: Sequence[str]
    jitter: timedelta = timedelta(0)
    seed: str = ""
    schedule_id: str = ""

    @classmethod
    def of(cls, sch: object) -> Bounds:
        jitter = getattr(sch, "jitter", None) or timedelta(0)
        seed = domain_seed(sch.domain) if jitter else ""  # type: ignore[attr-defined]
        return cls(zone_named(sch.zone), sch.start_at, sch.end_at, tuple(sch.skip or ()),  # type: ignore[attr-defined]
                   jitter, seed, sch.id)  # type: ignore[attr-defined]

    def owed(self, ev: specs.Evaluator, at: datetime) -> datetime:
        """When the fire of ``at`` starts: ``at`` plus its jitter delay, before the spec's next instant."""
        if not self.jitter:
            return at
        delay = jitter_delay(self.seed, self.schedule_id, at, self.jitter)
        following = ev.after(at)
        if following is not None and at + delay >= following:
            delay = max(timedelta(0), following - at - timedelta(seconds=1))
        return at + delay

    def within(self, at: datetime) -> bool:
        return (self.start_at is None or at >= self.start_at) and (self.end_at is None or at <= self.end_at)

    def skipped_by(self, at: datetime) -> str | None:
        """The skip rule ``at`` matches (its local date, or its local minute on a cron), or None."""
        if not self.skip:
            return None
        wall = at.astimezone(self.zone).replace(tzinfo=None)
        minute = wall.replace(second=0, microsecond=0)
        for rule in self.skip:
            if _DATE.fullmatch(rule):
                if wall.date().isoformat() == rule:
                    return rule
            elif next(CronSim(specs._ordered_ranges(rule), minute - timedelta(minutes=1))) == minute:
                return rule
        return None

    def first(self, ev: specs.Evaluator, after: datetime) -> datetime | None:
        """The spec's first instant after ``after`` inside the bounds (a skipped one included), or None."""
        if self.start_at is not None and after < self.start_at:
            after = self.start_at - timedelta(microseconds=1)
        at = ev.after(after)
        if at is None or (self.end_at is not None and at > self.end_at):
            return None
        return at

    def upcoming(self, ev: specs.Evaluator, first: datetime, n: int) -> list[datetime]:
        """The next ``n`` instants that fire from ``first`` on (skipped ones left out)."""
        out: list[datetime] = []
        for at in self._walk(ev, first):
            if len(out) >= n:
                break
            if self.skipped_by(at) is None:
                out.append(at)
        return out

    def _walk(self, ev: specs.Evaluator, first: datetime) -> Iterator[datetime]:
        at: datetime | None = first
        for _ in range(LOOK_AHEAD):
            if at is None or (self.end_at is not None and at > self.end_at):
                return
            yield at
            at = ev.after(at)
