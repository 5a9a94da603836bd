"""The subject's calendar over HTTP: the JSON list (a brand's key) and the webcal feed (the feed token).

``GET /subjects/<id>/calendar?from=&test_clock=`` answers like the rest of the API: a brand's key, JSON,
instants in UTC with Z, errors as {"error": {...}}. ``GET /subjects/<id>/calendar.ics?token=`` takes no
key, only the subject's feed token; any token that does not open the feed (wrong, missing, revoked) gets
the same 404 as a subject that does not exist.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.http import HttpResponse, JsonResponse
from django.utils.cache import get_conditional_response
from django.utils.decorators import method_decorator
from django.utils.http import http_date
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from timers.api.errors import error_body, method_not_allowed
from timers.api.inputs import parse_from
from timers.api.openapi import ERRORS, NOT_FOUND
from timers.api.views import BrandAPIView
from timers.clock import wall_now
from timers.sql import sessions

from . import feed, feed_stamp
from .entries import subject_calendar
from .feed_tokens import feed_token_digest, subject_by_feed_token
from .models import Subject
from .selectors import calendar_domain, get_subject
from .subject_calendar_json import SubjectCalendarSerializer, calendar_json


class SubjectCalendarView(BrandAPIView):
    @extend_schema(
        operation_id="subjects_calendar", tags=["subjects"], summary="A subject's calendar",
        description="Every date the subject keeps, on or after `from` (default: today in the calendar's "
                    "zone), sorted by instant: clock dates (hard or clock), each with its rungs under it, "
                    "and what domain apps add: work starting, renewals, links, grants, Tasks' due dates and holds, "
                    "jobs' deadlines. Dates are local to the calendar's zone; `at` is UTC with Z.",
        parameters=[
            OpenApiParameter("from", OpenApiTypes.DATE, description="YYYY-MM-DD, in the calendar's zone"),
            OpenApiParameter("test_clock", OpenApiTypes.STR, description="tc_…: the test clock's dates"),
        ],
        responses={200: SubjectCalendarSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request, subject_id: str):
        subject = get_subject(self.brand, subject_id)
        domain = calendar_domain(self.brand, subject, request.query_params.get("test_clock"))
        from_date = parse_from(request.query_params.get("from"))
        return Response(calendar_json(subject_calendar(subject, domain=domain, from_date=from_date)))


# -- the feed ---------------------------------------------------------------------------------------------------
def feed_not_found() -> JsonResponse:
    """One body for every feed that does not open: it says nothing about whether the subject exists."""
    response = JsonResponse(error_body("resource_missing", "no such calendar", status=404), status=404)
    response["Cache-Control"] = "no-store"
    return response


def feed_settings() -> dict:
    """The feed's settings (KEEPING_TIME's FEED_STAMP, FEED_CACHE, FEED_CACHE_SECONDS), which the WSGI probe
    (keeping_time/wsgi.py) reads too."""
    return getattr(settings, "KEEPING_TIME", {}) or {}


def feed_cache():
    """The cache built feeds are kept in, per stamp (KEEPING_TIME["FEED_CACHE"], an alias), or None."""
    alias = feed_settings().get("FEED_CACHE", "default")
    return caches[alias] if alias else None


def built_feed(subject: Subject) -> tuple[feed_stamp.Stamp | None, bytes]:
    """The stamp and the body built at it, read in one snapshot (REPEATABLE READ on PostgreSQL), so the
    body kept under a stamp is the body of that stamp, never of a write that landed in between."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # the transaction's first statement, so it takes
            sessions.one_snapshot()
        stamp = feed_stamp.feed_stamp(subject)
        body = feed.build_ics(subject_calendar(subject, everything=True))
    return stamp, body


def _cache_key(subject_id: str, stamp: feed_stamp.Stamp) -> str:
    return f"kt:feed:{subject_id}:{stamp.digest}"


def _last_modified(seen: datetime, now: datetime) -> datetime | None:
    """Never a Last-Modified later than the response (a stamp seen within the second after the last one)."""
    return seen if int(seen.timestamp()) <= int(now.timestamp()) else None


def _feed_response(response: HttpResponse, subject_id: str, tag: str, last_modified: datetime | None):
    response["ETag"] = tag
    if last_modified is not None:
        response["Last-Modified"] = http_date(last_modified.timestamp())
    # The token is in the URL: keep it out of shared caches, referrers and search engines.
    response["Cache-Control"] = "private, no-cache"
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex"
    if response.status_code == 200:
        response["Content-Disposition"] = f'inline; filename="{subject_id}.ics"'
    return response


# The feed only reads: CSRF is off so that a POST gets the 405 below, not Django's HTML CSRF 403.
@method_decorator(csrf_exempt, name="dispatch")
class SubjectFeedView(View):
    """The webcal feed: no API key, the subject's feed token only.

    A conditional request (If-None-Match, If-Modified-Since) is answered from the feed's change stamp
    (calendars/feed_stamp.py) without building the calendar; a 200 at a stamp already built comes from the
    cache. The ETag is the stamp; Last-Modified is when the feed first served it (wall time)."""

    http_method_names = ["get", "head"]

    def http_method_not_allowed(self, request, *args, **kwargs):
        return method_not_allowed(request, ["GET", "HEAD"])

    def get(self, request, subject_id: str):
        token = request.GET.get("token")
        stamped = feed_settings().get("FEED_STAMP", True)
        if stamped:
            quick = self.from_probe(request, subject_id, token)
            if quick is not None:
                return quick
        subject = subject_by_feed_token(subject_id=subject_id, token=token)
        if subject is None:
            return feed_not_found()
        stamp = feed_stamp.feed_stamp(subject) if stamped else None
        if stamp is None:
            return self.built_every_time(request, subject)
        now = wall_now()
        seen = feed_stamp.stamp_seen(subject=subject, stamp=stamp, now=now)
        last_modified = _last_modified(seen, now)
        conditional = get_conditional_response(
            request, etag=stamp.etag, last_modified=int(last_modified.timestamp()) if last_modified else None)
        if conditional is not None:
            return _feed_response(conditional, subject.id, stamp.etag, last_modified)
        cache = feed_cache()
        key = _cache_key(subject.id, stamp)
        body = cache.get(key) if cache is not None else None
        if body is None:
            built, body = built_feed(subject)
            if built is not None and built != stamp:
                # Something changed between the stamp and the build: tag the body with its own stamp, and
                # leave Last-Modified out (it is the older stamp's).
                stamp, last_modified, key = built, None, _cache_key(subject.id, built)
            if cache is not None and built is not None:
                cache.set(key, body, feed_settings().get("FEED_CACHE_SECONDS", 24 * 3600))
        return _feed_response(HttpResponse(body, content_type=feed.CONTENT_TYPE), subject.id, stamp.etag,
                              last_modified)

    def from_probe(self, request, subject_id: str, token: str | None) -> HttpResponse | None:
        """A 304, or a 200 from the cache, in one statement (feed_stamp.probe): the token's lookup and the
        stamp together, nothing loaded or built. None when the probe cannot say, or the stamp is new (its
        Last-Modified is written first), or its body is not in the cache: the ordinary path answers."""
        digest = feed_token_digest(subject_id=subject_id, token=token)
        found = feed_stamp.probe(subject_id=subject_id, digest=digest) if digest is not None else None
        if found is None or found.seen_at is None:
            return None
        stamp, now = found.stamp, wall_now()
        last_modified = _last_modified(found.seen_at, now)
        conditional = get_conditional_response(
            request, etag=stamp.etag, last_modified=int(last_modified.timestamp()) if last_modified else None)
        if conditional is not None:
            return _feed_response(conditional, subject_id, stamp.etag, last_modified)
        cache = feed_cache()
        body = cache.get(_cache_key(subject_id, stamp)) if cache is not None else None
        if body is None:
            return None
        return _feed_response(HttpResponse(body, content_type=feed.CONTENT_TYPE), subject_id, stamp.etag,
                              last_modified)

    def built_every_time(self, request, subject: Subject):
        """No stamp (KEEPING_TIME["FEED_STAMP"] off, or a provider that does not say what it reads): build the
        feed and tag it with the body's hash, as the feed did before it had a stamp."""
        body = feed.build_ics(subject_calendar(subject, everything=True))
        tag = feed.etag(body)
        if feed.etag_matches(request.headers.get("If-None-Match"), tag):
            return _feed_response(HttpResponse(status=304), subject.id, tag, None)
        return _feed_response(HttpResponse(body, content_type=feed.CONTENT_TYPE), subject.id, tag, None)
