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

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from datetime import time as dt_time
from typing import Any

from dateutil.relativedelta import relativedelta

from calendars.offsets import Offset, OffsetError, parse_offset, parse_span
from calendars.roles import RoleError, parse_role
from calendars.specs import CalendarSpec, ClockSpec, SpecError
from timers.errors import KeepingTimeError

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
    """Who the work is for: its ``kind`` (taxpayer), the name of its key (ein) and the key's grammar
    (``pattern``, matched whole, with an ``example``), which a new subject's key is checked against."""

    kind: str
    key: str
    period: Period | None = None
    keeps: tuple[str, ...] = ()
    pattern: str | None = None  # r"[0-9]{2}-[0-9]{7}": an EIN is NN-NNNNNNN
    example: str = ""  # "12-3456789"

    def key_problem(self, key: str) -> str | None:
        """What is wrong with a subject's key, or None."""
        if self.pattern is not None and not re.fullmatch(self.pattern, key):
            shown = f" (e.g. {self.example})" if self.example else ""
            return f"a {self.kind}'s {self.key} is {self.pattern}{shown}, not {key!r}"
        return None


@dataclass(frozen=True)
class Schedule:
    order: str  # the Service it mints a job of
    each: str  # tax_year | year | quarter | month
    at: str  # '1mo after end', '10d before pay'
    catch_up: str = "open"  # open: mint each missed period · latest: only the last
    when: Callable[[Mapping[str, Any]], bool] | None = None  # of the subscription's input
    time: str = "09:00"  # the local time it mints at, in the subject's zone (HH:MM)

    @property
    def local_time(self) -> dt_time | None:
        m = _TIME_RE.fullmatch(self.time or "")
        return dt_time(int(m[1]), int(m[2])) if m else None


@dataclass(frozen=True)
class Wait:
    """A job opens waiting on a party (the organizer's books): its deadline's at-risk timer is held from the
    open until the subject event ``until`` (books.received) resumes it."""

    on: str
    until: str


@dataclass(frozen=True)
class Pool:
    """A pool of the brand's members who take a step's Task; each take holds the Task for ``hold``.

    Who is in it is data, not code: ``services.models.PoolMember`` rows the owner console, the API
    (``POST /pools/<name>/members``) and ``manage.py pools add`` edit, read by name for the brand
    (services/members.py). ``members`` is accepted and ignored, so a stored version written when pools named
    their members in code (``Pool(members=("grace", "linus"))``) still loads; it adds no one."""

    members: tuple[str, ...] = ()  # ignored: see above
    hold: str = "2d"


@dataclass(frozen=True)
class Step:
    """One step of a job's delivery, done by a member of ``pool`` (a Task), by ``party`` through a link (an
    ask that ``expires``), or by the system (neither). ``within`` is the step's own deadline from entering
    it; ``needs`` a grant scope the step may not move without; ``usd`` what its act costs when done (paid acts
    stay charged if the job lapses); ``pay`` the member's share of it, owed to whoever did the act (a pool's
    step only), on its own line so nothing that comes off the brand's line reaches it."""

    name: str
    pool: str | None = None
    party: str | None = None
    within: str | None = None
    expires: str | None = None
    needs: str | None = None
    usd: float | None = None
    pay: float | None = None

    @property
    def pay_cents(self) -> int:
        return round((self.pay or 0) * 100)


@dataclass(frozen=True)
class Scope:
    """A grant a party gives for ``term`` (scope.<g>.for): after it ends, a step that needs it is refused
    ``needs_grant`` and the party is asked again."""

    party: str
    term: str = "90d"


@dataclass(frozen=True)
class Price:
    usd: float | None = None
    every: str | None = None  # a cycle: 'year', 'month', 'quarter' (or a span such as '1y')
    includes: Mapping[str, int] = field(default_factory=dict)
    within: str | None = None  # '30d', or '5d before file'
    late: Mapping[str, float] | None = None  # {'usd': 100} or {'percent': 10}: comes off the charge
    hold: bool = False  # the buyer's funds are held at the open and return if the job lapses or is canceled

    @property
    def cents(self) -> int:
        return round((self.usd or 0) * 100)

    def late_cents(self, charge_cents: int) -> int:
        """What comes off a late job's charge: never more than the charge (a job a plan includes has none)."""
        if not self.late:
            return 0
        if "usd" in self.late:
            return min(charge_cents, round(self.late["usd"] * 100))
        return round(charge_cents * self.late.get("percent", 0) / 100)


@dataclass(frozen=True)
class Signal:
    """A quiet job: nothing happened for ``silent`` (a span), so the signal is raised and ``goto`` names where
    the job moves (a status or step the domain reads from the record)."""

    silent: str  # a span ('14d') or the name of a policy value in days ('stall_days')
    goto: str = ""


# -- input: what a Service reads from a subscription's input or an event's data --------------------------
INPUT_TYPES = ("text", "int", "number", "bool", "date", "month_day", "list")
# A date an input can name: the clocks count rungs back from it and roll it forward, and the runtime's
# instants end at 9999-12-31, so a date near either end (0001-01-01, 9999-12-31) has no room for either.
DATE_MIN, DATE_MAX = date(1900, 1, 1), date(9000, 12, 31)
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME_RE = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
_MONTH_DAY_RE = re.compile(r"(0[1-9]|1[0-2])-([0-3][0-9])")


class InvalidInput(KeepingTimeError):
    """A subscription's input or an event's data that the Service's declared input refuses: nothing is written."""

    code = "invalid_input"

    def __init__(self, message: str, *, param: str):
        super().__init__(f"{param}: {message}")
        self.param = param


@dataclass(frozen=True)
class Input:
    """One field of a Service's input, as its clocks, schedules and periods read it:

        Input("date", required=True)                  # reply_by: 2027-05-01
        Input("text", choices=("C corp", "S corp"))   # entity
        Input("list", of="text", pattern=r"[A-Z]{2}", max=60)   # states: ["CA", "NY"]
        Input("int", min=0)                            # a count

    ``min``/``max`` bound an int or number's value, a text's length, a list's length, or a date (ISO text);
    ``pattern`` (matched whole) and ``choices`` apply to a text, or to each item of a list.
    """

    type: str = "text"
    required: bool = False
    choices: tuple[Any, ...] = ()
    pattern: str | None = None
    min: float | str | None = None
    max: float | str | None = None
    of: str | None = None  # a list's item type
    help: str = ""

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, or None."""
        if self.type == "list":
            if not isinstance(value, list):
                return f"expected a list of {self.of}, got {_shown(value)}"
            if self.min is not None and len(value) < self.min:
                return f"expected at least {self.min} items, got {len(value)}"
            if self.max is not None and len(value) > self.max:
                return f"expected at most {self.max} items, got {len(value)}"
            item = Input(self.of or "text", choices=self.choices, pattern=self.pattern)
            for i, v in enumerate(value):
                wrong = item.problem(v)
                if wrong:
                    return f"item {i}: {wrong}"
            return None
        wrong = _type_problem(self.type, value)
        if wrong:
            return wrong
        if self.choices and value not in self.choices:
            return f"expected one of {', '.join(map(repr, self.choices))}, got {_shown(value)}"
        if self.type == "text":
            if self.pattern is not None and not re.fullmatch(self.pattern, value):
                return f"expected text matching {self.pattern}, got {_shown(value)}"
            low, high, size = self.min, self.max, len(value)
            if (low is not None and size < low) or (high is not None and size > high):
                return f"expected {_range(low, high)} characters, got {size}"
        elif self.type in ("int", "number"):
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                return f"expected a number {_range(self.min, self.max)}, got {value!r}"
        elif self.type == "date":
            low = date.fromisoformat(self.min) if self.min else DATE_MIN
            high = date.fromisoformat(self.max) if self.max else DATE_MAX
            if not low <= date.fromisoformat(value) <= high:
                return f"expected a date from {low} to {high}, got {value!r}"
        return None


    def json_schema(self) -> dict:
        """The field as JSON Schema, for the API's OpenAPI document: what problem() takes, as near as a
        schema says it (a date's own min/max, if any, narrow it further)."""
        if self.type == "list":
            item = Input(self.of or "text", choices=self.choices, pattern=self.pattern).json_schema()
            schema: dict = {"type": "array", "items": item}
            if self.min is not None:
                schema["minItems"] = self.min
            if self.max is not None:
                schema["maxItems"] = self.max
        elif self.type in ("int", "number"):
            schema = {"type": "integer" if self.type == "int" else "number"}
            if self.min is not None:
                schema["minimum"] = self.min
            if self.max is not None:
                schema["maximum"] = self.max
        elif self.type == "bool":
            schema = {"type": "boolean"}
        elif self.type == "date":
            schema = {"type": "string", "format": "date", "pattern": _DATE_SCHEMA_PATTERN}
        elif self.type == "month_day":
            schema = {"type": "string", "pattern": _MONTH_DAY_SCHEMA_PATTERN}
        else:
            schema = {"type": "string"}
            if self.pattern is not None:
                schema["pattern"] = f"^(?:{self.pattern})$"
            if self.min is not None:
                schema["minLength"] = self.min
            if self.max is not None:
                schema["maxLength"] = self.max
        if self.choices and self.type != "list":
            schema["enum"] = list(self.choices)
        if self.help:
            schema["description"] = self.help
        return schema


# DATE_MIN to DATE_MAX by year, and a year's end (MM-DD, never 02-29), as JSON Schema patterns.
_DATE_SCHEMA_PATTERN = r"^(?:19[0-9]{2}|[2-8][0-9]{3}|9000)-"
_MONTH_DAY_SCHEMA_PATTERN = (r"^(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
                             r"|02-(?:0[1-9]|1[0-9]|2[0-8]))$")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _range(low, high) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def _type_problem(kind: str, value: Any) -> str | None:
    if kind == "text":
        return None if isinstance(value, str) else f"expected text, got {_shown(value)}"
    if kind == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else \
            f"expected a whole number, got {_shown(value)}"
    if kind == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return None if ok else f"expected a number, got {_shown(value)}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected true or false, got {_shown(value)}"
    if kind == "date":
        if isinstance(value, str) and _DATE_RE.fullmatch(value):
            try:
                date.fromisoformat(value)
                return None
            except ValueError:
                pass
        return f"expected a date YYYY-MM-DD, got {_shown(value)}"
    if kind == "month_day":
        m = _MONTH_DAY_RE.fullmatch(value) if isinstance(value, str) else None
        if m:
            try:
                date(2001, int(m[1]), int(m[2]))  # a year's end: never 02-29
                return None
            except ValueError:
                pass
        return f"expected a month and day MM-DD (e.g. 12-31), got {_shown(value)}"
    return f"unknown input type {kind!r}"


def check_input(declared: Mapping[str, Input], values: Any, *, where: str = "input", partial: bool = False,
                others: bool = False) -> None:
    """Raise InvalidInput naming the first field of ``values`` its declaration refuses. ``partial``: an update,
    so a required field may be absent (it is kept); ``others``: fields not declared are let through (an
    event's data carries more than the Service reads). A Service that declares no input takes any."""
    if not isinstance(values, Mapping):
        raise InvalidInput(f"expected an object, got {_shown(values)}", param=where)
    if not declared:
        return
    for name, spec in declared.items():
        if name not in values:
            if spec.required and not partial:
                raise InvalidInput("is required", param=f"{where}.{name}")
            continue
        wrong = spec.problem(values[name])
        if wrong:
            raise InvalidInput(wrong, param=f"{where}.{name}")
    if not others:
        unknown = sorted(set(values) - set(declared))
        if unknown:
            raise InvalidInput(f"not an input this Service reads; it reads {', '.join(declared)}",
                               param=f"{where}.{unknown[0]}")


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
    input: dict[str, Input] = field(default_factory=dict)  # what it reads from its input (none: any)
    title: str = ""  # '{period} return'
    waits: Wait | None = None  # opens waiting on a party until an event on the subject
    steps: tuple[Step, ...] = ()  # the delivery, in order: a job opens at the first
    pools: dict[str, Pool] = field(default_factory=dict)
    scopes: dict[str, Scope] = field(default_factory=dict)  # grants a step may need
    policy: dict[str, int] = field(default_factory=dict)  # per-brand values (days) with their defaults
    calendar: CalendarSpec | None = None  # where its subjects' dates fall when they name no calendar
    where: str = ""  # the file, set by the loader

    # Parsed at load:
    within: Offset | None = field(default=None, init=False)
    every: relativedelta | None = field(default=None, init=False)
    at: dict[str, Offset] = field(default_factory=dict, init=False)
    silent: dict[str, relativedelta] = field(default_factory=dict, init=False)
    step_within: dict[str, relativedelta] = field(default_factory=dict, init=False)
    step_expires: dict[str, relativedelta] = field(default_factory=dict, init=False)
    pool_hold: dict[str, relativedelta] = field(default_factory=dict, init=False)
    scope_term: dict[str, relativedelta] = field(default_factory=dict, init=False)

    def step(self, name: str) -> Step | None:
        return next((s for s in self.steps if s.name == name), None)

    def next_step(self, name: str) -> Step | None:
        names = [s.name for s in self.steps]
        i = names.index(name) + 1
        return self.steps[i] if i < len(names) else None

    def check(self, known: Mapping[str, Service], *, stored: bool = False) -> None:
        """Validate every field against the other Services; raise ServiceError naming file and field. A version
        ``stored`` before a rule existed still loads (its running clocks need it): it is checked as it was."""
        w = f"{self.where}: " if self.where else ""
        self._check_waits_and_clocks(w)
        if not stored:
            self._check_roles(w)
        self._check_price(w)
        self._check_on(w, known)
        self._check_people(w)
        self._check_signals(w)
        self._check_inputs(w)
        self._check_subject_and_calendar(w)
        self._check_clock_calendars(w)
        unknown_keeps = [k for k in self.subject.keeps if not k.isidentifier()]
        if unknown_keeps:
            raise ServiceError(f"{w}subject.keeps: names are identifiers, not {unknown_keeps}")
        self._check_schedules(w, known)

    def _check_waits_and_clocks(self, w: str) -> None:
        """A wait names its party and event and needs a deadline; a hard clock has no moves."""
        if self.waits is not None:
            if not self.waits.on.strip() or not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+", self.waits.until):
                raise ServiceError(f"{w}waits: a party and the subject event that ends the wait, e.g. "
                                   f"Wait(on='the organizer', until='books.received'), not {self.waits!r}")
            if not self.price.within:
                raise ServiceError(f"{w}waits: a wait holds the deadline's at-risk timer; declare price.within")
        for name, spec in self.clocks.items():
            if spec.name != name:
                raise ServiceError(f"{w}clocks.{name}: the ClockSpec is named {spec.name!r}")
            if spec.hard and spec.moves:
                # The seed: a postponement is "the one thing that moves a hard date"; a step never does.
                raise ServiceError(f"{w}clocks.{name}.moves: a hard date moves only by a postponement "
                                   f"(calendar.postpone); drop moves ({', '.join(spec.moves)}) or hard=True")

    def _check_roles(self, w: str) -> None:
        """Who answers for a clock is a role: the customer's contacts and the brand's members are data."""
        for name, spec in self.clocks.items():
            try:
                parse_role(spec.answers_for)
            except RoleError as exc:
                raise ServiceError(f"{w}clocks.{name}.answers_for: {exc}") from None

    def _check_price(self, w: str) -> None:
        """The deadline (price.within, before a clock or from the open), the cycle and the late price."""
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

    def _check_on(self, w: str, known: Mapping[str, Service]) -> None:
        """Each subject event mints a registered Service."""
        for event, order in self.on.items():
            if order not in known:
                raise ServiceError(f"{w}on.{event}: no Service {order!r} is registered "
                                   f"(known: {', '.join(sorted(known)) or 'none'})")

    def _check_signals(self, w: str) -> None:
        """A signal's goto names a step; its silence is a span or a policy value."""
        for name, sig in self.signals.items():
            if sig.goto and self.steps and not self.step(sig.goto):
                raise ServiceError(f"{w}signals.{name}.goto: no step {sig.goto!r}; steps: "
                                   f"{', '.join(s.name for s in self.steps)}")
            if sig.silent in self.policy:
                continue  # a policy value in days: read for the brand when the signal is armed
            try:
                self.silent[name] = parse_span(sig.silent)
            except OffsetError as exc:
                raise ServiceError(f"{w}signals.{name}.silent: {exc} (or name a policy value: "
                                   f"{', '.join(self.policy) or 'none declared'})") from None

    def _check_inputs(self, w: str) -> None:
        """Each declared input is an Input of a known type, with valid pattern, choices and bounds."""
        for name, spec in self.input.items():
            where = f"{w}input.{name}"
            if not isinstance(spec, Input) or spec.type not in INPUT_TYPES:
                raise ServiceError(f"{where}: an Input of one of {', '.join(INPUT_TYPES)}")
            if spec.type == "list" and spec.of not in (*INPUT_TYPES[:-1], None):
                raise ServiceError(f"{where}.of: a list's items are one of {', '.join(INPUT_TYPES[:-1])}")
            if spec.pattern is not None:
                try:
                    re.compile(spec.pattern)
                except re.error as exc:
                    raise ServiceError(f"{where}.pattern: {exc}") from None
            item = Input(spec.of or "text") if spec.type == "list" else Input(spec.type)
            for choice in spec.choices:
                if item.problem(choice):
                    raise ServiceError(f"{where}.choices: {item.problem(choice)}")
            if spec.type == "date":
                for bound in (spec.min, spec.max):
                    if bound is not None and _type_problem("date", bound):
                        raise ServiceError(f"{where}: min and max of a date are dates YYYY-MM-DD, not {bound!r}")

    def _check_schedules(self, w: str, known: Mapping[str, Service]) -> None:
        """Each schedule orders a registered Service, each period at a local time, from an anchor."""
        for name, sch in self.schedule.items():
            where = f"{w}deliver.schedule.{name}"
            order = known.get(sch.order)
            if order is None:
                raise ServiceError(f"{where}.order: no Service {sch.order!r} is registered "
                                   f"(known: {', '.join(sorted(known)) or 'none'})")
            if sch.each not in EACH:
                raise ServiceError(f"{where}.each: one of {', '.join(EACH)}, not {sch.each!r}")
            if sch.local_time is None:
                raise ServiceError(f"{where}.time: a local time HH:MM (00:00 to 23:59), not {sch.time!r}")
            if sch.catch_up not in ("open", "latest"):
                raise ServiceError(f"{where}.catch_up: 'open' or 'latest', not {sch.catch_up!r}")
            try:
                self.at[name] = parse_offset(sch.at, anchors=("end", "start", *order.clocks))
            except OffsetError as exc:
                raise ServiceError(f"{where}.at: {exc}") from None
            if self.at[name].anchor is None:
                raise ServiceError(f"{where}.at: say what it is after or before: '1mo after end', '10d before pay'")

    def _check_subject_and_calendar(self, w: str) -> None:
        spec = self.subject
        if spec.pattern is not None:
            try:
                re.compile(spec.pattern)
            except re.error as exc:
                raise ServiceError(f"{w}subject.pattern: {exc}") from None
            if spec.example and spec.key_problem(spec.example):
                raise ServiceError(f"{w}subject.example: {spec.example!r} does not match {spec.pattern}")
        if self.calendar is not None:
            _check_calendar_spec(self.calendar, f"{w}calendar")

    def _check_clock_calendars(self, w: str) -> None:
        """Each calendar a clock writes is a CalendarSpec that makes a calendar, or a name; a clock that writes
        none (or none for an item) is bound by the Service's. A CalendarSpec makes the brand's calendar of its
        name the first time one is needed; from then on that calendar is the brand's to edit."""
        for name, spec in self.clocks.items():
            for item, ref in spec.declared_calendars():
                if isinstance(ref, CalendarSpec):
                    _check_calendar_spec(ref, f"{w}clocks.{name}.calendar" + (f".{item}" if item is not None else ""))
            object.__setattr__(spec, "service_calendar", self.calendar)

    def _check_people(self, w: str) -> None:
        """Steps, pools, scopes and policy values: each named thing declared, each span parsed."""
        for name, value in self.policy.items():
            if not name.isidentifier() or isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ServiceError(f"{w}policy.{name}: a policy value is a whole number of days, at least 1")
        for name, pool in self.pools.items():
            if not _STEP_RE.fullmatch(name):
                raise ServiceError(f"{w}pools.{name}: a pool's name is lowercase letters, digits and _")
            try:
                self.pool_hold[name] = parse_span(pool.hold)
            except OffsetError as exc:
                raise ServiceError(f"{w}pools.{name}.hold: {exc}") from None
        for name, scope in self.scopes.items():
            if not _STEP_RE.fullmatch(name) or not scope.party.strip():
                raise ServiceError(f"{w}scopes.{name}: a scope is named in lowercase and granted by a party")
            try:
                self.scope_term[name] = parse_span(scope.term)
            except OffsetError as exc:
                raise ServiceError(f"{w}scope.{name}.for: {exc}") from None
        seen: set[str] = set()
        for i, step in enumerate(self.steps):
            where = f"{w}deliver.{getattr(step, 'name', i)}"
            if not isinstance(step, Step) or not _STEP_RE.fullmatch(step.name):
                raise ServiceError(f"{where}: a Step named in lowercase letters, digits and _")
            if step.name in seen:
                raise ServiceError(f"{where}: a step's name is used once")
            seen.add(step.name)
            if step.pool and step.party:
                raise ServiceError(f"{where}: a step is a member's (pool) or a party's (party), not both")
            if step.pool and step.pool not in self.pools:
                raise ServiceError(f"{where}.pool: no pool {step.pool!r}; pools: {', '.join(self.pools) or 'none'}")
            if step.needs and step.needs not in self.scopes:
                raise ServiceError(f"{where}.needs: no scope {step.needs!r}; scopes: "
                                   f"{', '.join(self.scopes) or 'none'}")
            if step.expires and not step.party:
                raise ServiceError(f"{where}.expires: only a party's step sends a link that expires")
            if step.pay is not None:
                if not step.pool:
                    raise ServiceError(f"{where}.pay: only a pool's step pays a member")
                if not 0 < step.pay <= (step.usd or 0):
                    raise ServiceError(f"{where}.pay: the member's share of the act, more than 0 and at most its "
                                       f"usd ({step.usd or 0})")
            for attr, into in (("within", self.step_within), ("expires", self.step_expires)):
                text = getattr(step, attr)
                if text:
                    try:
                        into[step.name] = parse_span(text)
                    except OffsetError as exc:
                        raise ServiceError(f"{where}.{attr}: {exc}") from None
            if step.expires and date(2001, 1, 1) + self.step_expires[step.name] < date(2001, 1, 3):
                # its reminder rings a day before it expires: a shorter link would be reminded before it is sent
                raise ServiceError(f"{where}.expires: at least 2d (a reminder rings a day before)")


_STEP_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _check_calendar_spec(cal: Any, where: str) -> None:
    from calendars.brand_calendars import (  # noqa: PLC0415 - a Service file imports declare before any app loads
        check_closed_days,
        check_closes,
        check_holidays,
        check_weekends,
        check_zone,
    )

    try:
        if not isinstance(cal, CalendarSpec) or not isinstance(cal.name, str) or not cal.name.strip() \
                or len(cal.name) > 200:
            raise ServiceError("a CalendarSpec with a name of 1 to 200 characters")
        check_zone(cal.zone)
        check_weekends(list(cal.weekends))
        check_closes(cal.closes)
        check_holidays(*cal.country_and_subdivision)
        check_closed_days([{"date": d, "why": why} for d, why in cal.closed])
    except ServiceError as exc:
        raise ServiceError(f"{where}: {exc}") from None
    except KeepingTimeError as exc:
        raise ServiceError(f"{where}.{exc.message}") from None


def clock(name: str, **kw: Any) -> ClockSpec:
    """A ClockSpec whose errors name the field (the loader adds the file)."""
    try:
        return ClockSpec(name=name, **kw)
    except SpecError as exc:
        raise ServiceError(str(exc)) from None
