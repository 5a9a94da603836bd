"""Standby windows (place 7): a member on standby from now for a span, one window at a time; its end is a
timer, and closing it early ends that timer.
"""

from __future__ import annotations

from datetime import timedelta

from dateutil.relativedelta import relativedelta
from django.db import IntegrityError, transaction

from timers.armer import Armer
from timers.domains import domain_id
from timers.errors import KeepingTimeError
from timers.timeutil import iso_z

from .kinds import WINDOW
from .members import brand_member
from .models import Window


def window_open(*, armer: Armer, member: str, span: timedelta | relativedelta, brand_id: str) -> Window:
    """A member's standby window, open from now for ``span``; its end is a timer (place 7)."""
    user = brand_member(member, brand_id)
    now = armer.now
    closes = now + span
    if closes <= now:
        raise KeepingTimeError("a standby window lasts a positive span", code="invalid_span")
    try:
        with transaction.atomic():
            win = Window.objects.create(id=domain_id("win", armer.domain, member, now.isoformat(), length=10),
                                        brand_id=brand_id, domain=armer.domain, member=user, opened_at=now,
                                        closes_at=closes)
    except IntegrityError:
        raise KeepingTimeError(f"{member} has a standby window open already", code="window_open",
                               status=409) from None
    armer.arm(f"{win.id}:window:standby:open", owed_at=closes, handler=WINDOW, data={"window": win.id},
              opened_at=now)
    armer.record("window.opened", subject=win.id, data={"member": member, "closes": iso_z(closes)})
    return win


def window_close(*, armer: Armer, window: Window, why: str = "closed") -> Window:
    if window.status != Window.Status.OPEN:
        raise KeepingTimeError(f"{window.id} is closed", code="window_closed", status=409)
    window.status, window.closed_at = Window.Status.CLOSED, armer.now
    window.save(update_fields=["status", "closed_at"])
    if why == "closed":
        armer.supersede(f"{window.id}:window:standby:open", by="window.closed")
    armer.record("window.closed", subject=window.id, data={"member": window.member.get_username(), "why": why})
    return window
