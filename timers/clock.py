"""The one object that answers "now" for a clock domain.

Domain code asks its clock, never the wall: the live domain reads the wall clock, a test clock is
frozen, and tests drive the live loop with a virtual wall clock that jumps to each alarm.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Protocol


def wall_now() -> datetime:
    """The only wall-clock read in the runtime (metadata such as created_at, and the live clock)."""
    return datetime.now(UTC)  # wall-clock ok


class Clock(Protocol):
    def now(self) -> datetime: ...

    def sleep_until(self, when: datetime | None, wake: threading.Event) -> None: ...


# The live loop's longest sleep: arming a timer owed later than this (and a margin) from now notifies no worker,
# since every sleeping worker wakes before it is owed and finds it (timers.wakes.WAKE_HORIZON).
MAX_SLEEP = 5.0


class WallClock:
    def __init__(self, max_sleep: float = MAX_SLEEP):
        self.max_sleep = max_sleep

    def now(self) -> datetime:
        return wall_now()

    def sleep_until(self, when: datetime | None, wake: threading.Event) -> None:
        # Sleep in slices so SIGTERM and newly requested work are noticed between steps.
        delay = self.max_sleep if when is None else (when - self.now()).total_seconds()
        wake.wait(max(0.0, min(delay, self.max_sleep)))


class FrozenClock:
    def __init__(self, at: datetime):
        self.at = at

    def now(self) -> datetime:
        return self.at

    def sleep_until(self, when: datetime | None, wake: threading.Event) -> None:
        if when is not None and when > self.at:
            self.at = when


class VirtualWallClock(FrozenClock):
    """A wall clock for tests and `tick --compare`: sleeping jumps straight to the alarm."""
