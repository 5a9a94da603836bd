"""Portal sessions: a link the brand makes (``POST /portal_sessions``) that signs a subject's customer in to the
customer portal for an hour. Keyword-only; the wall clock only for the link's expiry (a sign-in is a
real-world act, not domain time)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from calendars.models import Contact, Subject
from timers.clock import wall_now
from timers.domains import domain_writable
from timers.errors import KeepingTimeError
from timers.models import Brand, brand_domain

from .models import PortalSession

PORTAL_SESSION_LIFETIME = timedelta(hours=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def portal_session_create(*, brand: Brand, subject: Subject, contact: Contact | None = None,
                          now: datetime | None = None,
                          lifetime: timedelta = PORTAL_SESSION_LIFETIME) -> tuple[PortalSession, str]:
    """A link that signs one of the customer's contacts in for ``subject`` for an hour (default: the primary
    contact; a customer with none yet: the customer, unnamed); returns (session, its path). The token is shown
    once: only its sha256 is kept."""
    if subject.brand_id != brand.id:
        raise KeepingTimeError(f"no subject {subject.id}", code="resource_missing", status=404)
    if contact is not None and contact.subject_id != subject.id:
        err = KeepingTimeError(f"contact: {subject.name} has no contact {contact.id!r}", code="resource_missing",
                               status=404)
        err.param = "contact"
        raise err
    domain_writable(domain=brand_domain(subject.domain, brand.id))  # none for a deleted test clock's subject
    if contact is None:
        contact = Contact.objects.filter(subject=subject, primary=True).first()
    token = secrets.token_urlsafe(32)
    now = now or wall_now()
    session = PortalSession.objects.create(brand=brand, subject=subject, contact=contact, digest=_digest(token),
                                           created_at=now, expires_at=now + lifetime)
    # The token rides in the query, which every log the project configures cuts (keeping_time/log_filters.py,
    # gunicorn.conf.py), and the link redirects at once to a clean URL.
    return session, f"/portal/customer/session?token={token}"


def portal_session_open(*, token: str, now: datetime | None = None) -> PortalSession | None:
    """The session this token opens, once: the first open within its hour marks it used (one conditional
    UPDATE, so two opens at once can't both win); None for an unknown, wrong, expired or used one alike."""
    if not token or len(token) > 128 or "\x00" in token:
        return None
    now = now or wall_now()
    digest = _digest(token)
    if not PortalSession.objects.filter(digest=digest, used_at__isnull=True, expires_at__gt=now).update(used_at=now):
        return None
    return PortalSession.objects.select_related("subject__calendar", "brand", "contact").filter(digest=digest).first()
