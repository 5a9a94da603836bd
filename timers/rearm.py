"""The closed list of re-arms: the only causes for which an armed timer may come back at another time.

A timer is re-armed when a supersede names its successor, when it is retimed under its own key, and when
it is held and resumed. Each of these names its cause (``by``) from this one enumeration, and a cause not
on it is a programming error (ValueError), never a record. Anything else that happens (activity on a job,
a note) is read by the timer when it fires; it does not move the timer. A supersede with no successor
only ends a timer (a job delivered, a test clock deleted): that is not a re-arm, and its ``by`` is free.
"""

from __future__ import annotations

from enum import StrEnum


class Rearm(StrEnum):
    CLOCK_MOVED = "clock.moved"  # a step moved a clock's date (the extension)
    POLICY_SET = "policy.set"  # a brand's per-Service policy value changed (stall_days)
    HOLD = "hold"
    RESUME = "resume"
    CALENDAR_POSTPONE = "calendar.postpone"  # a postponement notice moved the dates it names
    CLOSED_DAYS = "calendar.closed_days"  # a closed day was added or removed: dates roll again
    DUE_INPUT = "due.input"  # a commit changed what a due function reads
    CLOCK_REPINNED = "repin"  # services/repin.py: a clock moved to another version (its by since v1)
    SUBSCRIPTION_UPDATE = "subscription.update"  # the next mint re-armed with the new input
    CLOCK_REOPENED = "clock.reopened"  # an act taken back (an acknowledgement): the date's reminders ahead again
    SCHEDULE_UPDATE = "schedule.update"  # a schedule's spec, zone, bounds or skip changed: its next fire re-armed


def rearm_cause(by: str) -> Rearm:
    """``by`` as a member of the list, or ValueError: a caller naming a cause off the list is a bug."""
    try:
        return Rearm(by)
    except ValueError:
        raise ValueError(f"{by!r} is not on the closed re-arm list ({', '.join(Rearm)}); an armed timer "
                         "re-arms only for one of those") from None


# Clock rungs and due timers ring on the clock's date, whoever the work waits on: they are never held.
UNHOLDABLE_KINDS = ("rung", "due")
