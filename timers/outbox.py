"""Outside sends, after the commit: one submission id per attempt, and a send in doubt asks first.

A transport is registered by name with ``send(submission_id, payload) -> receipt`` and
``lookup(submission_id) -> receipt | None``. A row is marked ``sending`` in its own transaction before
the send; if the process dies before the receipt is written, the row stays ``sending`` (in doubt), and
the next delivery asks the outside system whether that submission arrived before sending anything.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Protocol

from django.db import transaction

from .clock import wall_now
from .models import Outbox

log = logging.getLogger(__name__)


class Transport(Protocol):
    def send(self, submission_id: str, payload: dict) -> dict: ...

    def lookup(self, submission_id: str) -> dict | None: ...


class RecordingTransport:
    """An outside system that remembers every submission it received (tests, demos and --compare)."""

    def __init__(self) -> None:
        self.received: Counter[str] = Counter()

    def send(self, submission_id: str, payload: dict) -> dict:
        self.received[submission_id] += 1
        return {"received": submission_id}

    def lookup(self, submission_id: str) -> dict | None:
        return {"received": submission_id} if self.received[submission_id] else None

    def sent_twice(self) -> int:
        return sum(1 for n in self.received.values() if n > 1)


_transports: dict[str, Transport] = {"recording": RecordingTransport()}


def register(name: str, transport: Transport) -> None:
    _transports[name] = transport


def transport(name: str) -> Transport:
    return _transports[name]


def deliver(domain: str | None, *, limit: int = 500) -> int:
    """Send what is pending (and settle what is in doubt); returns how many were delivered."""
    sent = 0
    in_outer = transaction.get_connection().in_atomic_block
    qs = Outbox.objects.filter(status__in=[Outbox.Status.PENDING, Outbox.Status.SENDING])
    if domain is not None:
        qs = qs.filter(domain=domain)
    while sent < limit:
        with transaction.atomic():
            row = qs.select_for_update(skip_locked=True).order_by("created_at", "id").first()
            if row is None:
                return sent
            t = _transports.get(row.transport)
            if t is None:
                row.status, row.error = Outbox.Status.FAILED, f"no transport {row.transport!r}"
                row.save(update_fields=["status", "error"])
                continue
            receipt = t.lookup(row.id) if row.status == Outbox.Status.SENDING else None
            if receipt is None and not in_outer:
                # Mark in doubt before the send, durably: a crash after the send leaves it in doubt.
                row.status = Outbox.Status.SENDING
                row.save(update_fields=["status"])
        if receipt is None:
            try:
                receipt = t.send(row.id, row.payload)
            except Exception as exc:  # the row stays in doubt; the next delivery asks first
                log.warning("send %s failed: %s", row.id, exc)
                Outbox.objects.filter(pk=row.pk).update(status=Outbox.Status.SENDING, error=str(exc)[:500])
                return sent
        Outbox.objects.filter(pk=row.pk).update(status=Outbox.Status.SENT, receipt=receipt, sent_at=wall_now())
        sent += 1
    return sent
