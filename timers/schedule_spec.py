"""When a schedule fires, pure: a cron string (cronsim), an interval with a phase, or a calendar period.

Every spec is read in a zone, with the calendar's DST rule: a skipped local minute fires at the next
minute that exists, a repeated hour fires once, at its first occurrence. A schedule on a calendar takes that
calendar's rules instead (``schedule_bounds``): its repeated hour at the second occurrence (``Cron.fold``), its
skipped minutes not fired at all (recorded skipped). Cron is evaluated on local wall
time (cronsim, as healthchecks runs it) and each wall time is mapped to its instant by that rule, so
``30 2 * * *`` in New York fires at 03:00 EDT on the spring change and once on the fall change, and
``*/30 * * * *`` fires once at 01:00 and 01:30 on the day 01:xx happens twice.

An interval is elapsed time (``every`` 10m with ``phase`` 5m: :05, :15, …), counted from the Unix epoch
as Temporal counts it; it has no wall time, so DST does not move it.

A calendar period (``{"each": "month", "at": "1mo after end", "time": "09:00"}``) is a kind the domain
registers (services/schedules.py): the runtime knows no periods or offsets.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from .errors import KeepingTimeError
from .timeutil import local_instant, parse_span, zone_named

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_COUNT = 2_000_000  # fires counted in one gap (a year of a per-minute cron is 525,600)


class InvalidSpec(KeepingTimeError):
    code = "invalid_spec"


class Evaluator(Protocol):
    def after(self, t: datetime) -> datetime | None:
        """The first fire strictly after ``t`` (UTC), or None when there is none."""


_kinds: dict[str, Callable[[dict[str, Any], ZoneInfo], Evaluator]] = {}
_schemas: dict[str, dict[str, Any]] = {}


def register_kind(key: str, parse: Callable[[dict[str, Any], ZoneInfo], Evaluator], *, schema: dict[str, Any] | None = None) -> None:
    """A spec kind the domain adds, recognised by its key in the spec (``each``), with its JSON schema."""
    _kinds[key] = parse
    if schema is not None:
        _schemas[key] = schema


def json_schema() -> dict[str, Any]:
    """The spec's schema: exactly what ``parse`` takes (the API documents it)."""
    return {"oneOf": [
        {"type": "object", "additionalProperties": False, "required": ["cron"],
         "properties": {"cron": {"type": "string", "pattern": CRON_PATTERN}}},
        {"type": "object", "additionalProperties": False, "required": ["every"],
         "properties": {"every": {"type": "string", "pattern": SPAN_PATTERN},
                        "phase": {"type": "string", "pattern": PHASE_PATTERN}}},
        *_schemas.values(),
    ]}


@dataclass(frozen=True)
class Cron:
    expr: str
    zone: ZoneInfo
    fold: int = 0  # a repeated hour fires at its first occurrence (0), or its second (a calendar's "second")

    def after(self, t: datetime) -> datetime | None:
        return next(self.iterate(t), None)

    def iterate(self, t: datetime) -> Iterator[datetime]:
        """Every fire after ``t``, in order, from one cronsim walk of local wall time: each wall time maps to
        its instant by the DST rule, and an instant already fired (a gap's minutes all land on its end) is
        not fired again."""
        # Wall times a little before t's, so a time in a repeated hour or a gap is never passed over.
        start = (t.astimezone(self.zone).replace(tzinfo=None) - timedelta(hours=3)).replace(second=0, microsecond=0)
        last = t
        for wall in CronSim(self.expr, start):
            instant = local_instant(wall, self.zone, fold=self.fold)
            if instant > last:
                last = instant
                yield instant


@dataclass(frozen=True)
class Every:
    every: timedelta
    phase: timedelta

    def after(self, t: datetime) -> datetime | None:
        step = self.every.total_seconds()
        n = (t - EPOCH - self.phase).total_seconds() // step + 1
        return EPOCH + self.phase + self.every * int(n)


def _fixed_span(text: str, *, what: str) -> timedelta:
    try:
        span = parse_span(text)
    except KeepingTimeError:
        raise InvalidSpec(f"{what} {str(text)[:40]!r} is a number and a unit: s, m, h, d or w (e.g. 10m)") from None
    if span.months or span.years:
        raise InvalidSpec(f"{what} {text!r}: an interval is elapsed time (s, m, h, d, w); for calendar months "
                          "and years use a cron string or a calendar period ({\"each\": \"month\"})")
    return timedelta(days=span.days, hours=span.hours, minutes=span.minutes, seconds=span.seconds)


# The cron this runtime reads (and its schema documents): five fields of numbers, ranges (read from the smaller
# to the larger), lists, * and */step, with no names. A day of the month past 29 needs every month (* or */n),
# so that every expression the grammar admits fires on some day.
def _num(hi: int, lo: int = 0) -> str:
    return "(?:" + "|".join(str(n) for n in range(hi, lo - 1, -1)) + ")"


def _field(num: str, step: str) -> str:
    item = f"{num}(?:-{num})?"
    return rf"(?:\*|\*/{step}|{item}(?:,{item})*)"


_MINUTE, _HOUR = _field(_num(59), _num(59, 1)), _field(_num(23), _num(23, 1))
_DOM31, _DOM29 = _field(_num(31, 1), _num(31, 1)), _field(_num(29, 1), _num(31, 1))
_EVERY_MONTH, _MONTHS = rf"(?:\*|\*/{_num(12, 1)})", _field(_num(12, 1), _num(12, 1))
_DOW = _field(_num(7), _num(7, 1))
CRON_PATTERN = rf"^{_MINUTE} {_HOUR} (?:{_DOM31} {_EVERY_MONTH}|{_DOM29} {_MONTHS}) {_DOW}$"
CRON_RE = re.compile(CRON_PATTERN[1:-1])  # fullmatch: Python's $ also matches before a final newline
SPAN_PATTERN = r"^[1-9][0-9]{0,3}(?:s|m|min|h|d|w)$"  # every: up to 9999 of a unit
PHASE_PATTERN = r"^[0-9]{1,4}(?:s|m|min|h|d|w)$"
_SPAN_RE, _PHASE_RE = re.compile(SPAN_PATTERN[1:-1]), re.compile(PHASE_PATTERN[1:-1])


def _ordered_ranges(expr: str) -> str:
    return re.sub(r"(\d+)-(\d+)", lambda m: "-".join(sorted((m[1], m[2]), key=int)), expr)


def parse(spec: object, zone: str) -> Evaluator:
    """A spec as the API takes it, or InvalidSpec (400 invalid_spec) saying what is wrong."""
    tz = zone_named(zone)
    if not isinstance(spec, dict) or not spec:
        raise InvalidSpec('spec is an object: {"cron": "30 2 * * *"}, {"every": "10m", "phase": "5m"} or '
                          '{"each": "month", "at": "1mo after end", "time": "09:00"}')
    if "cron" in spec:
        if set(spec) != {"cron"}:
            raise InvalidSpec(f"a cron spec has only cron; not {sorted(set(spec) - {'cron'})}")
        expr = spec["cron"]
        if not isinstance(expr, str) or not CRON_RE.fullmatch(expr):
            raise InvalidSpec(f"cron {str(expr)[:80]!r} is five fields (minute hour day month weekday) of numbers, "
                              "ranges a-b, lists a,b, * and */n, e.g. '30 2 * * *' or '0 9 * * 1-5'; a day past "
                              "the 29th needs every month (* or */n)")
        expr = _ordered_ranges(expr)
        try:
            CronSim(expr, datetime(2000, 1, 1))  # noqa: DTZ001 - cron reads wall time
        except CronSimError as exc:  # pragma: no cover - the grammar admits only what cronsim reads
            raise InvalidSpec(f"cron {expr!r}: {exc}") from None
        return Cron(expr, tz)
    if "every" in spec:
        extra = set(spec) - {"every", "phase"}
        if extra:
            raise InvalidSpec(f"an interval spec has every and phase; not {sorted(extra)}")
        if not isinstance(spec["every"], str) or not _SPAN_RE.fullmatch(spec["every"]):
            raise InvalidSpec(f"every {str(spec['every'])[:40]!r} is 1 to 9999 of a unit: s, m, h, d or w (e.g. 10m)")
        phase_text = spec.get("phase", "0s")
        if not isinstance(phase_text, str) or not _PHASE_RE.fullmatch(phase_text):
            raise InvalidSpec(f"phase {str(phase_text)[:40]!r} is 0 to 9999 of a unit: s, m, h, d or w (e.g. 5m)")
        every = _fixed_span(spec["every"], what="every")
        zero = int(re.match(r"[0-9]+", phase_text)[0]) == 0  # type: ignore[index]  # _PHASE_RE matched: digits lead
        phase = timedelta(0) if zero else _fixed_span(phase_text, what="phase")
        return Every(every, phase % every)  # a phase of an interval or more is the same phase, once round
    for key, kind in _kinds.items():
        if key in spec:
            return kind(spec, tz)
    raise InvalidSpec(f"spec has none of cron, every{''.join(', ' + k for k in _kinds)}: got {sorted(spec)}")


def fires(ev: Evaluator, after: datetime, until: datetime) -> Iterator[datetime]:
    """Every fire in (after, until], in order (at most MAX_COUNT of them)."""
    walk = getattr(ev, "iterate", None)
    if walk is not None:
        for n, t in enumerate(walk(after)):
            if t > until or n >= MAX_COUNT:
                return
            yield t
        return
    at = after
    for _ in range(MAX_COUNT):
        nxt = ev.after(at)
        if nxt is None or nxt > until:
            return
        yield nxt
        at = nxt


def next_fires(ev: Evaluator, after: datetime, n: int = 5) -> list[datetime]:
    return list(itertools.islice(fires(ev, after, datetime.max.replace(tzinfo=UTC)), n))
