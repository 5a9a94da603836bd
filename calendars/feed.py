"""The subject calendar's webcal feed (RFC 5545, built with ``icalendar``), its URL and its ETag.

The body depends only on what is stored: DTSTAMP is each date's last change in domain time, never the
wall clock, so two requests with nothing changed return the same bytes (and the same ETag).

A due date is an all-day event on its date in the subject's calendar (DTSTART;VALUE=DATE, DTEND the next
day), whatever zone the reader is in; its closing instant and zone are in the description. Its notice and
escalate rungs are VALARMs on that event, each at its ring instant. Only steps that act (a run rung, an ack)
are events of their own, at their ring time in the subject's zone, with an end (STEP_LENGTH); so are
dates other apps add at an instant (a schedule's mint, a renewal).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.conf import settings
from icalendar import Alarm, Calendar, Event

from timers.timeutil import trace_z

from .entries import Entry, SubjectCalendar
from .models import Subject

PRODID = "-//Keeping Time//Subject calendar 1.0//EN"
CONTENT_TYPE = "text/calendar; charset=utf-8"
REFRESH = timedelta(hours=1)
STEP_LENGTH = timedelta(minutes=30)  # a step's event (a run, an ack, a mint): its own length, set here
DATE_KINDS = ("hard", "clock")  # a due date: an all-day event with its reminders as VALARMs
ALARM_STEPS = ("notice", "escalate")  # rungs that only remind: VALARMs on their date's event
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


def _local(when, sc: SubjectCalendar, zone) -> str:
    local = when.astimezone(zone)
    return f"{local:%A} {local:%Y-%m-%d %H:%M} {sc.zone} ({trace_z(when)})"


def _description(entry: Entry, sc: SubjectCalendar, zone) -> str:
    is_date = entry.kind in DATE_KINDS
    lines = [
        entry.what,
        f"Kind: {KIND_TEXT.get(entry.kind, entry.kind)}",
        f"Answers for it: {entry.answers_for or 'the brand'}",
        f"Status: {entry.status}",
        (f"Closes: {_local(entry.at, sc, zone)}: on time through its last second" if is_date
         else f"When: {_local(entry.at, sc, zone)}"),
        f"Zone: {sc.zone}",
    ]
    if is_date:
        lines += [f"Reminder: {r.what.split(' · ', 1)[0]}, {_local(r.at, sc, zone)}, {r.status}"
                  for r in _alarms(entry)]
    return "\n".join(lines)


def _alarms(entry: Entry) -> list[Entry]:
    return [r for r in entry.rungs if r.step in ALARM_STEPS and r.current]


def _event(entry: Entry, sc: SubjectCalendar, zone) -> Event:
    ev = Event()
    ev.add("uid", entry.uid)
    ev.add("dtstamp", (entry.stamp or sc.subject.created_at).astimezone(UTC))
    ev.add("sequence", entry.sequence)
    if entry.kind in DATE_KINDS:
        # All day on its civil date in the subject's calendar, in every reader's zone.
        ev.add("dtstart", entry.date)
        ev.add("dtend", entry.date + timedelta(days=1))
    else:
        ev.add("dtstart", entry.at.astimezone(zone))
        ev.add("dtend", entry.at.astimezone(zone) + STEP_LENGTH)
    ev.add("summary", entry.what)
    ev.add("description", _description(entry, sc, zone))
    ev.add("categories", [entry.kind])
    ev.add("status", "CONFIRMED")
    ev.add("transp", "TRANSPARENT")
    if entry.kind in DATE_KINDS:
        for rung in _alarms(entry):
            alarm = Alarm()
            alarm.add("action", "DISPLAY")
            alarm.add("description", rung.what)
            alarm.add("trigger", rung.at.astimezone(UTC), parameters={"VALUE": "DATE-TIME"})
            ev.add_component(alarm)
    return ev


def feed_events(sc: SubjectCalendar) -> list[Entry]:
    """What the feed publishes as events, in order: each date, then each of its steps that act (run, ack)."""
    out = []
    for entry in sc.entries:
        out.append(entry)
        if entry.kind in DATE_KINDS:
            out += [r for r in entry.rungs if r.step not in ALARM_STEPS]
    return out


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
    events = feed_events(sc)
    for entry in events:
        cal.add_component(_event(entry, sc, zone))
    if events:
        # Transitions for the years the dates span (icalendar's default stops in 2038).
        first = min(e.at for e in events).astimezone(zone).year - 1
        last = max(e.at for e in events).astimezone(zone).year + 2
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
