"""What the customer and delivery portals share: private responses, and one act through the gate with its
outcome as a message on the page (a refusal changes nothing)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse

from calendars.words import refusal
from timers.armer import DirectArmer
from timers.errors import KeepingTimeError, Refused


def private(response: HttpResponse, *, referrer: str = "same-origin") -> HttpResponse:
    """Kept out of shared caches and search engines. same-origin, not no-referrer, where the page posts forms:
    with no-referrer a browser posts them with "Origin: null", which CSRF refuses. A page whose URL carries a
    token sends no referrer at all."""
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = referrer
    response["X-Robots-Tag"] = "noindex"
    return response


def act(request: HttpRequest, *, brand_id: str, domain: str, fn: Callable[[DirectArmer], object], done: str) -> None:
    """Run ``fn`` with a DirectArmer on the object's clock domain in one transaction; say ``done``, or the
    refusal as a sentence (nothing it proposed is kept)."""
    try:
        with transaction.atomic():
            fn(DirectArmer(brand=brand_id, domain=domain))
        messages.success(request, done)
    except Refused as exc:  # a sentence for the person; the code and the reason are on the record
        messages.error(request, refusal(exc.code, exc.message))
    except KeepingTimeError as exc:
        messages.error(request, refusal(exc.code, str(exc)))
