"""Arming and holding timers outside a firing: keyword-only writes that views, commands and domain code call.

A timer armed here fires on the next tick of its domain; one armed after its owed time fires at once, in
place, and is never late.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from . import gate
from .domains import domain_now, domain_seed, domain_writable
from .errors import KeepingTimeError
from .handlers import get as get_handler
from .ids import brand_domain, new_id
from .keys import parse
from .models import Brand, Commit, Timer, is_live
from .rearm import UNHOLDABLE_KINDS, Rearm
from .record import commit_json
from .sql import arming as arming_sql
from .wakes import CHANNEL, WAKE_HORIZON, notify_workers, wake_payload


def timer_arm(*, brand: Brand, key: str, owed_at: datetime, domain: str | None = None, handler: str | None = None,
              data: dict[str, Any] | None = None, opened_at: datetime | None = None, version: str = "",
              runtime: bool = False, checked: bool = False) -> Timer:
    """Arm ``key`` on ``domain``: a test clock, or the brand's live clock (None or "live" name it). Refused on
    a test clock that is advancing or deleted (domain_writable; ``runtime``: the runtime's own write between
    an advance's batches); ``checked``: the caller has asked already (a DirectArmer)."""
    domain = brand_domain(domain, brand.id)
    k = parse(key)
    handler = handler or k.kind
    get_handler(handler)  # unknown handler: an error now, never at fire time
    now = domain_now(domain=domain) if checked else domain_writable(domain=domain, runtime=runtime)
    timer = Timer(id=new_id("tmr", seed=f"{domain_seed(domain)}|{key}"), domain=domain, brand=brand, key=key,
                  owner=k.owner, kind=k.kind, place=k.place, handler=handler, owed_at=owed_at,
                  opened_at=opened_at or now, armed_at=now, version=version, data=data or {})
    live = is_live(domain)
    try:
        with transaction.atomic():
            arming_sql.arm_insert(timer)
            # Its key may be in history (PostgreSQL keeps history apart: no one unique index spans both). Asked
            # after the INSERT, in a statement of its own: the INSERT waits for a firing of the same key under
            # way, and only a later statement's snapshot sees the row that firing moved to history.
            # A brand's first live timer names its live clock: the live loop runs the domains LiveClock names.
            # A near timer wakes the workers, in the arming's own transaction: PostgreSQL delivers it at the
            # commit, and a NOTIFY of its own after the commit was a second commit (an XID, a WAL flush).
            notify = (CHANNEL, wake_payload(domain, owed_at)) if live and owed_at < now + WAKE_HORIZON else None
            if arming_sql.arm_check(timer, name_live_clock=live, notify=notify):
                raise IntegrityError(key)
    except IntegrityError:
        raise KeepingTimeError(f"timer {key!r} is already armed on {domain}", code="timer_exists",
                               status=409) from None
    return timer


def timer_hold(*, timer: Timer, by: str, now: datetime) -> Timer:
    """Hold an armed timer (``by``: who or what holds it). A clock's rungs and due timer ring on the clock's
    date whoever the work waits on, so they are never held."""
    if timer.kind in UNHOLDABLE_KINDS:
        raise KeepingTimeError(f"timer {timer.id} is a clock's {timer.kind} timer; clock rungs are never held",
                               code="rung_not_holdable", status=409)
    if timer.status != Timer.Status.ARMED:
        raise KeepingTimeError(f"timer {timer.id} is {timer.status}; only an armed timer can be held",
                               code="timer_not_armed", status=409)
    timer.remaining = max(timedelta(0), timer.owed_at - now)  # type: ignore[operator]  # armed, so owed
    timer.status, timer.owed_at, timer.held_since, timer.held_by = "held", None, now, by
    timer.save(update_fields=["status", "owed_at", "held_since", "held_by", "remaining"])
    return timer


def timer_resume(*, timer: Timer, now: datetime, cap: datetime | None = None) -> Timer:
    """Resume under the same key at now + remaining (or the cap, if earlier)."""
    if timer.status != Timer.Status.HELD:
        raise KeepingTimeError(f"timer {timer.id} is {timer.status}; only a held timer resumes",
                               code="timer_not_held", status=409)
    owed: datetime = now + timer.remaining  # type: ignore[operator]  # held, so it keeps what it had left
    timer.owed_at = min(owed, cap) if cap is not None else owed
    timer.status, timer.held_since, timer.held_by, timer.remaining = "armed", None, "", None
    timer.by = Rearm.RESUME.value  # a re-arm names its cause from the closed list
    timer.tick_pass = 1  # resumed from outside a firing: it starts its instant's first pass
    timer.save(update_fields=["status", "owed_at", "held_since", "held_by", "remaining", "by", "tick_pass"])
    return timer


def timer_retry(*, timer: Timer) -> Timer:
    """Run again a timer an error pushed out (held ``error``, "failed, held for the owner console"): resumed
    under its own key, owed now on its clock (the time it had left, which a push-out at its owed time makes
    none), so the next tick fires it in place. What the owner console's Retry and ``timers retry`` call.
    Refused for any other timer, and while its test clock advances (a write like any other)."""
    if timer.status != Timer.Status.HELD or timer.held_by != "error":
        raise KeepingTimeError(f"timer {timer.id} is {timer.status}"
                               f"{' by ' + timer.held_by if timer.held_by else ''}; only a timer an error held "
                               "is retried", code="timer_not_failed", status=409)
    now = domain_writable(domain=timer.domain)
    with transaction.atomic():
        timer = timer_resume(timer=timer, now=now)
        if is_live(timer.domain):
            notify_workers(timer.domain, timer.owed_at)  # at the commit: a sleeping worker runs it now
    return timer


def timer_wake(*, timer: Timer) -> dict[str, Any]:
    """A wake delivered outside the tick, through the gate's wake path (timers/gate.py): a fired timer
    answers replayed: true with its first commit. Refused while its test clock advances, like any write."""
    domain_writable(domain=timer.domain)
    result = gate.wake(domain=timer.domain, timer_ids=[timer.id])[0]
    if not result.replayed:
        return {"replayed": False, "status": result.status, "commit": None}
    commit = Commit.objects.filter(domain=timer.domain, key=timer.key).order_by("at", "id").first()
    return {"replayed": True, "status": result.status, "commit": commit_json(commit)}
