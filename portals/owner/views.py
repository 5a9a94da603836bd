"""The console's own views beside the ModelAdmins: the header's "as of" selector and the dashboard's settle
buttons. Each parses, calls the service function (portals.owner.actions) and redirects with a message."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from services.resend import ConfirmResend, resend_send
from timers.errors import KeepingTimeError
from timers.models import LIVE

from .actions import settle
from .history import CONFIRM_RESEND
from .scope import AS_OF, request_brands, test_clocks

UNDO = "owner_undo"  # the date the owner last marked done: the console offers it back


def _back(request) -> HttpResponseRedirect:
    nxt = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        nxt = reverse("admin:index")
    return HttpResponseRedirect(nxt)


def as_of_view(request):
    """Choose the clock domain the console shows: the live clock or one of the brand's test clocks."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    chosen = request.POST.get("as_of", "")
    if chosen == LIVE or test_clocks(request_brands(request)).filter(pk=chosen).exists():
        request.session[AS_OF] = chosen
    else:
        messages.error(request, "No such clock.")
    return _back(request)


def settle_view(request):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    p = request.POST
    outcome = settle(request=request, brands=request_brands(request), kind=p.get("kind", ""), id=p.get("id", ""),
                     act=p.get("act", ""), option=p.get("option", ""), member=p.get("member", ""),
                     step=p.get("step", ""))
    (messages.success if outcome.ok else messages.error)(request, outcome.message)
    if p.get("kind") == "item" and outcome.ok and p.get("act") == "satisfy":
        request.session[UNDO] = p.get("id", "")  # offered back on the next page until its date passes
    elif p.get("kind") == "item" and p.get("act") == "reopen":
        request.session.pop(UNDO, None)
    return _back(request)


def resend_view(request):
    """A History page's Resend (services.resend): POST only, with its CSRF token; back to the page with a message
    naming what was resent. A send that may have arrived and whose far end cannot be asked comes back with a
    "Send it again anyway" button beside it (``confirm``)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    sid = request.POST.get("send", "")
    try:
        done = resend_send(send_id=sid, brands=request_brands(request), confirmed=request.POST.get("confirm") == "1")
    except ConfirmResend as exc:
        request.session[CONFIRM_RESEND] = sid
        messages.warning(request, f"Not resent yet: {exc.message}.")
    except KeepingTimeError as exc:
        messages.error(request, f"Not resent: {exc.message}.")
    else:
        request.session.pop(CONFIRM_RESEND, None)
        messages.success(request, done.said)
    return _back(request)
