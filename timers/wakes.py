"""Waking the sleeping workers: a NOTIFY at the commit that names the domain with work, and when it is owed.

A lost notification costs a poll's wait, never a firing: every worker wakes at least each ``MAX_SLEEP``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .clock import MAX_SLEEP
from .sql import sessions

CHANNEL = "keeping_time_wake"

# A live timer owed further ahead than a worker's longest sleep wakes nobody: every sleeping worker wakes before
# it is owed and finds it. The second is slack for the arming's commit and a step under way when it lands.
WAKE_HORIZON = timedelta(seconds=MAX_SLEEP + 1)


def wake_payload(domain: str, owed_at: datetime | None = None) -> str:
    """A wake's payload: the domain, and the instant its new timer is owed (none: wake whatever the time)."""
    return domain if owed_at is None else f"{domain} {owed_at.timestamp():.6f}"


def notify_workers(domain: str, owed_at: datetime | None = None) -> None:
    """Wake the sleeping workers, at the commit, naming the domain that has work (an early timer, an
    advance): a worker runs that domain first. With ``owed_at``, only a worker whose sleep would end after it
    wakes. A lost notification costs a poll's wait, never a firing."""
    sessions.notify(CHANNEL, wake_payload(domain, owed_at))
