"""A subject's calendar feed token: issued (shown once), revoked, and looked up; stored only as its sha256.

A feed token is 256 random bits, so a fast hash is right (as for API keys), and the lookup is one query by
the subject's id and the digest: an unknown subject, a wrong token and a revoked feed look the same.
"""

from __future__ import annotations

import hashlib
import secrets

from .models import Subject


def subject_feed_digest(token: str) -> str:
    # A feed token is 256 random bits: a fast hash is right, as for API keys.
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def subject_feed_rotate(*, subject: Subject) -> str:
    """Issue a new feed token and return it (shown once); the old one stops working at once."""
    token = secrets.token_urlsafe(32)
    subject.feed_digest = subject_feed_digest(token)
    Subject.objects.filter(pk=subject.pk).update(feed_digest=subject.feed_digest)
    return token


def subject_feed_revoke(*, subject: Subject) -> None:
    """No token works any more until the next rotate."""
    subject.feed_digest = ""
    Subject.objects.filter(pk=subject.pk).update(feed_digest="")


def subject_by_feed_token(*, subject_id: str, token: str | None) -> Subject | None:
    """The subject whose feed this token opens, or None: an unknown subject, a wrong token and a revoked
    feed look the same (one query by id and digest, the digest never empty). Its calendar and the feed's
    last stamp (``subject.feed_stamp``, when it has one) come with it."""
    digest = feed_token_digest(subject_id=subject_id, token=token)
    if digest is None:
        return None
    return (Subject.objects.select_related("calendar", "brand", "feed_stamp")
            .filter(pk=subject_id, feed_digest=digest).first())


def feed_token_digest(*, subject_id: str, token: str | None) -> str | None:
    """The digest a feed token is stored under, or None when the id or the token cannot open any feed."""
    if not subject_id or not token or len(token) > 256 or "\x00" in subject_id or len(subject_id) > 32:
        return None
    return subject_feed_digest(token)
