"""A subject's calendar as JSON: what ``GET /subjects/<id>/calendar`` and the MCP tool answer (every date the
subject keeps, each with its rungs under it; instants in UTC with Z and in the calendar's zone), and the
serializers that describe it in the schema.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from rest_framework import serializers

from timers.api.openapi import Choice
from timers.timeutil import iso_z

from . import feed
from .entries import Entry, SubjectCalendar


def entry_json(e: Entry, zone) -> dict:
    """A date, with its rungs (reminders and steps) listed under it."""
    return {**_entry_fields(e, zone), "rungs": [{**_entry_fields(r, zone), "step": r.step, "current": r.current}
                                                for r in e.rungs]}


def _entry_fields(e: Entry, zone) -> dict:
    return {
        "date": e.date.isoformat(),
        "what": e.what,
        "kind": e.kind,
        "answers_for": e.answers_for,
        "status": e.status,
        "at": iso_z(e.at),
        "local": e.at.astimezone(zone).isoformat(timespec="seconds"),
        "uid": e.uid,
        "sequence": e.sequence,
        "on": e.on or None,
    }


def calendar_json(sc: SubjectCalendar) -> dict:
    s, zone = sc.subject, ZoneInfo(sc.zone)
    return {
        "object": "subject_calendar",
        "subject": s.id,
        "kind": s.kind,
        "key_name": s.key_name,
        "key": s.key,
        "name": s.name,
        "zone": sc.zone,
        "today": sc.today.isoformat(),
        "from": sc.from_date.isoformat() if sc.from_date else None,
        "count": len(sc.entries),
        "webcal": feed.feed_path(s),
        "feed": "active" if s.feed_digest else "none",
        "test_clock": sc.test_clock,
        "data": [entry_json(e, zone) for e in sc.entries],
    }


# -- the schema -----------------------------------------------------------------------------------------------
class _CalendarEntryFields(serializers.Serializer):
    date = serializers.DateField(help_text="The local date, in the calendar's zone.")
    what = serializers.CharField()
    kind = serializers.CharField(help_text="hard, clock, rung, schedule, cycle, link (a party's link expires), grant "
                                           "(a grant ends), task (a Task is due), hold (a taken Task's hold ends), "
                                           "deadline (the job is late after it), at_risk (the job turns at risk)")
    answers_for = serializers.CharField()
    status = serializers.CharField(help_text="ahead, due today, open, came unsatisfied, passed, kept …, armed, sent …, "
                                             "expired, ended")
    at = serializers.CharField(help_text="The instant, UTC with Z.")
    local = serializers.CharField(help_text="The instant in the calendar's zone, with its offset.")
    uid = serializers.CharField(help_text="Stable: what the date is, never when. The feed's UID.")
    sequence = serializers.IntegerField(help_text="How many times the date moved.")
    on = serializers.CharField(allow_null=True, help_text="Its owner: clk_…#US, job_…")


class CalendarRungSerializer(_CalendarEntryFields):
    step = serializers.CharField(help_text="notice, escalate, ack or run")
    current = serializers.BooleanField(help_text="false: it rang before its date moved, kept as history")


class CalendarEntrySerializer(_CalendarEntryFields):
    rungs = CalendarRungSerializer(many=True, help_text="The date's reminders and steps, in ring order.")


class SubjectCalendarSerializer(serializers.Serializer):
    object = serializers.CharField()
    subject = serializers.CharField()
    kind = serializers.CharField()
    key_name = serializers.CharField()
    key = serializers.CharField()
    name = serializers.CharField()
    zone = serializers.CharField(help_text="The calendar's IANA zone: every local date and time is in it.")
    today = serializers.DateField()
    date_from = serializers.DateField(allow_null=True)
    count = serializers.IntegerField()
    webcal = serializers.CharField(help_text="The feed's path; its URL with the token comes from `subjects feed`.")
    feed = Choice(component="SubjectFeedStatus", choices=["active", "none"],
                  help_text="active: a feed token opens the .ics; none: no token does (never issued, or revoked)")
    test_clock = serializers.CharField(allow_null=True)
    data = CalendarEntrySerializer(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("date_from")
        return fields
