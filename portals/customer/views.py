"""The customer portal's pages, server-rendered. A subject's calendar opens with its feed token (the same
token as the webcal feed): no account, no API key. A token that does not open it gets the same 404 page
as a subject that does not exist."""

from __future__ import annotations

from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.shortcuts import render

from calendars import feed
from calendars.entries import Entry, subject_calendar
from calendars.services import subject_by_feed_token
from timers.api.errors import read_only

from ..acting import private


def _rows(entries, zone: ZoneInfo) -> list[dict]:
    rows = []
    for e in entries:
        local = e.at.astimezone(zone)
        rows.append({"date": e.date, "weekday": f"{local:%a}", "time": f"{local:%H:%M}", "what": e.what,
                     "kind": e.kind, "answers_for": e.answers_for, "status": e.status})
    return rows


@read_only  # a POST is a JSON 405, not Django's HTML CSRF 403
def subject_calendar_page(request, subject_id: str):
    token = request.GET.get("token", "")
    subject = subject_by_feed_token(subject_id=subject_id, token=token)
    if subject is None:
        return private(render(request, "portals/customer/not_found.html", status=404), referrer="no-referrer")
    sc = subject_calendar(subject, everything=True)
    zone = ZoneInfo(sc.zone)
    # The page is a timeline: each date, and each of its reminders and steps on its own day.
    timeline = sorted([x for e in sc.entries for x in (e, *e.rungs)], key=Entry.sort_key)
    ahead = [e for e in timeline if e.date >= sc.today]
    earlier = [e for e in timeline if e.date < sc.today]
    context = {
        "subject": subject,
        "zone": sc.zone,
        "today": sc.today,
        "now_local": f"{sc.now.astimezone(zone):%Y-%m-%d %H:%M}",
        "test_clock": sc.test_clock,
        "ahead": _rows(ahead, zone),
        "earlier": _rows(reversed(earlier), zone),
        "webcal": feed.webcal_url(subject, token),
        "download": f"{feed.feed_path(subject)}?token={quote(token, safe='')}",
    }
    # The token is in the URL: no referrer at all.
    return private(render(request, "portals/customer/subject_calendar.html", context), referrer="no-referrer")
