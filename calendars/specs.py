"""Clock declarations: what a Service writes under ``clocks`` (due, rungs, moves, hard…), and their registry.

A malformed rung or move is an error when the spec is made (at load time), naming the clock and field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from typing import Any

from .offsets import OffsetError, Rung, parse_rung


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
    answers_for: str = "the brand"
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
    where: str = ""  # the Service file that declares it, for error messages
    parsed_rungs: tuple[Rung, ...] = field(init=False, default=())

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
        for name, fn in self.moves.items():
            if not callable(fn):
                raise SpecError(f"{where}clocks.{self.name}.moves.{name}: a function that returns a date")
        object.__setattr__(self, "parsed_rungs", tuple(parsed))

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
