"""The kind handlers' registry: the runtime calls domain code only through these.

A handler receives a Firing (timers.engine.Firing) and *proposes*: it records events, arms, supersedes,
holds or resumes timers and queues outside sends on the Firing; the gate commits the proposal under the
timer's key, or refuses it (raise timers.errors.Refused). A handler that writes domain tables with the
ORM registers with ``atomic=True`` so a failure rolls its writes back with its proposal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dateutil.relativedelta import relativedelta

from .errors import UnknownHandler
from .timeutil import local_instant, zone_named

if TYPE_CHECKING:
    from .engine import Firing


@dataclass(frozen=True)
class Handler:
    name: str
    fire: Callable[[Firing], None]
    atomic: bool = False


_registry: dict[str, Handler] = {}


def register(name: str, fire: Callable[[Firing], None], *, atomic: bool = False, replace: bool = False) -> None:
    if name in _registry and not replace and _registry[name].fire is not fire:
        raise ValueError(f"handler {name!r} is already registered")
    _registry[name] = Handler(name, fire, atomic)


def unregister(name: str) -> None:
    _registry.pop(name, None)


def get(name: str) -> Handler:
    try:
        return _registry[name]
    except KeyError:
        raise UnknownHandler(
            f"no handler named {name!r} is registered; known: {', '.join(sorted(_registry)) or 'none'}"
        ) from None


def names() -> list[str]:
    return sorted(_registry)


def noop(f: Firing) -> None:
    """Records that the timer fired, and nothing else: the bench's kind and the smallest demo."""
    f.record("timer.fired", data=f.timer.data or {})
    f.what = f.timer.data.get("what") or "fired"


def repeat(f: Firing) -> None:
    """Records, then arms the next occurrence ``every`` later while ``count`` lasts.

    data: {"every": {"days": 1} (relativedelta keywords), "count": 3, "n": 1, "zone": "America/New_York"}

    Days, weeks, months and years step in local wall time in ``zone`` (UTC when absent), from the first
    occurrence (``from``, kept in the data), by the calendar's DST rule: a skipped minute rings at the next
    minute that exists, a repeated one at its first occurrence. A timer started at 02:30 EST rings at 02:30
    EDT after the spring change (03:00 on the day itself, when 02:30 does not exist). Hours, minutes and
    seconds alone are elapsed time.
    """
    data = dict(f.timer.data or {})
    n = int(data.get("n", 1))
    count = int(data.get("count", 1))
    f.record("timer.fired", data={"n": n, "of": count})
    f.what = f"{n} of {count}"
    if n < count:
        owed = f.timer.owed_at
        assert owed is not None  # a firing timer is armed, so owed
        nxt_at = repeat_at(data, n, owed)
        key = f.key
        nxt = f"{key.owner}:{key.kind}:{key.name}:{n + 1}"
        base = {"from": data["from"], "from_n": data.get("from_n", 1)} if data.get("from") else \
            {"from": owed.isoformat(), "from_n": n}
        f.arm(nxt, owed_at=nxt_at, handler="repeat", data={**data, **base, "n": n + 1},
              what=f"{key.name} · {n + 1} of {count}, the next")


def repeat_at(data: dict[str, Any], n: int, owed_at: datetime) -> datetime:
    """When occurrence ``n + 1`` of a repeat is owed (``owed_at`` is occurrence ``n``'s): counted from the
    occurrence ``from_n`` owed at ``from`` (this one, when the data names none), so a step that landed on the
    next minute of a DST gap does not carry into the next."""
    every = relativedelta(**data.get("every", {"days": 1}))
    if not (every.years or every.months or every.weeks or every.days):
        return owed_at + every  # elapsed time: DST does not move it
    zone = zone_named(data.get("zone") or "UTC")
    if data.get("from"):
        base, steps = datetime.fromisoformat(data["from"]), n + 1 - int(data.get("from_n", 1))
    else:
        base, steps = owed_at, 1
    return local_instant(base.astimezone(zone).replace(tzinfo=None) + every * steps, zone)


def register_builtin() -> None:
    register("noop", noop, replace=True)
    register("repeat", repeat, replace=True)
