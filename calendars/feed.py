"""The subject calendar's webcal feed (RFC 5545, built with ``icalendar``), its URL and its ETag.

The body depends only on what is stored: DTSTAMP is each date's last change in domain time, never the
wall clock, so two requests with nothing changed return the same bytes (and the same ETag). Reminders
are events of their own: subscribed calendars drop VALARMs.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.conf import settings
from icalendar import Calendar, Event

from timers.timeutil import trace_z

from .entries import Entry, SubjectCalendar
from .models import Subject

PRODID = "-//Keeping Time//Subject calendar 1.0//EN"
CONTENT_TYPE = "text/calendar; charset=utf-8"
REFRESH = timedelta(hours=1)
DEFAULT_HOST = "localhost:8000"

KIND_TEXT = {
    "hard": "hard: a date an extension never moves",
    "clock": "clock: a date the world sets",
    "rung": "rung: a reminder or step before a date",
    "schedule": "schedule: work minted each period",
}


# -- where the feed lives --------------------------------------------------------------------------------
def feed_path(subject: Subject | str) -> str:
    subject_id = subject if isinstance(subject, str) else subject.id
    return f"/subjects/{subject_id}/calendar.ics"


def feed_host() -> str:
    """The host webcal URLs name: KEEPING_TIME["FEED_HOST"] (e.g. time.example.com), else localhost:8000."""
    host = (getattr(settings, "KEEPING_TIME", {}) or {}).get("FEED_HOST") or DEFAULT_HOST
    return host.removeprefix("https://").removeprefix("http://").rstrip("/")


def webcal_url(subject: Subject | str, token: str) -> str:
    return f"webcal://{feed_host()}{feed_path(subject)}?token={quote(token, safe='')}"


# -- the body ----------------------------------------------------------------------------------------------
def calendar_name(sc: SubjectCalendar) -> str:
    s = sc.subject
    name = f"{s.name} · {s.kind} {s.key}"
    return f"{name} · test clock {sc.domain}" if sc.test_clock else name


def _description(entry: Entry, sc: SubjectCalendar, zone) -> str:
    local = entry.at.astimezone(zone)
    return "\n".join([
        entry.what,
        f"Kind: {KIND_TEXT.get(entry.kind, entry.kind)}",
        f"Answers for it: {entry.answers_for or 'the brand'}",
        f"Status: {entry.status}",
        f"When: {local:%A} {local:%Y-%m-%d %H:%M} {sc.zone} ({trace_z(entry.at)})",
        f"Zone: {sc.zone}",
    ])


def _event(entry: Entry, sc: SubjectCalendar, zone) -> Event:
    ev = Event()
    ev.add("uid", entry.uid)
    ev.add("dtstamp", (entry.stamp or sc.subject.created_at).astimezone(UTC))
    ev.add("sequence", entry.sequence)
    ev.add("dtstart", entry.at.astimezone(zone))
    ev.add("summary", entry.what)
    ev.add("description", _description(entry, sc, zone))
    ev.add("categories", [entry.kind])
    ev.add("status", "CONFIRMED")
    ev.add("transp", "TRANSPARENT")
    return ev


def build_ics(sc: SubjectCalendar) -> bytes:
    """The feed's body, CRLF lines folded at 75 octets, with a VTIMEZONE for every TZID it uses."""
    zone = ZoneInfo(sc.zone)
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    name = calendar_name(sc)
    cal.add("name", name)
    cal.add("x-wr-calname", name)
    cal.add("description", f"Every date kept for {sc.subject.name}, in {sc.zone}.")
    cal.add("x-wr-caldesc", f"Every date kept for {sc.subject.name}, in {sc.zone}.")
    cal.add("x-wr-timezone", sc.zone)
    cal.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
    cal["x-published-ttl"] = "PT1H"
    for entry in sc.entries:
        cal.add_component(_event(entry, sc, zone))
    if sc.entries:
        # Transitions for the years the dates span (icalendar's default stops in 2038).
        first = min(e.at for e in sc.entries).astimezone(zone).year - 1
        last = max(e.at for e in sc.entries).astimezone(zone).year + 2
        cal.add_missing_timezones(first_date=date(first, 1, 1), last_date=date(last, 1, 1))
    return cal.to_ical()


def etag(body: bytes) -> str:
    """A strong ETag: the body's sha256, quoted."""
    return f'"{hashlib.sha256(body).hexdigest()}"'


def etag_matches(if_none_match: str | None, tag: str) -> bool:
    """If-None-Match uses the weak comparison: W/"x" matches "x"; * matches anything."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == tag:
            return True
    return False
