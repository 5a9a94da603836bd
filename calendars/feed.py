"""The subject calendar's webcal feed (RFC 5545, built with ``icalendar``), its URL and its ETag.

The body depends only on what is stored: DTSTAMP is each date's last change in domain time, never the
wall clock, so two requests with nothing changed return the same bytes (and the same ETag).

A due date is an all-day event on its date in the subject's calendar (DTSTART;VALUE=DATE, DTEND the next
day), whatever zone the reader is in; its closing time and zone are in the description. Its notice and
escalate rungs are VALARMs on that event with triggers relative to its start (``TRIGGER:-P89DT15H``), which
every client rings (khal ignores absolute ones). Of a date's other steps only what acts for the customer is
an event: a run at its time, with an end (STEP_LENGTH), and an ack chain as one all-day event spanning its
days. Dates other apps add at an instant (work starting, a renewal, a link's expiry, a deadline) are events at
their time. Every word a reader sees is plain (calendars.words): no id, none of the runtime's words.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.conf import settings
from icalendar import Alarm, Calendar, Event

from timers.models import Brand, TestClock

from . import words
from .entries import Entry, SubjectCalendar, uid_for
from .models import Subject

PRODID = "-//Keeping Time//Subject calendar 1.0//EN"
CONTENT_TYPE = "text/calendar; charset=utf-8"
REFRESH = timedelta(hours=1)
STEP_LENGTH = timedelta(minutes=30)  # an event at an instant (a run, a renewal, a link's expiry): its length
DATE_KINDS = ("hard", "clock")  # a due date: an all-day event with its reminders as VALARMs
ALARM_STEPS = ("notice", "escalate")  # rungs that only remind: VALARMs on their date's event
DEFAULT_HOST = "localhost:8000"


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
# The feed is read by customers in their calendar app: every word they see is said plainly (keeping_time.
# words), with no id and none of the runtime's words. The API and the CLI keep the runtime's words.
STEP_KIND = {"ack": "a daily check-in before the date", "run": "a step taken for you if the date is still open"}
EXTRA_KIND = {"hold": "hold ends", "at_risk": "at risk of running late"}
SPAN_UNITS = {"d": "day", "w": "week", "mo": "month", "y": "year", "h": "hour", "m": "minute"}


@dataclass(frozen=True)
class Reader:
    """What the words need besides an entry: the calendar's zone and the brand's name."""

    zone: ZoneInfo
    zone_name: str
    brand: str


def feed_names(sc: SubjectCalendar) -> tuple[str, str]:
    """The brand's name and the test clock's (empty on the live clock): entries.clock_inputs digests both."""
    brand = Brand.objects.filter(pk=sc.subject.brand_id).values_list("name", flat=True).first() or ""
    clock = ""
    if sc.test_clock:
        clock = TestClock.objects.filter(pk=sc.domain).values_list("name", flat=True).first() or ""
    return brand, clock


def calendar_name(sc: SubjectCalendar, brand: str = "", clock: str = "") -> str:
    """Named for the subject, and whose dates they are: "Acme Robotics · apis.tax dates"; on a test clock
    "(test clock)", with the clock's own name when it has one worth saying, never its id."""
    name = f"{sc.subject.name} · {brand} dates" if brand else sc.subject.name
    if not sc.test_clock:
        return name
    clock = clock.strip()
    if clock and clock != sc.subject.name and not words.runtime_words(clock):
        return f"{name} (test clock: {clock})"
    return f"{name} (test clock)"


def _local(when, r: Reader) -> str:
    local = when.astimezone(r.zone)
    return f"{local:%A} {local:%Y-%m-%d} at {local:%H:%M} ({r.zone_name})"


def _day(d: date) -> str:
    return f"{d:%A} {d.isoformat()}"


def _span(text: str) -> str:
    """90d → 90 days; 1mo → 1 month."""
    m = re.fullmatch(r"(\d+)([a-z]+)", text)
    if not m or m[2] not in SPAN_UNITS:
        return text
    n, unit = int(m[1]), SPAN_UNITS[m[2]]
    return f"{n} {unit}" + ("" if n == 1 else "s")


def summary(entry: Entry) -> str:
    return words.plain(entry.plain or entry.what)


def _who(entry: Entry, r: Reader) -> str:
    answers = "" if entry.answers_for == "the brand" else entry.answers_for
    return words.who(answers, you={"the customer"}, brand=r.brand)


def _kind(entry: Entry) -> str:
    return EXTRA_KIND.get(entry.kind) or words.kind(entry.kind)


def _status(entry: Entry) -> str:
    """A date's status as its customer reads it; a step's outcome said as what it did."""
    if entry.plain_status:
        return entry.plain_status
    s = entry.status
    if s.startswith("ran "):
        outcome = s.rsplit("→", 1)[-1].strip()
        return {"moved": "done: the date moved", "committed": "done"}.get(outcome, f"done: {outcome}")
    if s.startswith("refused"):
        code = s.removeprefix("refused").strip()
        return f"not done: {words.refusal(code)}" if code else "not done"
    return words.plain(words.status(s))


def _reminder(rung: Entry) -> str:
    """notice 90d → "reminder, 90 days before"; escalate 7d → "urgent reminder, 7 days before"."""
    kind = "urgent reminder" if rung.step == "escalate" else "reminder"
    parts = rung.rung.split()
    return f"{kind}, {_span(parts[-1])} before" if len(parts) > 1 else kind


def _lines(entry: Entry, r: Reader, *, what: str, kind: str, status: str, when: str) -> str:
    return "\n".join([what, f"What it is: {kind}", f"Who answers for it: {_who(entry, r)}", f"Status: {status}",
                      when, f"Times are in {r.zone_name}."])


def done(entry: Entry) -> bool:
    """A date kept (marked done, or kept with a sibling's move): its title says so and it rings no more."""
    return entry.kind in DATE_KINDS and entry.status.startswith("kept")


def _date_description(entry: Entry, r: Reader) -> str:
    text = _lines(entry, r, what=summary(entry), kind=_kind(entry), status=_status(entry),
                  when=f"Due by: {_local(entry.at, r)}, on time through that minute")
    if entry.moved_why:
        text += f"\nWhy it moved: it {entry.moved_why}."
    reminders = [f"- {_reminder(a)}: {_local(a.at, r)} ({_status(a)})" for a in _alarms(entry)]
    return text + ("\nReminders:\n" + "\n".join(reminders) if reminders else "")


def _alarms(entry: Entry) -> list[Entry]:
    return [r for r in entry.rungs if r.step in ALARM_STEPS and r.current]


def _relative(rung: Entry, entry: Entry, r: Reader) -> timedelta:
    """The alarm's trigger, relative to the event's start (midnight of its date): negative, before it. Taken
    between wall clocks in the calendar's zone, as RFC 5545 reads a duration (its days nominal, so a DST
    change between them moves nothing): 09:00 New York on 2028-01-19 before 2028-04-18 is -P89DT15H, which
    rings at 09:00 there, not 10:00. A client in another zone rings it as long before its own midnight."""
    ring = rung.at.astimezone(r.zone).replace(tzinfo=None)
    return ring - datetime.combine(entry.date, time(0))


def _base(ev: Event, uid: str, stamp, sequence: int) -> None:
    ev.add("uid", uid)
    ev.add("dtstamp", stamp.astimezone(UTC))
    ev.add("sequence", sequence)


def _finish(ev: Event, *, text: str, description: str, category: str) -> Event:
    ev.add("summary", text)
    ev.add("description", description)
    ev.add("categories", [category])
    ev.add("status", "CONFIRMED")
    ev.add("transp", "TRANSPARENT")
    return ev


def _date_event(entry: Entry, sc: SubjectCalendar, r: Reader) -> Event:
    """A due date: all day on its civil date in the subject's calendar, in every reader's zone, its
    reminders VALARMs with triggers relative to its start."""
    ev = Event()
    _base(ev, entry.uid, entry.stamp or sc.subject.created_at, entry.sequence)
    ev.add("dtstart", entry.date)
    ev.add("dtend", entry.date + timedelta(days=1))
    _finish(ev, text=f"Done · {summary(entry)}" if done(entry) else summary(entry),
            description=_date_description(entry, r), category=_category(entry.kind))
    for rung in [] if done(entry) else _alarms(entry):  # a date done rings no more
        alarm = Alarm()
        alarm.add("action", "DISPLAY")
        lead = "Urgent: " if rung.step == "escalate" else "Reminder: "
        parts = rung.rung.split()
        within = f" (in {_span(parts[-1])})" if len(parts) > 1 else ""
        alarm.add("description", f"{lead}{summary(entry)} is due {_day(entry.date)}{within}")
        alarm.add("trigger", _relative(rung, entry, r))
        ev.add_component(alarm)
    return ev


def _timed_event(entry: Entry, sc: SubjectCalendar, r: Reader) -> Event:
    """A date other apps add at an instant (a renewal, a link's expiry, a deadline): at its time in the
    subject's zone, with an end (STEP_LENGTH)."""
    ev = Event()
    _base(ev, entry.uid, entry.stamp or sc.subject.created_at, entry.sequence)
    ev.add("dtstart", entry.at.astimezone(r.zone))
    ev.add("dtend", entry.at.astimezone(r.zone) + STEP_LENGTH)
    text = summary(entry)
    description = _lines(entry, r, what=text, kind=_kind(entry), status=_status(entry),
                         when=f"When: {_local(entry.at, r)}")
    return _finish(ev, text=text, description=description, category=_category(entry.kind))


def _run_event(run: Entry, entry: Entry, sc: SubjectCalendar, r: Reader) -> Event:
    """A step that acts for the customer (run tentative 3d): at its time, with an end."""
    ev = Event()
    _base(ev, run.uid, run.stamp or sc.subject.created_at, run.sequence)
    ev.add("dtstart", run.at.astimezone(r.zone))
    ev.add("dtend", run.at.astimezone(r.zone) + STEP_LENGTH)
    parts = run.rung.split()
    step = parts[1] if len(parts) == 3 else "its next"
    who = r.brand or "the brand"
    text = f"{who} steps in if it's still open · {summary(entry)}"
    description = _lines(run, r, what=f"If {summary(entry)} is still open then, {who} takes its {step} step for "
                         f"you.", kind=STEP_KIND["run"], status=_status(run), when=f"When: {_local(run.at, r)}")
    return _finish(ev, text=text, description=description, category="step taken for you")


def _ack_event(days: list[Entry], entry: Entry, uid: str, sc: SubjectCalendar, r: Reader) -> Event:
    """An ack chain (ack daily 7d): one all-day event spanning its days, not one a day. While a day is still
    ahead it spans the whole chain; once none is, the days it asked."""
    first = min(d.date - timedelta(days=max(d.day, 1) - 1) for d in days)
    length = max((d.days for d in days), default=0) or 1
    asked = [d for d in days if d.status != "armed"]
    if any(d.status == "armed" for d in days):
        end = first + timedelta(days=length)
    else:
        end = max(d.date for d in days) + timedelta(days=1)
    ev = Event()
    stamp = max((d.stamp for d in days if d.stamp is not None), default=None) or sc.subject.created_at
    _base(ev, uid, stamp, max(d.sequence for d in days))
    ev.add("dtstart", first)
    ev.add("dtend", end)
    who = _who(entry, r)
    status = f"asked on {len(asked)} of {length} days" if asked else "coming up"
    description = _lines(entry, r, what=f"{who} is asked each day from {_day(first)} to "
                         f"{_day(end - timedelta(days=1))} to confirm {summary(entry)} is in hand; confirming "
                         "once stops the asking.", kind=STEP_KIND["ack"], status=status,
                         when=f"Due by: {_local(entry.at, r)}")
    return _finish(ev, text=f"Daily check-in · {summary(entry)}", description=description, category="check-in")


def _category(kind: str) -> str:
    return (EXTRA_KIND.get(kind) or words.kind(kind)).split(":", 1)[0]


def feed_events(sc: SubjectCalendar, r: Reader | None = None) -> list[Event]:
    """What the feed publishes, in order: each date (its reminders as its alarms), then what acts for the
    customer: each run step at its time, and each ack chain as one event spanning its days. Nothing else a
    date's steps do inside the runtime is an event."""
    r = r or Reader(ZoneInfo(sc.zone), sc.zone, "")
    out: list[Event] = []
    for entry in sc.entries:
        if entry.kind not in DATE_KINDS:
            out.append(_timed_event(entry, sc, r))
            continue
        out.append(_date_event(entry, sc, r))
        chains: dict[tuple, list[Entry]] = {}
        for rung in entry.rungs:
            if rung.step == "run":
                out.append(_run_event(rung, entry, sc, r))
            elif rung.step == "ack":
                # The current chain under one uid, whatever its moves; a chain that asked before a move is
                # kept as history under its own.
                chains.setdefault((rung.rung, rung.current, 0 if rung.current else rung.sequence), []).append(rung)
        for (text, current, seq), days in chains.items():
            uid = uid_for(f"{entry.on}:check-in:{text}" + ("" if current else f"@{seq}"))
            out.append(_ack_event(days, entry, uid, sc, r))
    return out


def build_ics(sc: SubjectCalendar) -> bytes:
    """The feed's body, CRLF lines folded at 75 octets, with a VTIMEZONE for every TZID it uses."""
    zone = ZoneInfo(sc.zone)
    brand, clock = feed_names(sc)
    reader = Reader(zone, sc.zone, brand)
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    name = calendar_name(sc, brand, clock)
    cal.add("name", name)
    cal.add("x-wr-calname", name)
    about = f"Every date kept for {sc.subject.name}" + (f" by {brand}" if brand else "") + f", in {sc.zone}."
    cal.add("description", about)
    cal.add("x-wr-caldesc", about)
    cal.add("x-wr-timezone", sc.zone)
    cal.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
    cal["x-published-ttl"] = "PT1H"
    events = feed_events(sc, reader)
    for ev in events:
        cal.add_component(ev)
    if sc.entries:
        # Transitions for the years the dates span (icalendar's default stops in 2038).
        instants = [e.at for e in sc.entries] + [x.at for e in sc.entries for x in e.rungs]
        first = min(instants).astimezone(zone).year - 1
        last = max(instants).astimezone(zone).year + 2
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
