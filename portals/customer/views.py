"""The customer portal's pages, server-rendered. A subject's calendar opens with its feed token (the same
token as the webcal feed): no account, no API key. A token that does not open it gets the same 404 page
as a subject that does not exist."""

from __future__ import annotations

from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.shortcuts import render

from calendars import feed, words
from calendars.entries import Entry, subject_calendar
from calendars.feed_tokens import subject_by_feed_token
from timers.api.errors import read_only

from ..acting import private

HIDDEN_KINDS = ("rung", "at_risk")  # reminders (in the feed, as alarms) and the brand's own early warnings


def _rows(entries, zone: ZoneInfo, brand: str) -> list[dict]:
    rows = []
    for e in entries:
        if e.kind in HIDDEN_KINDS:
            continue
        local = e.at.astimezone(zone)
        rows.append({"day": words.day(e.date), "time": f"{local:%H:%M} {local.tzname()}",
                     "what": words.plain(e.what), "kind": words.kind(e.kind), "hard": e.kind == "hard",
                     "who": "you" if e.answers_for == "the customer" else words.who(e.answers_for, brand=brand),
                     "status": words.status(e.status)})
    return rows


@read_only  # a POST is a JSON 405, not Django's HTML CSRF 403
def subject_calendar_page(request, subject_id: str):
    token = request.GET.get("token", "")
    subject = subject_by_feed_token(subject_id=subject_id, token=token)
    if subject is None:
        return private(render(request, "portals/customer/not_found.html", status=404), referrer="no-referrer")
    sc = subject_calendar(subject, everything=True)
    zone = ZoneInfo(sc.zone)
    timeline = sorted(sc.entries, key=Entry.sort_key)
    ahead = [e for e in timeline if e.date >= sc.today]
    earlier = [e for e in timeline if e.date < sc.today]
    brand = subject.brand.name
    context = {
        "subject": subject,
        "zone": sc.zone,
        "zone_name": sc.now.astimezone(zone).tzname(),
        "today": words.day(sc.today),
        "now_local": words.local(sc.now, zone),
        "test_clock": sc.test_clock,
        "ahead": _rows(ahead, zone, brand),
        "earlier": _rows(reversed(earlier), zone, brand),
        "webcal": feed.webcal_url(subject, token),
        "download": f"{feed.feed_path(subject)}?token={quote(token, safe='')}",
    }
    # The token is in the URL: no referrer at all.
    return private(render(request, "portals/customer/subject_calendar.html", context), referrer="no-referrer")
