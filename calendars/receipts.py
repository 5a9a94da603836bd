"""Whose time decides a submit step: the outside system's receipt (an e-filed return's postmark, in the
filer's zone; else when the system received it) keeps the clock's date, on time or not by that time.

A submit step (``clocks.clock_step``) commits and sends its submission through a transport; the outbox
hears each settled send here (``hear_submissions``, registered for every spec's transports), outside the tick.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import transaction

from timers import outbox
from timers.armer import Armer, DirectArmer
from timers.errors import TestClockDeleted
from timers.models import Outbox

from .civil import BusinessCalendar, local_instant
from .clocks import clock_satisfy
from .closed_days import item_calendar
from .models import ClockItem
from .specs import ClockSpec


def receipt_time(receipt: dict | None, cal: BusinessCalendar) -> tuple[datetime, str] | None:
    """Whose time decides, from an outside system's receipt: an e-filed return's ``postmark``, read in the
    filer's own zone (the subject calendar's) when it carries no offset; else the system's ``received_at``.
    None when the receipt carries neither (then the commit's time decides)."""
    for name in ("postmark", "received_at"):
        raw = (receipt or {}).get(name)
        if not raw:
            continue
        try:
            when = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
        except ValueError:
            continue  # a receipt that cannot be read does not decide
        if when.tzinfo is None:
            when = local_instant(when.date(), when.time(), cal.zone)
        return when.astimezone(UTC), name
    return None


def clock_receipt(*, armer: Armer, item: ClockItem, step: str, receipt: dict | None) -> ClockItem:
    """The outside system answered a submit step: the date is kept, on time or not by the receipt's time
    (the postmark of an e-filed return, in the filer's zone; else when the system received it)."""
    judged = receipt_time(receipt, item_calendar(item))
    if judged is None:
        return clock_satisfy(armer=armer, item=item, by=step)
    return clock_satisfy(armer=armer, item=item, by=step, judged_at=judged[0], judged_by=judged[1])


def submissions_settled(results: list[tuple[str, bool, object]]) -> None:
    """The outbox's hook for a submit transport: each receipt keeps its clock's date (outside the tick)."""
    rows = {r.id: r for r in Outbox.objects.filter(pk__in=[sid for sid, ok, _ in results if ok])}
    for sid, ok, receipt in results:
        row = rows.get(sid)
        if not ok or row is None or "clock" not in (row.payload or {}):
            continue
        item = (ClockItem.objects.select_related("clock__subject__calendar", "calendar")
                .filter(clock_id=row.payload["clock"], item=row.payload.get("item", "")).first())
        if item is None or item.status in (ClockItem.Status.SATISFIED, ClockItem.Status.VOIDED):
            continue
        # One transaction a receipt: the clock's row is read FOR SHARE in it (domain_writable), so the receipt
        # lands whole between an advance's batches, never inside one.
        with transaction.atomic():
            try:
                armer = DirectArmer(brand=row.brand_id, domain=row.domain, runtime=True)
            except TestClockDeleted:
                continue  # its clock was deleted since the send: the receipt changes nothing
            clock_receipt(armer=armer, item=item, step=row.payload.get("step", ""),
                          receipt=receipt if isinstance(receipt, dict) else None)


def hear_submissions(spec: ClockSpec) -> None:
    """Each transport a spec's submit steps send through has its settled receipts heard."""
    for transport in spec.submits.values():
        outbox.on_settled(transport, submissions_settled)
