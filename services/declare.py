"""How a brand declares a Service in Python: typed, declarative, validated when it loads.

    annual_return = Service(
        name="annual-return",
        subject=SubjectSpec(kind="taxpayer", key="ein", period=Period(of="tax_year")),
        price=Price(usd=600, within="5d before file", late={"usd": 100}),
        clocks={"file": ClockSpec(...), "pay": ClockSpec(..., hard=True)},
    )

Offsets are written as the seeds write them ('30d', '5d before file', '1mo after end', '10d before pay').
A malformed offset or an unknown clock is a ServiceError at load time naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dateutil.relativedelta import relativedelta

from calendars.offsets import Offset, OffsetError, parse_offset, parse_span
from calendars.specs import ClockSpec, SpecError

from .periods import EACH


class ServiceError(ValueError):
    pass


@dataclass(frozen=True)
class Period:
    of: str = "tax_year"
    ends: str | Callable[[Mapping[str, Any]], str] = "12-31"  # or a function of the job's input

    def ends_for(self, input: Mapping[str, Any]) -> str:
        return self.ends(input) if callable(self.ends) else self.ends


@dataclass(frozen=True)
class SubjectSpec:
    kind: str
    key: str
    period: Period | None = None
    keeps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Schedule:
    order: str  # the Service it mints a job of
    each: str  # tax_year | year | quarter | month
    at: str  # '1mo after end', '10d before pay'
    catch_up: str = "open"  # open: mint each missed period · latest: only the last
    when: Callable[[Mapping[str, Any]], bool] | None = None  # of the subscription's input


@dataclass(frozen=True)
class Price:
    usd: float | None = None
    every: str | None = None  # a cycle: 'year', 'month', 'quarter' (or a span such as '1y')
    includes: Mapping[str, int] = field(default_factory=dict)
    within: str | None = None  # '30d', or '5d before file'
    late: Mapping[str, float] | None = None  # {'usd': 100} or {'percent': 10}: comes off the charge

    @property
    def cents(self) -> int:
        return round((self.usd or 0) * 100)

    def late_cents(self, charge_cents: int) -> int:
        if not self.late:
            return 0
        if "usd" in self.late:
            return min(charge_cents, round(self.late["usd"] * 100))
        return round(charge_cents * self.late.get("percent", 0) / 100)


@dataclass(frozen=True)
class Signal:
    """A quiet job: nothing happened for ``silent`` (a span), so the signal is raised and ``goto`` names where
    the job moves (a status or step the domain reads from the record)."""

    silent: str
    goto: str = ""


EVERY = {"year": relativedelta(years=1), "quarter": relativedelta(months=3), "month": relativedelta(months=1),
         "week": relativedelta(weeks=1)}


@dataclass
class Service:
    name: str
    subject: SubjectSpec
    price: Price = field(default_factory=Price)
    clocks: dict[str, ClockSpec] = field(default_factory=dict)
    schedule: dict[str, Schedule] = field(default_factory=dict)
    signals: dict[str, Signal] = field(default_factory=dict)
    on: dict[str, str] = field(default_factory=dict)  # an event on the subject → the Service it mints
    title: str = ""  # '{period} return'
    where: str = ""  # the file, set by the loader

    # Parsed at load:
    within: Offset | None = field(default=None, init=False)
    every: relativedelta | None = field(default=None, init=False)
    at: dict[str, Offset] = field(default_factory=dict, init=False)
    silent: dict[str, relativedelta] = field(default_factory=dict, init=False)

    def check(self, known: Mapping[str, Service]) -> None:
        """Validate every field against the other Services; raise ServiceError naming file and field."""
        w = f"{self.where}: " if self.where else ""
        for name, spec in self.clocks.items():
            if spec.name != name:
                raise ServiceError(f"{w}clocks.{name}: the ClockSpec is named {spec.name!r}")
        if self.price.within:
            try:
                self.within = parse_offset(self.price.within, anchors=tuple(self.clocks))
            except OffsetError as exc:
                raise ServiceError(f"{w}price.within: {exc}") from None
            if self.within.anchor is None:
                self.within = Offset(self.within.text, self.within.span, +1, "open")
            elif self.within.direction > 0:
                raise ServiceError(f"{w}price.within: a deadline is before a clock, not after: {self.price.within!r}")
        if self.price.every:
            every = EVERY.get(self.price.every)
            if every is None:
                try:
                    every = parse_span(self.price.every)
                except OffsetError as exc:
                    raise ServiceError(f"{w}price.every: {exc}") from None
            self.every = every
        if self.price.late and not set(self.price.late) <= {"usd", "percent"}:
            raise ServiceError(f"{w}price.late: write {{'usd': 100}} or {{'percent': 10}}")
        for event, order in self.on.items():
            if order not in known:
                raise ServiceError(f"{w}on.{event}: no Service {order!r} is registered "
                                   f"(known: {', '.join(sorted(known)) or 'none'})")
        for name, sig in self.signals.items():
            try:
                self.silent[name] = parse_span(sig.silent)
            except OffsetError as exc:
                raise ServiceError(f"{w}signals.{name}.silent: {exc}") from None
        unknown_keeps = [k for k in self.subject.keeps if not k.isidentifier()]
        if unknown_keeps:
            raise ServiceError(f"{w}subject.keeps: names are identifiers, not {unknown_keeps}")
        for name, sch in self.schedule.items():
            where = f"{w}deliver.schedule.{name}"
            order = known.get(sch.order)
            if order is None:
                raise ServiceError(f"{where}.order: no Service {sch.order!r} is registered "
                                   f"(known: {', '.join(sorted(known)) or 'none'})")
            if sch.each not in EACH:
                raise ServiceError(f"{where}.each: one of {', '.join(EACH)}, not {sch.each!r}")
            if sch.catch_up not in ("open", "latest"):
                raise ServiceError(f"{where}.catch_up: 'open' or 'latest', not {sch.catch_up!r}")
            try:
                self.at[name] = parse_offset(sch.at, anchors=("end", "start", *order.clocks))
            except OffsetError as exc:
                raise ServiceError(f"{where}.at: {exc}") from None
            if self.at[name].anchor is None:
                raise ServiceError(f"{where}.at: say what it is after or before: '1mo after end', '10d before pay'")


def clock(name: str, **kw: Any) -> ClockSpec:
    """A ClockSpec whose errors name the field (the loader adds the file)."""
    try:
        return ClockSpec(name=name, **kw)
    except SpecError as exc:
        raise ServiceError(str(exc)) from None
