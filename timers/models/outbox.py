"""The outbox's table: sends to outside systems, which leave after the commit that queued them (timers/outbox.py)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ..fields import ByteOrderCharField, IdField
from .tenants import Brand

OUTBOX_OWED_IN_ORDER = models.Index(fields=["domain", "key", "attempt", "seq"], name="outbox_owed_in_order",
                                    condition=Q(transport="webhook", status__in=["pending", "sending"]))


class Outbox(models.Model):
    """Sends to outside systems leave from here after the commit, one submission id per attempt.

    A sender claims rows with a lease (``claimed_by``, ``lease_until``). A row claimed by a sender whose
    lease expired, or whose database session is gone (killed mid-send), is *in doubt*: the next sender
    asks the outside system about that submission before it sends anything again. A row being sent by a
    live sender is not in doubt and is left alone.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        FAILED = "failed"
        VOIDED = "voided"  # its test clock was deleted before it left

    id = IdField(primary_key=True, max_length=40, help_text="The submission id.")
    domain = models.CharField(max_length=32)
    brand = models.ForeignKey(Brand, on_delete=models.CASCADE, related_name="outbox", null=True)
    key = ByteOrderCharField(max_length=255)
    attempt = models.PositiveIntegerField()
    seq = models.PositiveSmallIntegerField(default=0, db_default=0, help_text="The firing's sends, from 0")
    transport = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    receipt = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=80, blank=True, help_text="The sender holding (or last holding) it.")
    lease_until = models.DateTimeField(null=True, blank=True)
    tries = models.PositiveIntegerField(default=0, db_default=0, help_text="Sends that raised.")
    next_try_at = models.DateTimeField(null=True, blank=True, help_text="Not claimed again before this.")

    class Meta:
        verbose_name = "outbox send"
        constraints = [
            models.UniqueConstraint(fields=["domain", "key", "attempt", "seq"], name="outbox_one_submission_per_send"),
            models.CheckConstraint(
                name="outbox_status_known",
                condition=Q(status__in=["pending", "sending", "sent", "failed", "voided"]),
            ),
            models.CheckConstraint(
                name="outbox_sending_is_claimed", condition=~Q(status="sending") | ~Q(claimed_by=""),
            ),
        ]
        indexes = [
            # The outbox sender (timers/outbox.py): _claim takes a domain's owed rows ORDER BY created_at, id
            # with SKIP LOCKED; every key is in the index, so the rows come out in claim order and the LIMIT
            # stops the scan (no sort of every owed row, whatever the planner's row estimate). Also
            # _owed_domains (the worker loop's sweep: a skip scan, a probe per domain) and _held_elsewhere.
            models.Index(fields=["domain", "created_at", "id"], name="outbox_owed_domain",
                         condition=Q(status__in=["pending", "sending"])),
            # An ordered domain's claim (timers/outbox.py, _claim_ordered: a webhook endpoint's deliveries, in
            # record order): its owed rows by key, so the head is the first index entry and the LIMIT stops the
            # scan, however long the endpoint's history. Only webhook rows: the tick's sends never pay for it.
            OUTBOX_OWED_IN_ORDER,
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"
