"""The apps' own writes and reads of who may act: portal sessions (a customer's one-hour link) and a brand's
members. Keyword-only; the wall clock only for the links' expiry (a sign-in is a real-world act, not
domain time)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from calendars.models import Subject
from timers.clock import wall_now
from timers.errors import KeepingTimeError
from timers.models import Brand

from .models import Membership, PortalSession

PORTAL_SESSION_LIFETIME = timedelta(hours=1)
STAFF_NAMES = ("the brand",)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def portal_session_create(*, brand: Brand, subject: Subject, now: datetime | None = None) -> tuple[PortalSession, str]:
    """A link that signs a customer in for ``subject`` for an hour; returns (session, its path). The token
    is shown once: only its sha256 is kept."""
    if subject.brand_id != brand.id:
        raise KeepingTimeError(f"no subject {subject.id}", code="resource_missing", status=404)
    token = secrets.token_urlsafe(32)
    now = now or wall_now()
    session = PortalSession.objects.create(brand=brand, subject=subject, digest=_digest(token), created_at=now,
                                           expires_at=now + PORTAL_SESSION_LIFETIME)
    return session, f"/portal/customer/session/{token}"


def portal_session_open(*, token: str, now: datetime | None = None) -> PortalSession | None:
    """The session this token opens, if it has not expired; None for an unknown, wrong or expired one alike."""
    if not token or len(token) > 128:
        return None
    found = PortalSession.objects.select_related("subject__calendar", "brand").filter(digest=_digest(token)).first()
    if found is None or found.expires_at <= (now or wall_now()):
        return None
    return found


def brand_people(brand_id: str) -> set[str]:
    """The names that stand for the brand: "the brand", and each member's and owner's name and username.
    A clock answered for by one of these is the brand's; any other name is the customer's."""
    names = set(STAFF_NAMES)
    for name, username in Membership.objects.filter(brand_id=brand_id).values_list("name", "user__username"):
        names.update(n for n in (name, username) if n)
    return names


def member_names(user) -> set[str]:
    """What clocks call this member: their username and their membership names."""
    names = {user.get_username()}
    names.update(n for n in Membership.objects.filter(user=user).values_list("name", flat=True) if n)
    return names
