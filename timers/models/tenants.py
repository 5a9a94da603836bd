"""The tenant's tables: a brand, its API keys, its people's places in it, and the API's idempotent answers."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..fields import IdField
from ..ids import new_id


def new_brand_id() -> str:
    return new_id("brd")


def new_key_id() -> str:
    return new_id("key")


class Brand(models.Model):
    """The tenant: a brand owns its test clocks, timers and events, and sees only its own."""

    class Tier(models.TextChoices):
        # What time runs live (services/tiers.py): on a test clock every key runs on every tier.
        FREE = "free"  # time that stays on the job
        LAUNCH = "launch"  # time a Service holds for someone past the job: schedules, cycles, subject clocks
        TEAM = "team"  # time that needs a market of people (pools), or is sold as a guarantee

    id = IdField(primary_key=True, max_length=32, default=new_brand_id, editable=False)
    name = models.CharField(max_length=200, unique=True)
    tier = models.CharField(max_length=8, choices=Tier.choices, default=Tier.TEAM)
    created_at = models.DateTimeField()

    # Set on the instance a request's API key authenticates as (timers.api.auth), never stored: the key's mode
    # (read with getattr: unset on any other instance) and its id.
    livemode: bool
    api_key_id: str

    class Meta:
        constraints = [models.CheckConstraint(name="brand_tier_known", condition=models.Q(tier__in=["free", "launch",
                                                                                                   "team"]))]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A brand's secret key, stored as its sha256: the secret itself is shown once, at creation."""

    id = IdField(primary_key=True, max_length=32, default=new_key_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a key.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.brand})"


class Accepted(models.Manager["Membership"]):
    """Memberships with a person in them: an invite not yet accepted is no one's place in the brand, so every
    read of who may see or do what (the console, the delivery portal, a Task's member) leaves it out."""

    def get_queryset(self) -> models.QuerySet[Membership]:
        return super().get_queryset().filter(user__isnull=False)


class Membership(models.Model):
    """A person's place in a brand, part of the tenant beside it: an owner signs in to the owner console (a
    staff user) and sees only the brand's objects; a member signs in to the delivery portal and sees only their
    own Tasks and clocks. Pools (services.PoolMember) and clocks' answers_for name members.

    An invite is a membership with no user yet: the address it went to and the digest of its one-time link.
    Whoever the address names accepts it by that link (services.members.member_accept), signing in or
    choosing a password; until then it is nobody's, and ``Membership.objects`` does not see it
    (``Membership.everyone`` does: the brand's list of members, the invite's own page)."""

    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False, related_name="memberships",
                             null=True, blank=True, help_text="None until the invite is accepted")
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices)
    name = models.CharField(max_length=200, blank=True,
                            help_text="The name clocks and notifications use for this person (answers_for)")
    zone = models.CharField(max_length=64, blank=True,
                            help_text="The zone the delivery portal says this person's times in (an IANA name); "
                                      "blank: the brand calendar's")
    invited_email = models.CharField(max_length=254, blank=True, help_text="Where the invite went")
    invite_digest = models.CharField(max_length=64, blank=True,
                                     help_text="sha256 of the invite's one-time link; blank once accepted")
    invited_at = models.DateTimeField(null=True, blank=True, help_text="When the last invite went (wall time)")

    everyone = models.Manager()  # invites too
    objects = Accepted()  # the default (Meta.default_manager_name): members, who accepted

    class Meta:
        verbose_name = "member"
        base_manager_name = "everyone"
        default_manager_name = "objects"
        constraints = [
            models.UniqueConstraint(fields=["user", "brand"], name="membership_once"),
            # One open invite per address and brand: the same invite twice at once is one row.
            models.UniqueConstraint(fields=["brand", "invited_email"], condition=Q(user__isnull=True),
                                    name="membership_invited_once"),
            models.UniqueConstraint(fields=["invite_digest"], condition=~Q(invite_digest=""),
                                    name="membership_invite_link_once"),
            models.CheckConstraint(name="membership_someone", condition=Q(user__isnull=False) | ~Q(invited_email="")),
            models.CheckConstraint(name="membership_role_known", condition=Q(role__in=["owner", "member"])),
        ]

    def __str__(self) -> str:
        return f"{self.user or self.invited_email} · {self.role} of {self.brand}"

    @property
    def display_name(self) -> str:
        if self.user is None:
            return self.name or self.invited_email
        return self.name or self.user.get_full_name() or self.user.get_username()


class IdempotencyKey(models.Model):
    """A POST's first answer under its Idempotency-Key, kept 24 hours (Stripe's rules, timers/api/idempotency.py).

    Written in the request's own transaction with what the request did, so an answer is kept exactly when its
    effects are; a request that died left neither, and its key is free again."""

    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="idempotency_keys")
    livemode = models.BooleanField(help_text="The mode of the key that sent it: a key's answers are its mode's")
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64, help_text="sha256 of the method, path and body")
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=2000)
    status = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=100)
    body = models.BinaryField()
    created_at = models.DateTimeField(help_text="Wall time of the first request")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["brand", "livemode", "key"], name="idempotency_key_once"),
        ]
        indexes = [
            # timers/api/idempotency.py prunes answers older than a day, oldest first.
            models.Index(fields=["created_at"], name="idempotency_key_age"),
        ]

    def __str__(self) -> str:
        return f"{self.key} → {self.status}"
