"""The owner console's History of a customer and of a date: the record (``services.timeline``) in the owner's
words and the brand's zone, drawn by ``portals.history``, above Django's admin log ("Changes in the console")."""

from __future__ import annotations

from django.urls import reverse

from calendars.models import ClockItem, Subject
from services.timeline import item_timeline, subject_timeline
from timers.domains import domain_now

from ..history import History, history
from .scope import as_of

HISTORY_TEMPLATE = "portals/owner/object_history.html"
CONFIRM_RESEND = "owner_resend_confirm"  # a send whose resend asks the owner to confirm first (views.resend_view)


def item_history(request, item: ClockItem) -> History:
    """A date's history, as the console's owner reads it (the brand's zone), as of its clock's now."""
    item = ClockItem.objects.select_related("clock__subject__calendar").get(pk=item.pk)
    return history(item_timeline(item=item, zone=as_of(request).zone), now=domain_now(domain=item.clock.domain))


def subject_history(request, subject: Subject) -> History:
    """A customer's history on their own clock domain (their test clock's, or the brand's live clock)."""
    subject = Subject.objects.select_related("calendar").get(pk=subject.pk)
    return history(subject_timeline(subject=subject, domain=subject.domain, zone=as_of(request).zone),
                   now=domain_now(domain=subject.domain))


def history_context(request, obj, history_of) -> dict:
    """The History page's extra context: the record's history and a title in words (no id)."""
    found = history_of(request, obj)
    return {"history": found, "title": f"History: {found.title}", "subtitle": None,
            "resend_url": reverse("admin:owner-resend"), "resend_confirm": request.session.pop(CONFIRM_RESEND, "")}
