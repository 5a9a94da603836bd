"""What happened, over HTTP: ``GET /subjects/<id>/timeline``, ``GET /clocks/<id>/items/<item>/timeline`` and
``GET /jobs/<id>/timeline``, each a Stripe list of timeline entries (``limit``, ``starting_after`` an entry's id)
read by the one selector (services/timeline.py): the record's events in record order, each outside call with its
status and attempt, then what is armed ahead. Each entry's ``sentence`` is in people's words, its ``when`` in the
viewer's ``zone`` (default: the customer's calendar's), the zone named; ``at`` is UTC with Z."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from calendars.selectors import calendar_domain, get_subject
from timers.api.inputs import ListQuerySerializer, ZoneField, query_field
from timers.api.openapi import ERRORS, NOT_FOUND, Choice, const, list_serializer
from timers.api.views import BrandAPIView
from timers.selectors import get_owned
from timers.timeutil import zone_named

from .models import Job
from .selectors import get_clock, get_item
from .timeline import KINDS, SEND_STATUSES, Timeline, item_timeline, job_timeline, subject_timeline


class TimelineQuerySerializer(ListQuerySerializer):
    zone = ZoneField(required=False, help_text="The viewer's IANA zone each entry's `when` is said in; default: "
                                                "the customer's calendar's")


class SubjectTimelineQuerySerializer(TimelineQuerySerializer):
    test_clock = query_field("tc_…: the customer's timeline on this test clock; its own clock's when absent")


class TimelineEntrySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The event's, the send's or the armed timer's id: a page starts after it")
    object = const("timeline_entry", "TimelineEntryObject")
    kind = Choice(choices=list(KINDS), component="TimelineEntryKind",
                  help_text="fired, moved (a roll, an extension, a postponement, a repin), reminded, acted (by whom: "
                            "the sentence says), sent (an outside call, with its status and attempt), armed (ahead)")
    type = serializers.CharField(help_text="The event's type, the send's transport, or the armed timer's kind")
    at = serializers.CharField(allow_null=True, help_text="UTC, with Z")
    when = serializers.CharField(help_text="The same instant in the viewer's zone: 'Wed 19 Jan 2028, 09:00 EST'")
    zone = serializers.CharField(help_text="The viewer's zone `when` is said in, e.g. America/New_York")
    sentence = serializers.CharField(help_text="What happened, in people's words: no id, no word of the runtime's")
    status = Choice(choices=list(SEND_STATUSES), component="TimelineSendStatus", allow_null=True,
                    help_text="A send's: waiting, sending, sent, answered, in_doubt, failed, dead_lettered, voided")
    attempt = serializers.IntegerField(allow_null=True, help_text="A send's attempt (1, then each resend)")


TIMELINE_LIST = list_serializer("TimelineEntryList", TimelineEntrySerializer)
DESCRIPTION = ("What happened, read from the record, in order: each event (fired, moved with why, reminded with whom "
               "and how, acted on with who), each outside call it made (email, notice, e-file, webhook, HTTP) with "
               "its status and attempt, then what is still armed ahead in the order it will happen. `sentence` is "
               "in people's words; `when` is in `zone` (the viewer's, default the customer's calendar's), named. "
               "A fixed number of queries whatever the history's length.")


def _zone(params: dict[str, Any]) -> Any:
    return zone_named(params["zone"]) if params.get("zone") else None


def timeline_page(timeline: Timeline, params: dict[str, Any], *, url: str) -> dict[str, Any]:
    """One page of a timeline in Stripe's list shape (the view's, the CLI's and the MCP tool's)."""
    rows, more = timeline.page(limit=params["limit"], starting_after=params.get("starting_after"))
    return {"object": "list", "data": [e.json() for e in rows], "has_more": more, "url": url}


class SubjectTimelineView(BrandAPIView):
    @extend_schema(operation_id="subjects_timeline", tags=["subjects"], parameters=[SubjectTimelineQuerySerializer],
                   summary="A customer's timeline", description=DESCRIPTION + " Every job, plan and date of theirs.",
                   responses={200: TIMELINE_LIST, **ERRORS, **NOT_FOUND})
    def get(self, request, subject_id: str):
        params = self.query(SubjectTimelineQuerySerializer)
        subject = get_subject(self.brand, subject_id)
        zone = _zone(params)
        domain = calendar_domain(self.brand, subject, params.get("test_clock"))
        return Response(timeline_page(subject_timeline(subject=subject, domain=domain, zone=zone), params,
                                      url=f"/subjects/{subject.id}/timeline"))


class ClockItemTimelineView(BrandAPIView):
    @extend_schema(operation_id="clocks_item_timeline", tags=["clocks"], parameters=[TimelineQuerySerializer],
                   summary="A date's timeline",
                   description=DESCRIPTION + " One date: its own events and its clock's (who answers for it). "
                                             "`item` is the item's name, or `-` for a clock's single date.",
                   responses={200: TIMELINE_LIST, **ERRORS, **NOT_FOUND})
    def get(self, request, clock_id: str, item: str):
        params = self.query(TimelineQuerySerializer)
        clock = get_clock(self.brand, clock_id)
        found = get_item(clock, item)
        return Response(timeline_page(item_timeline(item=found, zone=_zone(params)), params,
                                      url=f"/clocks/{clock.id}/items/{item}/timeline"))


class JobTimelineView(BrandAPIView):
    @extend_schema(operation_id="jobs_timeline", tags=["jobs"], parameters=[TimelineQuerySerializer],
                   summary="A job's timeline",
                   description=DESCRIPTION + " One job: its steps, Tasks, asks, grants and deadline, and its dates.",
                   responses={200: TIMELINE_LIST, **ERRORS, **NOT_FOUND})
    def get(self, request, job_id: str):
        params = self.query(TimelineQuerySerializer)
        job = get_owned(self.brand, Job.objects.select_related("subject__calendar"), job_id, "job")
        return Response(timeline_page(job_timeline(job=job, zone=_zone(params)), params,
                                      url=f"/jobs/{job.id}/timeline"))
