"""The webhook line's one write a delivery: the try's log row and its receipt, together, beside its SQLite fallback.

A delivery that got its 2xx is logged (timers_webhookattempt) and marked sent (timers_outbox) by one statement,
so by one commit: a sender killed after its POST leaves both or neither, and neither is a delivery in doubt with
no 2xx logged, sent again once under the same Idempotency-Key (timers/webhooks.py). Written apart they were four
statements and two commits a delivery (issue 39).
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction

from .. import prepared
from ..models import WebhookAttempt
from . import outbox as outbox_sql

# (endpoint id, event id, event type, submission, attempt, at, status, answer, error, duration ms)
Attempt = tuple[str, str, str, str, int, datetime, int | None, str, str, int]

# The log row and the receipt (params: the Attempt's ten values, the receipt as JSON text, the submission). By the
# primary key alone, as outbox RECORD: an index lookup whatever the statistics say; never over a receipt already
# written.
LOGGED_RECEIPT = """
    WITH logged AS (
        INSERT INTO timers_webhookattempt (endpoint_id, event_id, event_type, submission, attempt, at, status,
                                           answer, error, duration_ms)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    )
    UPDATE timers_outbox SET status = 'sent', receipt = %s::jsonb, sent_at = clock_timestamp(), lease_until = NULL,
                             next_try_at = NULL, error = ''
    WHERE id = %s AND status <> 'sent'
"""


def log_attempt(attempt: Attempt) -> None:
    """One try's log row alone (a failed try: the outbox writes its failure after it). Lost with a deleted
    endpoint, as its log is."""
    try:
        with outbox_sql.unflushed(savepoint=True):
            WebhookAttempt.objects.create(**_fields(attempt))
    except IntegrityError:
        pass  # the endpoint was deleted while its POST was out: its log went with it


def logged_receipt(attempt: Attempt, receipt: dict[str, Any], *, relaxed: bool) -> None:
    """The try's log row and its receipt, in one statement (SQLite: one transaction). The endpoint deleted while
    the POST was out (its log went with it): the receipt alone."""
    submission = attempt[3]
    try:
        if connection.vendor == "postgresql":
            # A caller's transaction keeps going if the endpoint is gone: a savepoint there, none in autocommit.
            scope: contextlib.AbstractContextManager[Any] = (
                transaction.atomic() if connection.in_atomic_block
                else outbox_sql.unflushed() if relaxed else contextlib.nullcontext())
            with scope, prepared.cursor() as cur:  # planned once a connection, not once a delivery
                cur.execute(LOGGED_RECEIPT, [*attempt, json.dumps(receipt, default=str), submission])
            return
        with transaction.atomic():
            WebhookAttempt.objects.create(**_fields(attempt))
            outbox_sql.record([(submission, receipt)])
    except IntegrityError:
        outbox_sql.record([(submission, receipt)], relaxed=relaxed)


def _fields(attempt: Attempt) -> dict[str, Any]:
    endpoint, event, event_type, submission, n, at, status, answer, error, duration = attempt
    return {"endpoint_id": endpoint, "event_id": event, "event_type": event_type, "submission": submission,
            "attempt": n, "at": at, "status": status, "answer": answer, "error": error, "duration_ms": duration}
