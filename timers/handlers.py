"""The kind handlers' registry: the runtime calls domain code only through these.

A handler receives a Firing (timers.engine.Firing) and *proposes*: it records events, arms, supersedes,
holds or resumes timers and queues outside sends on the Firing; the gate commits the proposal under the
timer's key, or refuses it (raise timers.errors.Refused). A handler that writes domain tables with the
ORM registers with ``atomic=True`` so a failure rolls its writes back with its proposal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dateutil.relativedelta import relativedelta

from .errors import UnknownHandler

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

    data: {"every": {"days": 1} (relativedelta keywords), "count": 3, "n": 1}
    """
    data = dict(f.timer.data or {})
    n = int(data.get("n", 1))
    count = int(data.get("count", 1))
    f.record("timer.fired", data={"n": n, "of": count})
    f.what = f"{n} of {count}"
    if n < count:
        every = relativedelta(**data.get("every", {"days": 1}))
        key = f.key
        nxt = f"{key.owner}:{key.kind}:{key.name}:{n + 1}"
        f.arm(nxt, owed_at=f.timer.owed_at + every, handler="repeat", data={**data, "n": n + 1},
              what=f"{key.name} · {n + 1} of {count}, the next")


def register_builtin() -> None:
    register("noop", noop, replace=True)
    register("repeat", repeat, replace=True)
