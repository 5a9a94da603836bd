"""Who may use the apps: a brand's members and owners (Django users with a membership), and the customer
portal's one-hour sessions (Stripe's customer-portal sessions)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from calendars.models import Subject
from timers.fields import IdField
from timers.ids import new_id
from timers.models import Brand


class Membership(models.Model):
    """A user's place in a brand: an owner signs in to the owner console (a staff user) and sees only the
    brand's objects; a member signs in to the delivery portal and sees only their own Tasks and clocks."""

    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices)
    name = models.CharField(max_length=200, blank=True,
                            help_text="The name clocks and notifications use for this person (answers_for)")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "brand"], name="membership_once")]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} of {self.brand}"


def new_portal_session_id() -> str:
    return new_id("pts")


class PortalSession(models.Model):
    """A link the brand makes for one subject's customer: valid for an hour, it signs the customer in for
    that subject (``POST /portal_sessions``). Only the token's sha256 is stored."""

    id = IdField(primary_key=True, max_length=32, default=new_portal_session_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="portal_sessions")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="portal_sessions")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(name="portal_session_expires_after_creation",
                                              condition=models.Q(expires_at__gt=models.F("created_at")))]

    def __str__(self) -> str:
        return f"{self.id} · {self.subject_id}"
