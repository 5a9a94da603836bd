"""Resend a send from the timeline: one more try at an email, a notice (an e-file submission) or a webhook
delivery that failed, was given up, or is in doubt, through the outbox's own rules (timers/outbox.py).

- A webhook delivery: the endpoint's own Resend (``timers.webhooks.delivery_resend``), the same Idempotency-Key.
- Still owed and in doubt (a try raised; it may have arrived): tried again now, in its turn, and the outbox asks
  the far end first, so it is sent only if it never arrived. Never a second row: the outbox's own try.
- Failed or given up: the far end is asked about the failed submission first. It had it: a new attempt is
  recorded as sent with the far end's answer, nothing sent again. It did not: a new attempt (a new submission
  id, its own row) is owed, sent once. The far end cannot be asked: the owner is asked to confirm
  (``confirmed``) before it is sent again. The old row is never edited: each resend is its own line.
- Sent, or superseded by a later attempt: nothing to resend (409).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from calendars.words import plain
from timers.clock import wall_now
from timers.errors import KeepingTimeError, NotFound
from timers.ids import new_id
from timers.models import Outbox, WebhookEndpoint
from timers.rows import insert_rows
from timers.transports import transport
from timers.webhooks import delivery_resend


@dataclass(frozen=True)
class Resent:
    """What a resend did, in words for the owner's message, and the new attempt's submission id (None: none)."""

    said: str
    submission: str | None = None


class NotResendable(KeepingTimeError):
    code = "not_resendable"
    status = 409


class ConfirmResend(KeepingTimeError):
    """The far end cannot say whether the failed send arrived: the owner confirms before it is sent again."""

    code = "confirm_resend"
    status = 409


def send_what(row: Any) -> str:
    """A send, named in words: "the email to ada@example.com", "the notice for Ada Lovelace"."""
    payload = row.payload if isinstance(row.payload, dict) else {}
    if row.transport == "email":
        to = sorted({a for m in payload.get("messages", []) for a in m.get("to", [])})
        return f"the email to {', '.join(to) or 'nobody'}"
    if row.transport == "notices":
        return f"the notice for {plain(str(payload.get('to') or 'the agency'))}"
    if row.transport == "webhook":
        kind = str(payload.get("type") or "").replace(".", " ").replace("_", " ")
        return f"the webhook delivery of the {plain(kind)} event"
    if row.transport == "http":
        return "the call to the schedule's address"
    return f"the send to {plain(row.transport.replace('_', ' '))}"


@transaction.atomic
def resend_send(*, send_id: str, brands: frozenset[str] | None, confirmed: bool = False) -> Resent:
    """Resend the send ``send_id`` of one of ``brands`` (None: any, a superuser). See the module's rules."""
    rows = Outbox.objects.select_for_update()
    row = rows.filter(pk=send_id, **({"brand_id__in": brands} if brands is not None else {})).first()
    if row is None:
        raise NotFound("there is no such send")
    what = send_what(row)
    if row.transport == "webhook":
        endpoint = WebhookEndpoint.objects.filter(pk=row.domain).first()
        if endpoint is None:
            raise NotFound("its webhook endpoint is gone")
        said = delivery_resend(endpoint=endpoint, event_id=str(row.payload.get("event")))
        return Resent(f"Resent {what}: {said}")
    later = (rows.filter(domain=row.domain, key=row.key, seq=row.seq, attempt__gt=row.attempt)
             .aggregate(n=Max("attempt"))["n"])
    if later is not None:
        raise NotResendable(f"{what} was already tried again: resend its latest try")
    if row.status in (Outbox.Status.SENT, Outbox.Status.VOIDED):
        raise NotResendable(f"{what} was sent: there is nothing to resend" if row.status == Outbox.Status.SENT
                            else f"{what} was never sent: its test run was deleted")
    if row.status in (Outbox.Status.PENDING, Outbox.Status.SENDING):
        if row.lease_until is not None and row.lease_until > wall_now():
            return Resent(f"{what.capitalize()} is being sent right now.")
        rows.filter(pk=row.pk).update(next_try_at=None)
        if row.status == Outbox.Status.SENDING:
            return Resent(f"{what.capitalize()} is tried again now; it was in doubt, so the far end is asked first "
                          "and it is sent only if it never arrived.")
        return Resent(f"{what.capitalize()} leaves now.")
    # Failed or given up: ask the far end about it before anything leaves again.
    t = transport(row.transport)
    try:
        arrived = t.lookup(row.id) if t is not None else None
        asked = t is not None
    except Exception:
        arrived, asked = None, False
    if not asked and not confirmed:
        raise ConfirmResend(f"{what} may have arrived and the far end cannot be asked: confirm to send it again")
    attempt = row.attempt + 1
    now = wall_now()
    new = Outbox(id=new_id("sub", seed=f"{row.domain}|{row.key}|{row.seq}|{attempt}|resend", length=24),
                 domain=row.domain, brand_id=row.brand_id, key=row.key, attempt=attempt, seq=row.seq,
                 transport=row.transport, payload=row.payload, status=Outbox.Status.PENDING, receipt=None,
                 error="", claimed_by="", tries=0, created_at=now)
    if arrived is not None:
        new.status, new.receipt, new.sent_at = Outbox.Status.SENT, {**arrived, "found": row.id}, now
        insert_rows([new])
        return Resent(f"{what.capitalize()} had arrived after all: the far end has it, so nothing was sent again.",
                      new.id)
    insert_rows([new])
    return Resent(f"Resent {what}: it is sent again, once.", new.id)
