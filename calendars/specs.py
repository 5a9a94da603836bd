"""Clock declarations: what a Service writes under ``clocks`` (due, rungs, moves, hard…), and their registry.

A malformed rung or move is an error when the spec is made (at load time), naming the clock and field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from typing import Any

from .offsets import OffsetError, Rung, parse_rung
from .roles import STEWARD, Role, RoleError, parse_role


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class DueInput:
    """What a due function reads: the job's input, the subject's keeps, the period, the item."""

    input: dict[str, Any]
    keeps: dict[str, Any]
    period: str
    item: str
    due: date | None = None  # for a move: the date it moves from

    def get(self, name: str, default: Any = None) -> Any:
        return self.input.get(name, self.keeps.get(name, default))


DueFn = Callable[[DueInput], date]


@dataclass(frozen=True)
class CalendarSpec:
    """A calendar written on a Service or on one of its clocks (seed keeping-time, "Every date falls on one
    calendar"): the brand's calendar of this ``name``, made from this declaration the first time it is needed
    (the brand may then edit its closed days). On a clock it binds the clock's dates (its closed days are never
    removed by the customer's calendar); on a Service it binds the clocks that name none, and a subject of the
    Service that names no calendar keeps its dates on it."""

    name: str
    zone: str = "UTC"
    weekends: tuple[int, ...] = (5, 6)
    closes: str = "23:59"
    # ("US",), ("US", "DC") or "US-DC": the holidays package's country and subdivision
    holidays: tuple[str, ...] | str = ()
    closed: tuple[tuple[str, str], ...] = ()  # the brand's own days: (("2028-01-17", "why"), …)

    @property
    def country_and_subdivision(self) -> tuple[Any, Any]:
        """("US", "DC") from ("US", "DC") or "US-DC"; ("US", "") from ("US",) or "US"; ("", "") for none."""
        written = self.holidays
        if isinstance(written, str):
            country, _, subdivision = written.partition("-")
            return country, subdivision
        return (tuple(written) + ("", ""))[0], (tuple(written) + ("", ""))[1]


# Which calendar binds a clock's dates: a calendar declared here, or the name of one the brand has.
CalendarRef = CalendarSpec | str
# Written on a clock: one for every item, one per item ({"US": federal, "US-CA": "California"}; an item not
# named takes the Service's), or a function of the due input that names one (None: the Service's).
ClockCalendar = CalendarRef | Mapping[str, CalendarRef] | Callable[[DueInput], CalendarRef | None]


@dataclass(frozen=True)
class ClockSpec:
    name: str
    due: DueFn
    items: Sequence[str] | Callable[[DueInput], Sequence[str]] = ("",)
    rungs: Sequence[str] = ()
    moves: dict[str, DueFn] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)  # a step, once committed, makes this move
    # When the date comes unsatisfied it waits on its owner's choice: option → the step it runs (or None).
    options: dict[str, str | None] = field(default_factory=dict)
    hard: bool = False
    at: time = time(9, 0)
    answers_for: str = "brand"  # a role (calendars/roles.py): customer, customer:<role>, brand, member:<role>
    title: str = ""
    lives_on: str = "job"
    guarantee: dict[str, Any] | None = None
    # A move of a sibling clock (the same job's, on the same item) that keeps this one: its step commits with
    # that move, and the date is kept, "with" what the phrase says: pay {"extend": "with the extension"}.
    kept_with: dict[str, str] = field(default_factory=dict)
    # The item whose moves an item follows (a state that accepts the federal extension follows "US"): it arms
    # no run rung of its own, and moves right after its leader, by the same move. None: it moves on its own.
    follows: Callable[[DueInput], str | None] | None = None
    # A step that submits to an outside system (step → transport): the outside receipt's time judges on time.
    submits: dict[str, str] = field(default_factory=dict)
    # Whose closed days bind its dates (a CalendarSpec, a calendar name the brand has, one per item, or a
    # function of the input); None: its Service's calendar, else the brand's default.
    calendar: ClockCalendar | None = None
    where: str = ""  # the Service file that declares it, for error messages
    parsed_rungs: tuple[Rung, ...] = field(init=False, default=())
    # The Service's calendar, for the items the clock names none for (set when the Service is checked).
    service_calendar: CalendarSpec | None = field(init=False, default=None, compare=False)

    def __post_init__(self) -> None:
        where = f"{self.where}: " if self.where else ""
        parsed = []
        for text in self.rungs:
            try:
                parsed.append(parse_rung(text))
            except OffsetError as exc:
                raise SpecError(f"{where}clocks.{self.name}.rungs: {exc}") from None
        for step, move in self.runs.items():
            if move not in self.moves:
                raise SpecError(f"{where}clocks.{self.name}.runs.{step}: names the move {move!r}, which "
                                f"moves does not declare ({', '.join(self.moves) or 'none'})")
        if self.lives_on not in ("job", "subject"):
            raise SpecError(f"{where}clocks.{self.name}.lives_on: 'job' or 'subject', not {self.lives_on!r}")
        if self.follows is not None and not callable(self.follows):
            raise SpecError(f"{where}clocks.{self.name}.follows: a function of the input that names an item")
        if not callable(self.due):
            raise SpecError(f"{where}clocks.{self.name}.due: a function of the input that returns a date")
        for item, ref in self.declared_calendars():
            if not (isinstance(ref, CalendarSpec) or isinstance(ref, str) and ref.strip() and len(ref) <= 200):
                at = f".{item}" if item is not None else ""
                raise SpecError(f"{where}clocks.{self.name}.calendar{at}: a CalendarSpec, the name of a calendar "
                                f"the brand has, one of those per item, or a function of the input; not {ref!r}")
        for name, fn in self.moves.items():
            if not callable(fn):
                raise SpecError(f"{where}clocks.{self.name}.moves.{name}: a function that returns a date")
        object.__setattr__(self, "parsed_rungs", tuple(parsed))

    def declared_calendars(self) -> list[tuple[str | None, Any]]:
        """The calendars written on the clock, (item or None, what is written): a function's are known only
        when it is called."""
        cal = self.calendar
        if cal is None or callable(cal) and not isinstance(cal, Mapping):
            return []
        if isinstance(cal, Mapping):
            return [(str(item), ref) for item, ref in cal.items()]
        return [(None, cal)]

    def calendar_for(self, x: DueInput) -> CalendarRef | None:
        """The calendar that binds item ``x.item``'s date as declared: the clock's (for the item), else the
        Service's, else None (the brand's default)."""
        cal = self.calendar
        if isinstance(cal, Mapping):
            cal = cal.get(x.item)
        elif callable(cal):
            cal = cal(x)
        if cal is not None and not (isinstance(cal, CalendarSpec) or isinstance(cal, str) and cal.strip()):
            raise SpecError(f"clocks.{self.name}.calendar: for {x.item or 'its date'} names {cal!r}, not a "
                            "CalendarSpec or a calendar's name")
        return cal if cal is not None else self.service_calendar
    @property
    def role(self) -> Role:
        """Who answers, as a role. A version stored before roles named a person here: "the brand" was the brand,
        any other name the customer's person, so its clocks open as they did (a Service loaded from source with a
        name is refused by its check)."""
        try:
            return parse_role(self.answers_for)
        except RoleError:
            return Role("brand") if self.answers_for in (STEWARD, "steward", "") else Role("customer")

    def items_for(self, x: DueInput) -> list[str]:
        items = self.items(x) if callable(self.items) else self.items
        return list(items)

    def leader(self, x: DueInput) -> str | None:
        """The item this one follows, or None."""
        leader = self.follows(x) if self.follows is not None else None
        return leader if leader and leader != x.item else None

    def move_for(self, step: str) -> str | None:
        """The move a step makes: a move's own name, or the one ``runs`` maps the step to."""
        return step if step in self.moves else self.runs.get(step)

    def rung(self, text: str) -> Rung:
        for r in self.parsed_rungs:
            if r.text == text:
                return r
        raise SpecError(f"clocks.{self.name} has no rung {text!r}")


_registry: dict[str, ClockSpec] = {}
# Finds a spec not registered yet: a versioned name (``svc.clock@sha256:…``) loads its stored bundle.
_resolver: Callable[[str], ClockSpec | None] | None = None


# Hear each spec as it is registered (calendars.apps: a submit step's transport has its receipts heard).
_listeners: list[Callable[[ClockSpec], None]] = []


def on_register(fn: Callable[[ClockSpec], None]) -> None:
    """Call ``fn`` for every spec registered from now on, and for each one already registered."""
    if fn not in _listeners:
        _listeners.append(fn)
        for spec in list(_registry.values()):
            fn(spec)


def register(name: str, spec: ClockSpec) -> ClockSpec:
    _registry[name] = spec
    for fn in _listeners:
        fn(spec)
    return spec


def set_resolver(fn: Callable[[str], ClockSpec | None]) -> None:
    global _resolver
    _resolver = fn


def get(name: str) -> ClockSpec:
    spec = _registry.get(name)
    if spec is None and _resolver is not None:
        spec = _resolver(name)
        if spec is not None:
            register(name, spec)
    if spec is None:
        raise SpecError(f"no clock spec {name!r} is registered")
    return spec
