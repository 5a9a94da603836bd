"""A clock's timers by name: their handlers and keys (a rung's, a due's, each day's of an ``ack daily`` rung).

Pure: a key is what the clock item, the rung and the move are, so the handlers, a move's supersede, an
acknowledgement and a repin all name the same timers without asking the database.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import ClockItem
    from .offsets import Rung
    from .specs import ClockSpec

RUNG_HANDLER = "calendars.rung"
DUE_HANDLER = "calendars.due"


def rung_key(item: ClockItem, rung: Rung, *, move: int, day: int | None = None) -> str:
    period = item.clock.period
    if rung.kind == "run":
        # No @move: a move never arms a second run. An undo that armed the date again (``reopened``) does.
        again = f" again {item.reopened}" if getattr(item, "reopened", 0) else ""
        return f"{item.owner_key}:rung:{rung.text}:{period}{again}"
    occurrence = period if day is None else f"{period} day {day}"
    return f"{item.owner_key}:rung:{rung.text}:{occurrence}@{move}"


def due_key(item: ClockItem, *, move: int) -> str:
    return f"{item.owner_key}:due:{item.clock.name}:{item.clock.period}@{move}"


def ack_keys(item: ClockItem, rung: Rung, move: int, *, due: date) -> list[str]:
    """Every day's key of an ``ack daily`` rung whose chain ran up to ``due`` (the chain arms them one day
    at a time): as many days as lie between its first day and the date, so ``ack daily 1mo`` has 28 to 31."""
    days = (due - rung.day(due)).days
    return [rung_key(item, rung, move=move, day=day) for day in range(1, max(1, days) + 1)]


def item_keys(item: ClockItem, spec: ClockSpec) -> list[str]:
    """Every key the item has armed at its current move: its due, and each rung's (each day of an ack rung)."""
    keys = [due_key(item, move=item.moves)]
    for rung in spec.parsed_rungs:
        if rung.kind == "ack":
            keys += ack_keys(item, rung, item.moves, due=item.due_date)
        else:
            keys.append(rung_key(item, rung, move=item.moves))
    return keys
