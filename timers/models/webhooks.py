"""The webhook endpoints' tables: where a brand's own systems hear its record, and each try at a delivery
(timers/webhooks.py)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ..fields import IdField
from ..ids import new_id
from .tenants import Brand


def new_webhook_endpoint_id() -> str:
    return new_id("we")


class WebhookEndpoint(models.Model):
    """Where a brand's own systems hear its record: every event an endpoint's ``enabled_events`` match is
    POSTed to ``url``, signed with ``secret``, through the outbox (transport ``webhook``), in record order.

    Mode-scoped as keys are: a live endpoint hears the brand's live clock, a test endpoint its test clocks.
    Its deliveries are outbox rows whose domain is the endpoint's id, so one endpoint's backlog is claimed
    and sent in order on its own, apart from the clocks' sends and from other endpoints."""

    class Status(models.TextChoices):
        ENABLED = "enabled"
        DISABLED = "disabled"  # hears nothing new; what it is owed waits, in order, until it is enabled again

    id = IdField(primary_key=True, max_length=32, default=new_webhook_endpoint_id, editable=False)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, db_index=False, related_name="webhook_endpoints")
    livemode = models.BooleanField(help_text="Hears the live clock (a live key made it), else the test clocks")
    url = models.CharField(max_length=2048)
    enabled_events = models.JSONField(default=list, help_text='Event types: "*", an exact type, or "prefix.*"')
    secret = models.CharField(max_length=80, help_text="Signs each delivery (whsec_…); shown once, at creation")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ENABLED)
    description = models.CharField(max_length=5000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(name="webhook_endpoint_status_known",
                                   condition=Q(status__in=["enabled", "disabled"])),
        ]
        indexes = [
            # GET /webhook_endpoints: a brand's endpoints of one mode, in the order they were made.
            models.Index(fields=["brand", "livemode", "created_at", "id"], name="webhook_endpoint_list"),
            # The fan-out (timers/webhooks.py): which endpoints hear a batch's brand, one probe per batch.
            models.Index(fields=["brand", "livemode"], name="webhook_endpoint_hears",
                         condition=Q(status="enabled")),
        ]

    def __str__(self) -> str:
        return self.description or self.url


class WebhookAttempt(models.Model):
    """One try at delivering an event to an endpoint, written right after the POST returned (or failed): the
    delivery log the owner console shows, and what an in-doubt delivery is checked against before it is sent
    again (a 2xx here means it arrived)."""

    # No index of its own: the two below lead with it, and every attempt's insert would pay a third.
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="attempts", db_index=False)
    event_id = models.CharField(max_length=32)
    event_type = models.CharField(max_length=64)
    submission = models.CharField(max_length=40, help_text="The outbox row (timers_outbox.id) this try sent")
    attempt = models.PositiveIntegerField(help_text="The n-th try of this event at this endpoint, resends included")
    at = models.DateTimeField(help_text="Wall time the POST left")
    status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The HTTP status, if it answered")
    answer = models.TextField(blank=True, help_text="The start of the answer's body")
    error = models.TextField(blank=True, help_text="Why it failed, when it did")
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            # The console's delivery log: an endpoint's attempts, newest first.
            models.Index(fields=["endpoint", "-id"], name="webhook_attempt_log"),
            # An event's tries at an endpoint (the attempt number; the console's resend).
            models.Index(fields=["endpoint", "event_id"], name="webhook_attempt_event"),
            # Did this submission arrive? (an in-doubt delivery is asked here before it is sent again)
            models.Index(fields=["submission"], name="webhook_attempt_submission"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.status or self.error[:40]}"

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300
