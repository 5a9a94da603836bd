"""Subscriptions, jobs and money lines: what a Service runs for a subject."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from calendars.models import Subject
from timers.fields import IdField
from timers.ids import new_id
from timers.models import Brand


def new_subscription_id() -> str:
    return new_id("sbn", length=10)


def new_job_id() -> str:
    return new_id("job", length=10)


def new_money_id() -> str:
    return new_id("mny")


class Subscription(models.Model):
    """A Service ordered for a subject: its cycle renews, its schedules mint jobs."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        ENDED = "ended"  # canceled at the cycle's end, and the end came
        VOIDED = "voided"  # its test clock was deleted

    id = IdField(primary_key=True, max_length=32, default=new_subscription_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="subscriptions")
    domain = models.CharField(max_length=32, default="live")
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="subscriptions")
    service = models.CharField(max_length=64)
    version = models.CharField(max_length=80, blank=True)
    input = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    cancel_at_period_end = models.BooleanField(default=False)
    paused_at = models.DateTimeField(null=True, blank=True, help_text="its schedules mint nothing while paused")
    pause_note = models.CharField(max_length=200, blank=True)
    cycle = models.PositiveIntegerField(default=1)
    cycle_started_at = models.DateTimeField()
    usage = models.JSONField(default=dict, blank=True, help_text="allowances used this cycle, by Service")
    opened_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.id} {self.service}"


class Job(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        DELIVERED = "delivered"
        LAPSED = "lapsed"
        CANCELED = "canceled"
        VOIDED = "voided"

    id = IdField(primary_key=True, max_length=32, default=new_job_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="jobs")
    domain = models.CharField(max_length=32, default="live")
    service = models.CharField(max_length=64)
    version = models.CharField(max_length=80, blank=True)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, related_name="jobs")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="jobs")
    schedule = models.CharField(max_length=64, blank=True, help_text="the schedule that minted it")
    period = models.CharField(max_length=32)
    input = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    price_cents = models.IntegerField(default=0)
    late_at = models.DateTimeField(null=True, blank=True)
    late = models.BooleanField(default=False)
    waiting_on = models.CharField(
        max_length=200, blank=True, help_text="The party the work waits on; while set, its at-risk timer is held")
    last_activity_at = models.DateTimeField(
        null=True, blank=True, help_text="the last job.activity: a silent signal reads it when it fires")
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # period_taken: a schedule mints each period once, however often it is woken.
            models.UniqueConstraint(fields=["subscription", "schedule", "period"], name="period_taken",
                                    condition=Q(subscription__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.service} {self.period}"


class MoneyLine(models.Model):
    """One line of the ledger, in integer cents. Money moves last in an instant (place 8)."""

    class Kind(models.TextChoices):
        CHARGE = "charge"
        CREDIT = "credit"
        REFUND = "refund"
        HOLD = "hold"
        RELEASE = "release"

    class Status(models.TextChoices):
        OWED = "owed"
        COLLECTED = "collected"
        VOID = "void"

    id = IdField(primary_key=True, max_length=32, default=new_money_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="money")
    domain = models.CharField(max_length=32, default="live")
    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="money")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, null=True, blank=True, related_name="money")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    amount_cents = models.IntegerField()
    currency = models.CharField(max_length=3, default="usd")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OWED)
    memo = models.CharField(max_length=200, blank=True)
    owed_at = models.DateTimeField()
    collected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(name="money_amount_positive", condition=Q(amount_cents__gte=0)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount_cents / 100:.2f} {self.currency}"


def new_notification_id() -> str:
    return new_id("ntf")


class Notification(models.Model):
    """Who hears a lapse: one row per recipient (a person or a role by name), read by the apps.

    Written inside the firing that raised it (the gate commits it with the lapse, or nothing); the unique
    constraint means a replay or a redelivered wake never notifies twice. Each one also leaves as one email
    through the outbox ("email" transport), exactly once.
    """

    id = IdField(primary_key=True, max_length=32, default=new_notification_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="notifications")
    domain = models.CharField(max_length=32, default="live")
    recipient = models.CharField(max_length=200, help_text='a person or a role by name: "Ada Lovelace", "owner"')
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                             related_name="notifications", help_text="the recipient's account, once there is one")
    kind = models.CharField(max_length=40, help_text="clock.due, clock.passed, job.lapsed …")
    subject = models.CharField(max_length=64, help_text="what lapsed: the clock item or job id")
    key = models.CharField(max_length=255, help_text="the timer key whose firing raised it")
    message = models.TextField()
    created_at = models.DateTimeField(help_text="the domain's time of the lapse")
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["domain", "key", "recipient", "kind"], name="notification_once"),
        ]
        indexes = [models.Index(fields=["brand", "domain", "recipient", "created_at"], name="notification_inbox")]

    def __str__(self) -> str:
        return f"{self.kind} {self.subject} → {self.recipient}"
